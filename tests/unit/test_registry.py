"""The live-run table: a run is known by its store and its id."""

from types import SimpleNamespace

from svmcore.engine import registry


def _run(home, run_id):
    return SimpleNamespace(store=SimpleNamespace(home=home), run_id=run_id)


def test_runs_of_two_stores_with_the_same_id_are_two_runs(tmp_path):
    # the server's calibration runs (ids 1-45 in a folder of their own) were found as the history's
    # run of the same id: run 23, an oom run of 1.6 s, was drawn with a calibration run's 28 s curve
    history, calibration = str(tmp_path / "home"), str(tmp_path / "home" / "calibration")
    mine, theirs = _run(history, 23), _run(calibration, 23)
    registry.register(mine)
    registry.register(theirs)
    try:
        assert registry.get_active(history, 23) is mine and registry.get_active(calibration, 23) is theirs
        registry.unregister(theirs)  # the calibration run ending leaves the history's run live
        assert registry.get_active(history, 23) is mine and registry.get_active(calibration, 23) is None
        assert registry.is_watched(history, 23) and not registry.is_watched(calibration, 23)
    finally:
        registry.unregister(mine)
        registry.unregister(theirs)
    assert registry.get_active(history, 23) is None
