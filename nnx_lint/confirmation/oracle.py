"""Confirmation: back each diagnostic with a minimal reproduction run under Tree Mode.

For every diagnostic whose rule can build a :class:`~nnx_lint.analysis.rule.Reproduction` from its
facts, the program is run by an oracle — the reference ``tree_runtime`` (default) or the
installed ``flax.nnx`` in Tree Mode — in a worker subprocess with a timeout, and the
diagnostic gets one of:

* ``confirmed`` — Tree Mode raised the predicted error category, or gave the predicted
  silent observation (the evidence says what was seen);
* ``pattern-confirmed`` — the same, by a program that goes beyond the finding's facts
  (:attr:`~nnx_lint.analysis.rule.Reproduction.stand_ins`; the evidence names what stands in);
* ``not-confirmed`` — the reproduction ran as graph mode would: the finding is suspect;
* ``error`` — the reproduction could not be built or run (never silently dropped);
* ``unavailable`` — the rule has no reproduction (its docs page says why).

Identical programs run once per run (deduplicated by text) and their outcomes are cached
in a signed file (see :mod:`nnx_lint.base.cache_store`), keyed by program text, oracle and
oracle version, so a second run costs almost nothing. The worker runs isolated, with a
timeout per program (see :mod:`nnx_lint.confirmation.sandbox`). nnx-lint itself still never imports
jax or flax: only the worker does.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnx_lint.base.cache_store import SignedFile
from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic
from nnx_lint.base.program_text import UnsafeFact, carried_fact_text
from nnx_lint.engine.registry import rule_by_code
from nnx_lint.analysis.rule import Reproduction
from nnx_lint.confirmation.sandbox import run_isolated
from nnx_lint.base.facts import Facts

ORACLES = ("tree_runtime", "flax")


class OracleUnavailable(RuntimeError):
    """jax (or flax, for ``--confirm-with flax``) is not installed."""


@dataclass(frozen=True)
class Confirmation:
    """The verdict on one diagnostic."""

    status: str  # confirmed | pattern-confirmed | not-confirmed | error | unavailable
    evidence: str
    program: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "evidence": self.evidence, "program": self.program}


def check_oracle(oracle: str) -> None:
    """Raise :class:`OracleUnavailable` with what to install when the oracle cannot run."""
    if importlib.util.find_spec("jax") is None:
        raise OracleUnavailable("--confirm needs jax: %s" % runtime_install_hint())
    if oracle == "flax" and importlib.util.find_spec("flax") is None:
        raise OracleUnavailable("--confirm-with flax needs flax: pip install 'flax>=0.12.8'")


def runtime_install_hint() -> str:
    """How to install the ``runtime`` extra (jax and optax), in the form that matches this
    installation (:func:`nnx_lint.base.install_hints.pip_install`)."""
    from nnx_lint.base.install_hints import pip_install

    return pip_install("runtime")


def oracle_version(oracle: str) -> str:
    """Part of the cache key: the oracle's code version."""
    from importlib import metadata

    if oracle in ("flax", "flax-graph"):
        return "flax-" + metadata.version("flax") + "-jax-" + metadata.version("jax")
    import nnx_lint
    from nnx_lint.engine.cache import source_fingerprint

    runtime = Path(nnx_lint.__file__).resolve().parent.parent / "tree_runtime"
    return "tree_runtime-" + source_fingerprint(runtime) + "-jax-" + metadata.version("jax")


def reproduction_for(diagnostic: Diagnostic) -> Reproduction | str:
    """The diagnostic's reproduction, or the reason there is none.

    Every reproduction that is run or shown comes through here, so here it is guarded: a
    fact a builder cannot use safely (:class:`~nnx_lint.base.program_text.UnsafeFact`), or a
    finished program in which fact text appears outside string literals
    (:func:`~nnx_lint.base.program_text.carried_fact_text`), gives no reproduction, never a run.
    """
    rule = rule_by_code(diagnostic.code)
    if rule is None:
        return "this rule has no reproduction builder yet"
    if diagnostic.proof == UNPROVEN:
        return "unproven: the analysis could not resolve the value this finding hangs on, so nothing is known to run"
    if not rule.has_reproduction():
        return rule.no_reproduction_reason or "this rule has no reproduction builder yet"
    try:
        reproduction = rule.reproduce(rule.facts_from(diagnostic.facts))
    except UnsafeFact as exc:
        return "no reproduction: %s" % exc
    except Exception as exc:  # a builder bug is an `error`, never a silent drop
        return "error: the reproduction builder failed: %r" % (exc,)
    if isinstance(reproduction, str):
        return reproduction
    try:
        programs = _programs(reproduction, rule)
    except UnsafeFact as exc:
        return "no reproduction: %s" % exc

    def rebuild(facts: Facts) -> list[str] | None:
        other = rule.reproduce(rule.facts_from(facts))
        return _programs(other, rule) if isinstance(other, Reproduction) else None

    refused = carried_fact_text(programs, diagnostic.facts, rebuild)
    if refused is not None:
        return "no reproduction: refused to run a program built from the analysed code: %s" % refused
    return reproduction


def _programs(reproduction: Reproduction, rule: type) -> list[str]:
    """The program texts of a reproduction: the one that runs, and its control."""
    programs = [reproduction.program(title=program_title(rule))]
    if reproduction.control is not None:
        programs.append(reproduction.program(reproduction.control))
    return programs


def program_title(rule: type) -> str:
    """The first line of a rule's reproduction program (from the rule, never from facts)."""
    return "nnx-lint reproduction of %s (%s)" % (rule.code, rule.symbol)


def judge(reproduction: Reproduction, outcome: dict) -> tuple[str, str]:
    """``(status, evidence)`` for one outcome of a reproduction; a confirmation by a program
    with stand-ins is ``pattern-confirmed``, and its evidence says what stood in."""
    status, evidence = _judge_program(reproduction, outcome)
    if status == "confirmed" and reproduction.stand_ins:
        return "pattern-confirmed", "%s (pattern only: %s)" % (evidence, "; ".join(reproduction.stand_ins))
    return status, evidence


def _judge_program(reproduction: Reproduction, outcome: dict) -> tuple[str, str]:
    status = outcome.get("status")
    if status == "error":
        return "error", outcome.get("message", "the reproduction failed")
    if reproduction.expect_error:
        if status == "raises" and outcome.get("category") == reproduction.expect_error:
            return "confirmed", "%s: %s" % (outcome.get("type"), outcome.get("message"))
        if status == "ok":
            return "not-confirmed", "the reproduction ran without error (returned %r)" % (outcome.get("observation"),)
        return "error", "raised %s (%s), expected %s: %s" % (outcome.get("type"), outcome.get("category"),
                                                              reproduction.expect_error, outcome.get("message"))
    observation = outcome.get("observation")
    if status == "ok" and observation == _plain(reproduction.expect_tree):
        return "confirmed", "observed %r; graph mode gives %r" % (observation, reproduction.expect_graph)
    if status == "ok" and observation == _plain(reproduction.expect_graph):
        return "not-confirmed", "observed %r, which is what graph mode gives" % (observation,)
    if status == "raises":
        return "error", "raised %s: %s" % (outcome.get("type"), outcome.get("message"))
    return "error", "observed %r; expected %r" % (observation, reproduction.expect_tree)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


class OutcomeCache:
    """Outcomes by (program, oracle, oracle version); one signed JSON file, read and written once."""

    def __init__(self, directory: Path | None) -> None:
        self.store_file = SignedFile(directory, "confirmations.json", "confirmations") if directory else None
        self.path = self.store_file.path if self.store_file else None
        payload = self.store_file.load() if self.store_file else None
        self.entries: dict[str, dict] = {
            key: outcome for key, outcome in payload.items()
            if isinstance(outcome, dict) and isinstance(outcome.get("status"), str)
        } if isinstance(payload, dict) else {}
        self.dirty = False

    @staticmethod
    def key(program: str, oracle: str, version: str) -> str:
        return hashlib.sha256("\0".join((oracle, version, program)).encode()).hexdigest()

    def save(self) -> None:
        if self.store_file is not None and self.dirty:
            self.store_file.save(self.entries)


def run_programs(programs: list[str], oracle: str, timeout: float | None = None) -> list[dict]:
    """Run program texts in an isolated worker; ``timeout`` bounds each program, and a timeout or crash is an ``error``."""
    return run_isolated(programs, oracle, timeout) if programs else []


def confirm(
    diagnostics: list[Diagnostic], oracle: str = "tree_runtime", cache_dir: Path | None = None
) -> dict[int, Confirmation]:
    """Confirm every diagnostic; returns ``{index in diagnostics: Confirmation}``."""
    check_oracle(oracle)
    cache = OutcomeCache(cache_dir)
    version = oracle_version(oracle)
    verdicts: dict[int, Confirmation] = {}
    # one run per program text; each diagnostic is judged with its own reproduction (two
    # findings can share a program and differ in what stands in for their facts)
    pending: dict[str, list[tuple[int, Reproduction]]] = {}
    for index, diagnostic in enumerate(diagnostics):
        reproduction = reproduction_for(diagnostic)
        if isinstance(reproduction, str):
            status = "error" if reproduction.startswith("error:") else "unavailable"
            verdicts[index] = Confirmation(status, reproduction)
            continue
        program = reproduction.program(title=program_title(rule_by_code(diagnostic.code)))
        pending.setdefault(program, []).append((index, reproduction))
    uncached = [p for p in pending if OutcomeCache.key(p, oracle, version) not in cache.entries]
    fresh: dict[str, dict] = {}
    for program, outcome in zip(uncached, run_programs(uncached, oracle)):
        fresh[program] = outcome
        if not outcome.get("transient"):  # a timeout or crash says nothing lasting about the program
            cache.entries[OutcomeCache.key(program, oracle, version)] = outcome
            cache.dirty = True
    for program, judged in pending.items():
        outcome = fresh.get(program) or cache.entries.get(OutcomeCache.key(program, oracle, version)) or {
            "status": "error", "message": "the confirmation worker gave no outcome for this reproduction"}
        for index, reproduction in judged:
            status, evidence = judge(reproduction, outcome)
            verdicts[index] = Confirmation(status, evidence, program)
    cache.save()
    return verdicts
