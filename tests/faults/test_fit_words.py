"""Issue 40, "fit, doctor and words": what hostile use found in ``fit``, ``doctor``, ``estimate``
and ``run`` before launch, through the real CLI (``python -m svmcore``)."""

from __future__ import annotations

import json
import random
import socket

import pytest

from svmcore.store.sqlite import Store
from tests.conftest import cli
from tests.faults.test_cli_errors import one_line_error


def sms_text(path, rows: int = 600, seed: int = 0) -> str:
    """SMS-like raw text: ``label<TAB>free text`` lines, labels ham/spam, no file extension."""
    rng = random.Random(seed)
    ham = "ok call you later going home now i will be there in a bit what time are we meeting sorry".split()
    spam = "free win prize claim now cash txt reply stop urgent mobile award guaranteed call offer".split()
    with open(path, "w") as f:
        for _ in range(rows):
            is_spam = rng.random() < 0.15
            words = spam if is_spam else ham
            f.write(("spam" if is_spam else "ham") + "\t" + " ".join(rng.choice(words) for _ in range(rng.randint(4, 20)))
                    + "\n")
    return str(path)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens on it once closed


def test_a_fit_budget_above_the_largest_memory_cap_is_refused_as_the_budget(home):
    proc = cli("fit", "--budget", "1000001", "--rows", "2000", home=home)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "error: argument --budget: a budget is a number of MiB from 16 to 1,000,000" in proc.stderr
    assert "memory_cap_mb" not in proc.stderr


def test_a_closed_scheduler_port_is_one_line_before_launch_and_nothing_is_recorded(home):
    port = _closed_port()
    proc = cli("run", "--rows", "4000", "--epochs", "1", "--workers", "2", "--scheduler", f"tcp://127.0.0.1:{port}",
               home=home, timeout=120)
    one_line_error(proc, f"connection refused: nothing listens on 127.0.0.1:{port}")
    store = Store(home)
    assert store.list_runs() == []
    store.close()
