"""Issue 45: the release path (docs/releasing.md) makes a wheel that works, and an installed wheel's
hints name that wheel, never the unpublished ``nnx-lint`` of a package index.

One wheel is built from the checkout's tracked files, as ``python -m build`` would (pip's PEP 517
build, with build isolation: the build backend comes from the index, as in CI). It is checked for
what a release needs (the entry points, the rule pages the SARIF ``help`` and ``nnx-lint rule``
read), then installed by pip into a bare virtual environment that has astroid and nothing else:
no libcst, so ``--fix`` and the check's summary must say how to install the ``fix`` extra, in the
form that matches this installation (the wheel's own path, from PEP 610's ``direct_url.json``).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from _support import REPO

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

BAD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"


def _tracked_copy(target: Path) -> Path:
    """The checkout's tracked files (as a fresh clone has them) in ``target``."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git to list the tracked files")
    source = _tracked_copy(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = dist.glob("nnx_lint-*.whl")
    return found


def test_the_wheel_holds_the_entry_points_and_the_rule_pages(wheel):
    import nnx_lint
    from nnx_lint.base.links import PAGES_DIR

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
        entry_points = archive.read(info).decode()
        metadata = archive.read(info.replace("entry_points.txt", "METADATA")).decode()
    assert wheel.name.startswith(f"nnx_lint-{nnx_lint.__version__}-")
    assert "nnx-lint = nnx_lint.cli:run" in entry_points
    assert "NNX = nnx_lint.flake8:NNXFlake8Plugin" in entry_points
    shipped = {f"nnx_lint/reporting/pages/{path.relative_to(PAGES_DIR).as_posix()}" for path in PAGES_DIR.rglob("*.md")}
    assert "nnx_lint/reporting/pages/rules/NNX101.md" in shipped and shipped <= names, shipped - names
    assert any(name.startswith("checkers/") for name in names) and "tree_runtime/__init__.py" in names
    assert not any(name.startswith(("tests/", "docs/", "bench/")) for name in names)
    # The long description is the README (what an index shows), declared as Markdown.
    assert "Description-Content-Type: text/markdown" in metadata and "# nnx-lint" in metadata


def _bare_environment(root: Path) -> Path:
    """A virtual environment with astroid (nnx-lint's one requirement) and no other package:
    astroid is linked from this environment's site-packages (no index is asked)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    linked = root / "linked"
    linked.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    import astroid

    (linked / "astroid").symlink_to(Path(astroid.__file__).parent)
    for extra in ("typing_extensions.py", "tomli"):  # astroid's and nnx-lint's on older Pythons
        if (here / extra).exists():
            (linked / extra).symlink_to(here / extra)
    Path(purelib, "astroid_only.pth").write_text(f"{linked}\n")
    return python


def test_an_installed_wheel_names_itself_in_its_install_hints(wheel, tmp_path):
    python = _bare_environment(tmp_path / "venv")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                                "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    script = python.parent / "nnx-lint"
    project = tmp_path / "project"
    project.mkdir()
    (project / "bad.py").write_text(BAD)
    record = json.loads(subprocess.run(
        [str(python), "-c", "from importlib.metadata import distribution as d; "
                            "print(d('nnx-lint').read_text('direct_url.json'))"],
        cwd=project, capture_output=True, text=True, check=True).stdout)
    assert record["url"].endswith(wheel.name) and "archive_info" in record
    hint = f"pip install '{wheel}[fix]'"
    fix = subprocess.run([str(script), "check", "--no-cache", "--fix", "bad.py"], cwd=project, capture_output=True,
                         text=True, timeout=300)
    assert fix.returncode == 2 and f"nnx-lint: error: --fix needs libcst: {hint}" in fix.stderr, fix.stderr
    assert "'nnx-lint[" not in fix.stderr
    check = subprocess.run([str(script), "check", "--no-cache", "bad.py"], cwd=project, capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 1, check.stderr
    assert check.stdout.rstrip("\n").split("\n")[-1] == f"No fix for 1 finding: libcst is not installed ({hint}).", \
        check.stdout
    # The shipped page is what `nnx-lint rule` and SARIF's help read from the installed wheel.
    rule = subprocess.run([str(script), "rule", "NNX201"], cwd=project, capture_output=True, text=True, timeout=120)
    assert rule.returncode == 0 and "state-axes-prefix" in rule.stdout
    sarif = subprocess.run([str(script), "check", "--no-cache", "--output-format", "sarif", "bad.py"], cwd=project,
                           capture_output=True, text=True, timeout=300)
    (descriptor,) = json.loads(sarif.stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert descriptor["help"]["markdown"].startswith("# NNX201") and "file:" not in sarif.stdout


def test_the_publishing_workflow_builds_checks_and_publishes_with_trusted_publishing():
    """docs/publish.yml is not run by the tests (it needs GitHub and PyPI): it is valid YAML whose build
    job builds and checks the sdist and the wheel, and whose publish job uploads them with an OIDC token
    (trusted publishing), no stored secret."""
    yaml = pytest.importorskip("yaml")
    text = (REPO / "docs" / "publish.yml").read_text()
    document = yaml.safe_load(text)
    build, publish = document["jobs"]["build"], document["jobs"]["publish"]
    runs = [step.get("run", "") for step in build["steps"]]
    assert "python -m build" in runs and "python -m twine check --strict dist/*" in runs
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert any(step.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for step in publish["steps"])
    assert "secrets." not in text and "password" not in text
    assert "publish.yml" in (REPO / "docs" / "releasing.md").read_text()
