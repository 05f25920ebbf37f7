"""The one place that says how to install nnx-lint or one of its extras.

nnx-lint is not published on a package index yet, so ``pip install 'nnx-lint[fix]'`` would
install whatever someone else registered under that name. Every hint the tool prints is built
here, in the form that matches how *this* copy was installed, as PEP 610's ``direct_url.json``
in the distribution's metadata records it:

* an editable checkout (``pip install -e DIR``): ``pip install -e 'DIR[fix]'``;
* a local directory or archive (``pip install ./nnx-lint``, a wheel file): the same path, with
  the extra;
* a VCS or remote archive (``pip install 'nnx-lint @ git+URL@COMMIT'``): the same address, with
  the extra;
* no ``direct_url.json`` (installed from an index): the published name, ``nnx-lint[fix]``.

A copy that is not installed at all (a checkout on ``PYTHONPATH``) is named by its checkout.

>>> requirement_for("fix", {"url": "file:///src/nnx-lint", "dir_info": {"editable": True}})
"-e '/src/nnx-lint[fix]'"
>>> requirement_for("gate", {"url": "file:///dist/nnx_lint-0.1.0-py3-none-any.whl", "archive_info": {}})
"'/dist/nnx_lint-0.1.0-py3-none-any.whl[gate]'"
>>> requirement_for("fix", {"url": "https://example.org/nnx-lint.git", "vcs_info": {"vcs": "git", "commit_id": "abc"}})
"'nnx-lint[fix] @ git+https://example.org/nnx-lint.git@abc'"
>>> requirement_for("fix", None)
"'nnx-lint[fix]'"
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

DISTRIBUTION = "nnx-lint"


def _running_checkout() -> Path | None:
    """The source checkout the running nnx-lint is imported from (an editable install, or a
    checkout on ``sys.path``), or None when it runs from an installed copy (site-packages)."""
    checkout = Path(__file__).resolve().parents[2]
    try:
        project = (checkout / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return checkout if f'name = "{DISTRIBUTION}"' in project else None


def _installed_direct_url() -> dict | None:
    """PEP 610's record of an installed ``nnx-lint`` distribution, or None (installed from an
    index, or not installed). Every distribution of the name is asked: a ``*.egg-info`` left in
    a checkout by an editable build can shadow the installed one when the checkout is on
    ``sys.path``."""
    from importlib import metadata

    for distribution in metadata.distributions(name=DISTRIBUTION):
        try:
            record = json.loads(distribution.read_text("direct_url.json") or "null")
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("url"), str):
            return record
    return None


def _local_path(url: str) -> str:
    """The path of a ``file:`` URL. Not ``urllib.request.url2pathname``: importing
    ``urllib.request`` loads http, email and ssl, at lint time (the plugins' eager imports)."""
    from urllib.parse import unquote, urlparse

    path = unquote(urlparse(url).path)
    if os.name == "nt" and len(path) > 2 and path[0] == "/" and path[2] == ":":
        return path[1:]  # file:///C:/x names C:/x
    return path


def _with_extra(target: str, extra: str | None) -> str:
    return f"{target}[{extra}]" if extra else target


def requirement_for(extra: str | None, direct_url: dict | None) -> str:
    """The arguments of ``pip install`` (shell-quoted) for nnx-lint with ``extra``, installed
    as ``direct_url`` (PEP 610's record, or None for an index) says."""
    if not direct_url:
        return shlex.quote(_with_extra(DISTRIBUTION, extra))
    url = direct_url["url"]
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict):
        revision = vcs.get("commit_id") or vcs.get("requested_revision")
        address = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
        return shlex.quote(f"{_with_extra(DISTRIBUTION, extra)} @ {address}")
    if not url.startswith("file:"):
        return shlex.quote(f"{_with_extra(DISTRIBUTION, extra)} @ {url}")
    local = shlex.quote(_with_extra(_local_path(url), extra))
    dir_info = direct_url.get("dir_info")
    if isinstance(dir_info, dict) and dir_info.get("editable"):
        return f"-e {local}"
    return local


def pip_install(extra: str | None = None) -> str:
    """The ``pip install`` command that installs nnx-lint with ``extra`` the way this copy was
    installed (module docstring). The path it may name is this machine's: fine in output, never
    to be written into a committed file."""
    checkout = _running_checkout()
    if checkout is not None:
        record: dict | None = {"url": checkout.as_uri(), "dir_info": {"editable": True}}
    else:
        record = _installed_direct_url()
    return f"pip install {requirement_for(extra, record)}"
