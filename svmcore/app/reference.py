"""Reference measurements committed with the project (``bench/results/``): what the
dashboard shows before this machine has measured anything, always labelled as the
reference machine's, never as this one's."""

from __future__ import annotations

import json
import logging
import os

log = logging.getLogger(__name__)

RESULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "bench", "results")
REMEDIES_FILE = "remedies.json"
ESTIMATE_ACCURACY_FILE = "estimate-accuracy.json"
FIT_FILE = "fit.json"


def _load(name: str, results_dir: str | None) -> dict | None:
    path = os.path.join(results_dir or RESULTS_DIR, name)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # a damaged results file: the page goes on without it
        log.warning("cannot read the reference measurement %s: %s", path, e)
        return None


def bench_reference(name: str, results_dir: str | None = None) -> dict | None:
    """``bench/results/NAME.json`` (made by ``python bench/NAME.py``); None if absent."""
    return _load(name + ".json", results_dir)


def remedies_reference(results_dir: str | None = None) -> dict | None:
    """``bench/results/remedies.json`` (made by ``python bench/remedies.py``): the machine,
    when, and each remedy's before/after per experiment; None if absent."""
    return _load(REMEDIES_FILE, results_dir)


def reference_under_forecasts(results_dir: str | None = None) -> list[float]:
    """measured / predicted - 1 of each config of the reference benchmark of the memory
    model (``bench/results/estimate-accuracy.json``, which stores predicted / measured - 1)."""
    data = _load(ESTIMATE_ACCURACY_FILE, results_dir) or {}
    return [1 / (1 + c["error"]) - 1 for c in data.get("configs", []) if c.get("error") is not None]


def fit_reference(results_dir: str | None = None) -> dict | None:
    """``bench/results/fit.json`` (made by ``python bench/fit.py``): the diagnosis loop from
    starting points that do not fit a budget; None if absent."""
    return _load(FIT_FILE, results_dir)
