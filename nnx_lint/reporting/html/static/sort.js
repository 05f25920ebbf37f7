// Sorts the tables of nnx-lint's report by a click on a column heading. No inline script: the
// pages' Content-Security-Policy allows only this file ('self'). Each cell's data-value is the
// value sorted on (the numbers and names are written by the report, escaped).
"use strict";
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th[data-sort]").forEach(function (heading) {
    var column = heading.cellIndex;
    heading.addEventListener("click", function () {
      var numeric = heading.getAttribute("data-sort") === "number";
      var ascending = heading.getAttribute("aria-sort") === "descending" ||
        (heading.getAttribute("aria-sort") === null && !numeric);
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value"), y = b.cells[column].getAttribute("data-value");
        var order = numeric ? Number(x) - Number(y) : (x < y ? -1 : x > y ? 1 : 0);
        return ascending ? order : -order;
      });
      table.querySelectorAll("th[data-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
      heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
