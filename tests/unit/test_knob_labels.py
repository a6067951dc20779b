"""The sidebar's knob labels (ui.widgets.knob_label): the name, and the unit once."""

from __future__ import annotations

from svmcore.spec.knobs import KNOBS
from ui.widgets import knob_label


def test_a_knob_named_for_its_unit_says_the_unit_once():
    """Issue 43: a label read "set memory cap mb (MB)"."""
    assert knob_label(KNOBS["memory_cap_mb"]) == "memory cap (MB)"
    assert knob_label(KNOBS["cache_size_mb"]) == "cache size (MB)"
    assert knob_label(KNOBS["batch_size"]) == "batch size (rows)"
    assert knob_label(KNOBS["rows"]) == "rows" and knob_label(KNOBS["threads"]) == "threads"
    assert knob_label(KNOBS["hashing_bits"]) == "hashing bits"
    assert all(" mb " not in knob_label(k) + " " for k in KNOBS.values())
