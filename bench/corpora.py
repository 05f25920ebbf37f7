"""Lint the real projects this repository is judged on, and compare two runs finding by finding.

    python bench/corpora.py list
    python bench/corpora.py run CORPORA_DIR OUT_DIR [--checkout OTHER] [--strict] [--jobs N]
    python bench/corpora.py compare BEFORE_DIR AFTER_DIR [--bytes]

``CORPORA_DIR`` holds one checkout per project, named ``owner+name`` (``google+flax``), at the commits
:data:`CORPORA` lists (``list`` prints them; fetch each at that commit, without its git history if
you like: only the files are read). ``run`` lints each present checkout with
``nnx-lint check . --no-cache --output-format json --exit-zero`` from its own directory, with this
checkout of nnx-lint or ``--checkout OTHER`` first on ``PYTHONPATH`` (a ``git worktree`` of the
commit before a change), and writes ``OUT_DIR/<owner+name>.json``. ``compare`` prints, per project,
the number of findings in each run and each finding only one of them has (code, file, line, message);
``--bytes`` also says whether the two JSON outputs are the same bytes, once the rule pages' install
directory (part of each finding's ``url``) is taken out.

Run ``run`` twice (before and after a change) in one session, on the same machine, and compare: that
is how the notes' "diagnostics unchanged on the corpora" is measured. Nothing here imports nnx-lint:
each run is a subprocess, so the two checkouts never mix.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The projects and the commits the notes measure (``owner/name``: abbreviated commit).
CORPORA = {
    "google/flax": "18f8f311c",
    "google/tunix": "c7d8950f",
    "AI-Hypercomputer/maxtext": "e591f30cb",
    "jax-ml/bonsai": "3628425",
    "erfanzar/EasyDeL": "090a03b2",
    "emiwar/nnx-ppo": "a652e33",
    "avitai/datarax": "5c72c0c",
    "google/qwix": "aa623ac",
    "Physical-Intelligence/openpi": "15a9616",
    "avitai/artifex": "5fce040",
    "vllm-project/tpu-inference": "b8692ff01",
    "google-research/neuralgcm": "de57de3",
}

#: The install directory inside a finding's rule page URL (``file:///.../nnx_lint/reporting/pages/...``).
_PAGE_URL = re.compile(r'file://[^"]*?/nnx_lint/reporting/pages/')


def directory_name(project: str) -> str:
    """``google/flax`` -> ``google+flax``: the checkout's directory under ``CORPORA_DIR``."""
    return project.replace("/", "+")


def run(corpora: Path, out: Path, checkout: Path | None, strict: bool, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    source = (checkout or REPO).resolve()
    environment = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, "-c", "import sys; from nnx_lint.cli import main; sys.exit(main())", "check", ".",
               "--no-cache", "--output-format", "json", "--exit-zero", "-j", str(jobs)]
    if strict:
        command.append("--strict")
    missing = 0
    for project in CORPORA:
        directory = corpora / directory_name(project)
        if not directory.is_dir():
            print(f"{project}: no checkout at {directory_name(project)}/ (skipped)")
            missing += 1
            continue
        done = subprocess.run(command, cwd=directory, env=environment, capture_output=True, text=True)
        (out / f"{directory_name(project)}.json").write_text(done.stdout)
        if done.returncode != 0:
            print(f"{project}: nnx-lint exited {done.returncode}: {done.stderr.strip()[-300:]}")
            continue
        print(f"{project}: {len(json.loads(done.stdout))} findings")
    return 1 if missing == len(CORPORA) else 0


def _findings(path: Path) -> Counter:
    """Each finding as (code, file, line, message), counted (a notebook's cells may repeat one)."""
    return Counter((d["code"], d["filename"], d["location"]["row"], d["message"]) for d in json.loads(path.read_text()))


def compare(before: Path, after: Path, check_bytes: bool) -> int:
    changed = 0
    for project in CORPORA:
        name = f"{directory_name(project)}.json"
        if not (before / name).is_file() or not (after / name).is_file():
            continue
        old, new = _findings(before / name), _findings(after / name)
        line = f"{project}: {old.total()} -> {new.total()}"
        if check_bytes:
            same = _PAGE_URL.sub("", (before / name).read_text()) == _PAGE_URL.sub("", (after / name).read_text())
            line += ", same bytes" if same else ", different bytes"
        print(line)
        for sign, findings in (("-", old - new), ("+", new - old)):
            for (code, filename, row, message), times in sorted(findings.items()):
                print(f"  {sign} {code} {filename}:{row} {message}" + (f" (x{times})" if times > 1 else ""))
            changed += findings.total()
    return 0 if not changed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the projects and their commits")
    running = commands.add_parser("run", help="lint each project into OUT_DIR")
    running.add_argument("corpora", type=Path)
    running.add_argument("out", type=Path)
    running.add_argument("--checkout", type=Path, help="lint with this checkout of nnx-lint instead")
    running.add_argument("--strict", action="store_true", help="audit mode (unproven findings too)")
    running.add_argument("--jobs", type=int, default=2)
    comparing = commands.add_parser("compare", help="the findings only one of two runs has")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    comparing.add_argument("--bytes", action="store_true", help="also compare the JSON bytes")
    args = parser.parse_args(argv)
    if args.command == "list":
        for project, commit in CORPORA.items():
            print(f"{project} {commit}  ({directory_name(project)}/)")
        return 0
    if args.command == "run":
        return run(args.corpora, args.out, args.checkout, args.strict, args.jobs)
    return compare(args.before, args.after, args.bytes)


if __name__ == "__main__":
    sys.exit(main())
