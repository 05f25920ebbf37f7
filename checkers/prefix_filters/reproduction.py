"""Reproduction builders and program pieces shared by several prefix filters rules."""
from __future__ import annotations


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"
