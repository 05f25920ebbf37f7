"""The pre-filter decides on the text Python reads, not on raw bytes (nnx_lint/analysis/prefilter.py)."""
from __future__ import annotations

import pytest

from nnx_lint.analysis.prefilter import mentions_nnx


@pytest.mark.parametrize("data", [
    "from flax import nn\uff58".encode(),                                    # NFKC
    b"# coding: unicode_escape\nfrom flax import \\x6e\\x6ex\n",             # a codec
    b"# -*- coding: utf-7 -*-\nfrom flax import +AG4-nx\n",
])
def test_text_is_read_as_python_reads_it(data):
    assert mentions_nnx(data)


def test_notebook_json_escapes_are_decoded():
    assert mentions_nnx(b'{"cells": [{"source": ["from flax import \\u006enx"]}]}', notebook=True)
    assert not mentions_nnx(b'{"cells": [{"source": ["import os"]}]}', notebook=True)


@pytest.mark.parametrize("data", [
    b"import os\nprint(os.sep)\n",
    b"\xff\xfe\x00 garbage that no codec reads",             # Python cannot run it either
    "# coding: latin-1\nname = 'caf\xe9'\n".encode("latin-1"),
    "\uff4e\uff4e = 1  # NFKC gives nn only\n".encode(),
])
def test_files_that_cannot_name_nnx_are_skipped(data):
    assert not mentions_nnx(data)
