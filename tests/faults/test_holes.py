"""Issue 18's "other holes", each through the real CLI (`python -m svmcore`): what a
new user or hostile input found, and what must hold now."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli
from tests.faults.test_cli_errors import one_line_error


def test_float16_stream_run_completes_shuffled_over_the_spill(home):
    """`run --rows 3000 --precision float16 --mode stream` ended failed: scipy's
    csr_row_index cannot index float16 rows (a shuffled pass over the spill)."""
    proc = cli("run", "--rows", "3000", "--epochs", "2", "--precision", "float16", "--mode", "stream", "--json",
               home=home, check=0)
    summary = json.loads(proc.stdout)
    assert summary["status"] == "completed" and summary["accuracy"] is not None, summary
