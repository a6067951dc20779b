"""Records that read as mappings (svmcore.spec.mapping), as the forecasts hand them to the UI."""

from __future__ import annotations

import json

import pytest

from svmcore.app.forecasts import DataSize


def test_a_mapping_record_reads_as_its_fields_and_nothing_else():
    size = DataSize(rows=10, features=3, nnz=7, exact=True, bytes=100, sizes={"float64": {"sparse": 100}},
                    batch_bytes=10, resident=False)
    assert size["rows"] == size.rows == 10 and size.get("resident") is False and size.get("nope") is None
    assert dict(size) == size.to_dict() and len(size) == 8 and json.dumps(size.to_dict())
    with pytest.raises(KeyError):
        size["to_dict"]
    with pytest.raises(Exception):
        size.rows = 11  # frozen
