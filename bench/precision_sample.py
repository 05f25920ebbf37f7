"""Precision of the default findings on the real projects, from a random sample run in both modes.

    python bench/precision_sample.py draw RUN_DIR [--seed 43] [--size 32] [--at-least NNX301=3 ...]
    python bench/precision_sample.py check [PROGRAM ...] [--timeout S]

``draw`` reads a ``bench/corpora.py run`` directory (one JSON per project, default rules) and prints a
seeded random sample of its findings: ``--size`` findings drawn uniformly from all of them, then, for each
``--at-least CODE=N``, findings of that code drawn from the rest until the sample holds N of them (or all
there are). The findings are ordered (project, file, line, column, code) before drawing, so the same run
and seed give the same sample on any machine.

Each sampled finding was read in its project and reduced by hand to a small program in
``bench/precision/`` that keeps the flagged pattern (the same flax calls, the same object flow). The
program's header says what it stands for and what it did::

    # finding: NNX301 google+flax examples/gemma/sampler.py:120
    # message: ...
    # verdict: true
    # graph: prints 3
    # tree: raises ValueError: Duplicate

``check`` runs every program (or those named) with this interpreter in graph mode
(``NNX_GRAPH_MODE=true NNX_GRAPH_UPDATES=true``) and in Tree Mode (both ``false``) and compares what it
saw with the header. What a run shows is ``prints <its last line of output>`` or, when it fails,
``raises <the line of the traceback that names the exception>``; the header's text must be a prefix of it (so a
recorded ``raises ValueError: Duplicate`` leaves out the rest of the message). The verdict must follow
from the two: ``true``, ``latent`` and ``wrong-reason`` need the modes to differ, ``false`` needs them to
agree. Exits 1 when a program disagrees with its header.

This EXECUTES the programs (they import flax and jax): measurement tooling, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "precision"

#: The environment of each mode (flax reads its configuration flags from these variables).
MODES = {
    "graph": {"NNX_GRAPH_MODE": "true", "NNX_GRAPH_UPDATES": "true"},
    "tree": {"NNX_GRAPH_MODE": "false", "NNX_GRAPH_UPDATES": "false"},
}

#: Verdicts, and whether each one needs the two modes to behave differently.
VERDICTS = {"true": True, "latent": True, "wrong-reason": True, "false": False}

_HEADER = re.compile(r"^# (finding|message|verdict|graph|tree|why): ?(.*)$")
_ADDRESS = re.compile(r"0x[0-9a-f]+")
#: The line of a traceback that names the exception (JAX prints a note of its own after it).
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def findings(run_dir: Path) -> list[dict]:
    """Every finding of the run, each with its project, in a machine-independent order."""
    found = []
    for path in sorted(run_dir.glob("*.json")):
        for diagnostic in json.loads(path.read_text() or "[]"):
            found.append({"project": path.stem, "code": diagnostic["code"], "file": diagnostic["filename"],
                          "line": diagnostic["location"]["row"], "column": diagnostic["location"]["column"],
                          "message": diagnostic["message"]})
    return sorted(found, key=lambda f: (f["project"], f["file"], f["line"], f["column"], f["code"]))


def draw(run_dir: Path, seed: int, size: int, at_least: dict[str, int]) -> list[dict]:
    """``size`` findings drawn uniformly, then topped up per code to ``at_least`` (marked ``stratum``)."""
    pool = findings(run_dir)
    chooser = random.Random(seed)
    sample = [dict(f, stratum="uniform") for f in chooser.sample(pool, min(size, len(pool)))]
    for code, wanted in sorted(at_least.items()):
        taken = {(f["project"], f["file"], f["line"], f["column"], f["code"]) for f in sample}
        rest = [f for f in pool
                if f["code"] == code and (f["project"], f["file"], f["line"], f["column"], code) not in taken]
        have = sum(1 for f in sample if f["code"] == code)
        for extra in chooser.sample(rest, max(0, min(wanted - have, len(rest)))):
            sample.append(dict(extra, stratum=f"top-up {code}"))
    return sample


def header(program: Path) -> dict[str, str]:
    """The ``# key: value`` lines at the top of a program."""
    fields = {}
    for line in program.read_text().splitlines():
        match = _HEADER.match(line)
        if not match:
            if fields and not line.startswith("#"):
                break
            continue
        fields.setdefault(match.group(1), match.group(2).strip())
    return fields


def observe(program: Path, mode: str, timeout: float) -> str:
    """What the program shows in one mode: ``prints <last line>`` or ``raises <exception line>``."""
    environment = {**os.environ, **MODES[mode], "JAX_PLATFORMS": "cpu", "PYTHONHASHSEED": "0"}
    try:
        done = subprocess.run([sys.executable, str(program)], env=environment, capture_output=True, text=True,
                              timeout=timeout, cwd=program.parent)
    except subprocess.TimeoutExpired:
        return "timeout"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if _EXCEPTION.match(line)]
        return "raises " + _ADDRESS.sub("0x", lines[-1] if lines else f"exit {done.returncode}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return "prints " + _ADDRESS.sub("0x", lines[-1] if lines else "")


def check(programs: list[Path], timeout: float) -> int:
    disagreements = 0
    verdicts: Counter = Counter()
    for program in programs:
        fields = header(program)
        seen = {mode: observe(program, mode, timeout) for mode in MODES}
        problems = [f"{mode}: header says {fields.get(mode)!r}, saw {seen[mode]!r}"
                    for mode in MODES if not seen[mode].startswith(fields.get(mode) or "\0")]
        verdict = fields.get("verdict", "")
        if verdict not in VERDICTS:
            problems.append(f"unknown verdict {verdict!r}")
        elif VERDICTS[verdict] != (seen["graph"] != seen["tree"]):
            problems.append(f"verdict {verdict} but the modes {'agree' if seen['graph'] == seen['tree'] else 'differ'}")
        verdicts[verdict] += 1
        status = "ok" if not problems else "DISAGREES"
        print(f"{status:9} {verdict:12} {program.name}  [{fields.get('finding', '?')}]", flush=True)
        for problem in problems:
            print(f"          {problem}", flush=True)
        disagreements += bool(problems)
    print(f"{len(programs)} programs: " + ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
          + f"; {disagreements} disagree with their header")
    return 1 if disagreements else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    drawing = commands.add_parser("draw", help="print a seeded random sample of a corpora run's findings")
    drawing.add_argument("run_dir", type=Path)
    drawing.add_argument("--seed", type=int, default=43)
    drawing.add_argument("--size", type=int, default=32)
    drawing.add_argument("--at-least", action="append", default=[], metavar="CODE=N")
    drawing.add_argument("--json", action="store_true", help="one JSON object per line")
    checking = commands.add_parser("check", help="run the programs in both modes against their headers")
    checking.add_argument("programs", nargs="*", type=Path)
    checking.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    if args.command == "draw":
        at_least = {code: int(n) for code, n in (item.split("=") for item in args.at_least)}
        for number, finding in enumerate(draw(args.run_dir, args.seed, args.size, at_least), 1):
            if args.json:
                print(json.dumps(finding))
            else:
                print(f"{number:2} {finding['code']} {finding['project']} {finding['file']}:{finding['line']}"
                      f"  ({finding['stratum']})  {finding['message']}")
        return 0
    programs = args.programs or sorted(PROGRAMS.glob("*.py"))
    return check(programs, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
