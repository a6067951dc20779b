"""Runs stored with a knob value since retired (parser and solver ``numba``, retired for the native
ones: the same output) still list, show and compare; a new config asking for it is refused, naming
the replacement, through the knob registry (``Knob.retired``), wherever it comes from."""

from __future__ import annotations

import json

import pytest

from svmcore.app.lab import Lab
from svmcore.cli import main
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store

OLD = {**validate({}).to_dict(), "parser": "numba", "solver": "numba", "mode": "stream"}


@pytest.fixture
def home(tmp_path):
    """A store holding a run of the numba path, as the code before its retirement wrote it, and a native one."""
    store = Store(str(tmp_path))
    for config, peak in ((OLD, 232.5), ({**OLD, "parser": "native", "solver": "native"}, 140.0)):
        rid = store.create_run(config)
        store.finish_run(rid, RunStatus.COMPLETED, RunSummary(peak_rss_mb=peak, accuracy=0.83, samples_per_s=9e4,
                                                              wall_s=2.0))
    store.close()
    return str(tmp_path)


def test_a_stored_numba_run_lists_shows_and_compares(home, capsys):
    assert main(["--home", home, "runs", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["peak_rss_mb"] for r in listed] == [140.0, 232.5] and not any(r["damage"] for r in listed)
    assert main(["--home", home, "runs", "show", "1"]) == 0
    shown = capsys.readouterr().out
    assert "parser=numba" in shown and "solver=numba" in shown
    assert main(["--home", home, "runs", "show", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["solver"] == "numba"
    lab = Lab(home)
    assert {r["solver"] for r in lab.runs.history()} == {"numba", "native"}
    assert lab.runs.view(1).config["parser"] == "numba"
    cmp = lab.runs.compare([1, 2], 1)
    assert "parser native" in lab.runs.changes_against(1, [2])[2] and cmp is not None


@pytest.mark.parametrize("where", ["validate", "cli", "sweep", "fit"])
def test_a_new_config_asking_for_numba_is_refused_naming_native(home, where, capsys):
    said = "'numba' is retired: use native (same output, faster)"
    if where == "validate":
        with pytest.raises(ConfigError, match="is retired") as e:
            validate(solver="numba")
        assert e.value.fix == {"solver": "native"} and said in str(e.value)
    elif where == "cli":
        assert main(["--home", home, "estimate", "--parser", "numba"]) != 0
        assert f"parser: {said}" in capsys.readouterr().err
    elif where == "sweep":
        from svmcore.sweeps.grid import expand

        points = expand({}, {"solver": ["native", "numba"]})
        assert [p.error is None for p in points] == [True, False] and said in points[1].error
    else:
        with pytest.raises(ConfigError, match="is retired"):
            Lab(home).fits.start({"solver": "numba"}, 300)
