"""Reproduction builders and program pieces shared by several prefix filters rules."""
from __future__ import annotations


def dedented(code: str) -> str:
    """``code`` dedented, without surrounding blank lines, ending in one newline."""
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"
