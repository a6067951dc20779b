"""The measured reference: what the dashboard shows before this machine has measured
anything, always labelled as the reference machine's. It is package data
(``reference_data/``, one JSON file per measurement, all in one format), written by the
benchmarks in ``bench/`` and read here only.

A file is a ``Reference``: what was measured (``name``), the machine's description,
the date, the command that measures it again, the seconds its runs took, and its
``figures``, as each name defines them:

- ``remedies``: {remedy: {experiment: {"before": side, "after": side, "machine",
  "measured"}}}, each side as ``remedy_results.side`` makes it from this machine's runs
- ``fit``: the diagnosis loop from starting points that do not fit a budget (``points``,
  ``fitted``, ``mean_runs``, ``most_runs``, ``median_given_up``, ``worst_given_up``)
- ``estimate-accuracy``: {"under_forecasts": [measured / predicted - 1, ...]}
- a remedy measured by its own benchmark (``serve``, ``memory-pool``, ``distill``):
  {"row": {claims-table column: text}, "lessons": [sentence, ...]}
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from importlib import resources

log = logging.getLogger(__name__)

PACKAGE = "svmcore.app.reference_data"


@dataclass(frozen=True)
class Reference:
    name: str
    machine: str  # its description: CPU, cores, memory, kernel, library versions
    measured: str | None  # ISO date (None: the benchmark did not record it)
    command: str
    seconds: float | None
    figures: dict


def read(name: str, folder: str | None = None) -> Reference | None:
    """``NAME.json`` of the package's reference data (or of ``folder``); None if absent.
    A damaged file is logged and read as absent: the pages go on without it."""
    try:
        if folder:
            with open(os.path.join(folder, f"{name}.json")) as f:
                text = f.read()
        else:
            text = resources.files(PACKAGE).joinpath(f"{name}.json").read_text()
        return Reference(**json.loads(text))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        log.warning("cannot read the reference measurement %s: %s", name, e)
        return None


def remedies_reference(folder: str | None = None) -> dict | None:
    """Each remedy's measured before/after pairs: {remedy: {experiment: pair}}; None if absent."""
    ref = read("remedies", folder)
    return ref.figures if ref else None


def reference_under_forecasts(folder: str | None = None) -> list[float]:
    """measured / predicted - 1 of each config of the reference benchmark of the memory model."""
    ref = read("estimate-accuracy", folder)
    return list(ref.figures["under_forecasts"]) if ref else []
