"""spec.json_values: the one rule for whether decoded JSON fits a field's annotation, and a
decode that raises nothing but JSONValueError."""

from __future__ import annotations

import pytest

from svmcore.spec.json_values import JSONValueError, fits, loads


@pytest.mark.parametrize(("value", "hint", "ok"), [
    (1, float, True), (1.5, int, True), (True, float, False), (True, bool, True), (None, float | None, True),
    ("1", float | None, False), ([1], tuple, True), ({}, dict[str, int], True), ([], dict, False),
    ("x", str | None, True), (None, str, False),
])
def test_fits_follows_json_not_python(value, hint, ok):
    assert fits(value, hint) is ok


@pytest.mark.parametrize(("text", "said"), [
    ("[1, 2]", "a JSON array, not a JSON object"), ('{"a": ', "not JSON ("), ("[" * 100_000, "nested too deeply"),
    (b"\xff{}", "not JSON ("),
])
def test_loads_raises_one_error_naming_the_problem(text, said):
    with pytest.raises(JSONValueError) as e:
        loads(text)
    assert said in str(e.value)
