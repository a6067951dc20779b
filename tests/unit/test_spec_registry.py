"""The registry of models, solvers, modes and parsers (svmcore.spec.registry): every value has
its entry, every name an entry gives resolves, nothing outside spec compares a name to a
string, and the float32 model state goes through it (validation, the worker's factory, the
memory model)."""

from __future__ import annotations

import ast
import os

import pytest

from svmcore.predict.model import Shape, parts
from svmcore.spec import registry
from svmcore.spec.choices import Mode, Model, Parser, Solver
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME_KNOBS = ("model", "mode", "solver", "parser", "representation")


def test_every_value_has_its_entry():
    for enum, entries in ((Model, registry.MODELS), (Solver, registry.SOLVERS), (Mode, registry.MODES),
                          (Parser, registry.PARSERS)):
        assert list(entries) == list(enum) and all(e.name is k for k, e in entries.items())


def test_every_name_an_entry_gives_resolves():
    for e in registry.MODELS.values():
        assert callable(registry.load(e.factory))
        pricing = registry.load(e.pricing)
        assert callable(pricing.parts) and callable(pricing.work)
    for e in registry.SOLVERS.values():
        assert callable(registry.load(e.factory).from_config)
        assert e.warm_up is None or callable(registry.load(e.warm_up))
    for e in registry.PARSERS.values():
        assert e.warm_up is None or callable(registry.load(e.warm_up))


def _literal_comparisons(path: str, names: set[str]) -> list[int]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for x in (n.left, *n.comparators):
                values = [x] if isinstance(x, ast.Constant) else getattr(x, "elts", []) \
                    if isinstance(x, (ast.Tuple, ast.List, ast.Set)) else []
                if any(isinstance(v, ast.Constant) and v.value in names for v in values):
                    lines.append(n.lineno)
    return lines


def test_no_model_mode_solver_or_parser_name_is_compared_to_a_string_outside_spec():
    """What differs by name lives on the entry: code outside spec reads the entry (or, at most,
    compares members), never ``cfg.mode == "memory"``."""
    names = {str(c) for k in NAME_KNOBS for c in KNOBS[k].choices}
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "svmcore")):
        if os.sep + "spec" in folder[len(ROOT):] or "__pycache__" in folder:
            continue
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found += [f"{os.path.relpath(path, ROOT)}:{n}" for n in _literal_comparisons(path, names)]
    assert found == []


@pytest.mark.parametrize("solver", [s for s in Solver if s not in registry.FLOAT32_STATE_SOLVERS])
def test_float32_state_is_refused_with_the_solver_s_reason(solver):
    with pytest.raises(ConfigError, match="model_state") as e:
        validate(solver=solver, model_state="float32")
    assert registry.SOLVERS[solver].float32_state in str(e.value)
    assert e.value.fix == {"model_state": "float64"}


def test_float32_state_is_the_native_solver_s_and_off_by_default():
    assert set(registry.FLOAT32_STATE_SOLVERS) == {Solver.NATIVE}
    assert validate().model_state == "float64"
    assert validate(solver="native", model_state="float32", average=False).model_state == "float32"
    assert validate(model="mlp", model_state="float32").model_state == "float32"  # no linear model: not read


@pytest.mark.parametrize("bits", [20, 24])
def test_the_memory_model_prices_float32_state_at_half_the_weights(bits):
    """The weights and their average: 16 bytes a column in float64, 8 in float32 (2^20 columns:
    16 MiB and 8 MiB; 2^24: 256 and 128), for the native solver."""
    shape = Shape(100_000, 80_000, 20_000, 1 << bits, 50.0, 2, False)
    for solver in registry.FLOAT32_STATE_SOLVERS:
        wide = parts(validate(solver=solver, features=1 << bits), shape)
        narrow = parts(validate(solver=solver, features=1 << bits, model_state="float32"), shape)
        assert wide["model_linear_compiled"] == 16 << bits and narrow["model_linear_compiled"] == 8 << bits
        # the export adds one float32 copy of the coefficients either way (the state is folded in place)
        assert wide["model_export"] == narrow["model_export"] == 4 << bits


@pytest.mark.parametrize("knob", ["parser", "solver"])
def test_numba_is_retired_and_a_new_config_is_refused_it_naming_native(knob):
    """numba's parser and SGD were twins of the native ones: a stored run keeps the value, a new
    config (a launch, a flag, a sweep's grid, fit, recommend: all through ``validate``) is refused it."""
    with pytest.raises(ConfigError) as e:
        validate({knob: "numba"})
    assert e.value.knob == knob and e.value.fix == {knob: "native"}
    assert "use native (same output, faster)" in str(e.value)
    assert "numba" not in KNOBS[knob].choices
