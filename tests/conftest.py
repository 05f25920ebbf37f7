"""Shared test setup: every test gets its own user cache directory."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_user_cache(tmp_path_factory, monkeypatch):
    """Point nnx-lint's user cache (signed caches and their key) at a fresh directory, never ~/.cache."""
    directory = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory / "nnx-lint"
