"""The trace knob's record: the reconciliation line's figures, a phase's peak interval, the round trip."""

from svmcore.engine.traces import _peak_in, short_path
from svmcore.spec.result import PeakSites, RunSummary, Site, Trace

MiB = 2**20


def _trace(heap_mib, rss_mib, anon_mib):
    return Trace(file="trace.bin", allocations=10, peaks=(PeakSites(None, 1.0, heap_mib * MiB, (Site(heap_mib * MiB),)),),
                 sample_t_s=1.02, rss_bytes=rss_mib * MiB, anon_bytes=anon_mib * MiB,
                 file_backed_bytes=(rss_mib - anon_mib) * MiB)


def test_the_line_splits_the_exact_peak_into_parts_that_add_up():
    line = _trace(120, 200, 150).reconciliation(212.4)
    assert line.startswith("exact peak 212 MiB (VmHWM); at the traced peak (1.02 s, the nearest 50 Hz sample) "
                           "200 MiB resident = 50 MiB file-backed")
    assert "+ 150 MiB anonymous, of which 120 MiB the tracker saw allocated and 30 MiB it did not" in line
    assert line.endswith("the other 12 MiB of the exact peak were held at another moment")


def test_a_heap_above_the_resident_memory_is_named_as_untouched_pages():
    line = _trace(95, 52, 32).reconciliation(52.0)
    assert "the tracker saw 95 MiB allocated, 63 MiB more than is resident (allocated pages never written" in line
    assert "another moment" not in line  # the sample is the peak


def test_an_unreadable_trace_says_why():
    assert Trace(error="memray could not read x").reconciliation(10.0) == "no allocation sites: memray could not read x"


def test_a_phase_peak_is_the_highest_interval_inside_the_phase():
    bounds = [0.0, 1.0, 2.0, 3.0, 4.0]  # intervals [0,1] [1,2] [2,3] [3,4]
    hwm = [5, 90, 10, 7]
    assert _peak_in(hwm, bounds, float("-inf"), None) == 1  # the run's
    assert _peak_in(hwm, bounds, 2.0, 4.0) == 2  # not the 90 of the interval before it
    assert _peak_in(hwm, bounds, 2.2, 2.4) == 2  # shorter than an interval: the one it falls in
    assert _peak_in(hwm, bounds, 9.0, 10.0) is None


def test_the_summary_keeps_its_trace_through_json():
    s = RunSummary(run_id=3, trace=_trace(120, 200, 150))
    back = RunSummary.from_dict(s.to_dict())
    assert back.trace == s.trace and back.trace.at(None).sites[0].bytes == 120 * MiB
    assert RunSummary.problems(s.to_dict()) == []


def test_frames_are_named_as_a_reader_knows_them():
    assert short_path("/x/.venv/lib/python3.11/site-packages/numpy/_core/numeric.py") == "numpy/_core/numeric.py"
    assert short_path("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>"
    assert short_path("/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py") == "importlib/__init__.py"


def test_doctor_shows_the_owning_phases_top_lines():
    import time

    from svmcore.app.doctor import diagnose, text
    from svmcore.spec.config import validate
    from svmcore.spec.status import RunStatus
    from svmcore.store.records import RunRecord

    held = Site(40 * MiB, 1, "load", "svmcore/data/feeds/memory.py", 88, native="array_empty")
    trace = Trace(file="trace.bin", allocations=9, peaks=(
        PeakSites(None, 2.0, 60 * MiB, (held,)), PeakSites("load", 2.0, 60 * MiB, (held,)),
        PeakSites("train", 3.0, 30 * MiB, (Site(9 * MiB, 1, "fit", "svmcore/worker/sgd.py", 5),))))
    spans = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v}
             for n, v in {"imports": 137.0, "load": 240.0, "train": 200.0}.items()]
    s = RunSummary.from_dict({"status": "completed", "phases": spans, "peak_rss_mb": 240.0, "peak_phase": "load",
                              "floor_mb": 137.0, "trace": trace.to_dict()})
    rec = RunRecord(7, time.time(), time.time(), RunStatus.COMPLETED, validate({"rows": 100_000}).to_dict(), s,
                    None, None, None, None, None, None, None, None)
    d = diagnose(rec, 200, None, None)
    assert d["sites"]["phase"] == "load" and d["sites"]["lines"] == [
        "40.0 MiB  svmcore/data/feeds/memory.py:88 in load [array_empty]"]
    assert ("The lines that held the memory at load's traced peak (60.0 MiB traced by memray):\n"
            "  40.0 MiB  svmcore/data/feeds/memory.py:88 in load [array_empty]") in text(d)
    assert "sites" in diagnose(rec, 300, None, None)  # a healthy run's too


def test_the_icicle_sums_each_call_path_and_compare_lines_up_two_runs():
    from ui.sites import compare_rows, icicle_info

    a = Site(30 * MiB, 1, "load", "svmcore/data/feeds/memory.py", 88, stack=("run (t.py:1)", "load (m.py:88)"))
    b = Site(10 * MiB, 1, "fit", "svmcore/worker/sgd.py", 5, stack=("run (t.py:1)", "fit (s.py:5)"))
    info = icicle_info(PeakSites(None, 1.0, 50 * MiB, (a, b)))
    values = dict(zip(info.ids, info.values_mib))
    assert values["the run's peak"] == 40.0 and values["the run's peak\nrun (t.py:1)"] == 40.0
    assert values["the run's peak\nrun (t.py:1)\nload (m.py:88)"] == 30.0
    assert info.parents[info.ids.index("the run's peak\nrun (t.py:1)\nfit (s.py:5)")] == "the run's peak\nrun (t.py:1)"
    before = Trace(peaks=(PeakSites(None, 1.0, 50 * MiB, (a, b)),))
    after = Trace(peaks=(PeakSites(None, 1.0, 12 * MiB, (b,)),))
    rows = compare_rows((1, before), (2, after))
    assert rows[0] == {"line": a.where, "run 1 MiB": 30.0, "run 2 MiB": 0.0, "change MiB": -30.0}
    assert rows[1]["change MiB"] == 0.0


def test_learn_shows_what_tracing_costs_beside_the_monitoring_remedy(tmp_path):
    from svmcore.app.reference import Reference
    from svmcore.app.remedies import remedy
    from tests.helpers import learn_reading

    ref = Reference("trace_overhead", "a machine", "2026-12-06", "python bench/trace_overhead.py", 60.0,
                    {"row": {"verdict": "tracing costs speed and memory: lean 0.56x the rows/s, +15 MiB"},
                     "lessons": ["lean path: tracing trained at 0.56x"]})
    learn = learn_reading(tmp_path, ref)
    found = learn.measured_by_bench(remedy("logging"), see_also=True)
    assert found.caption.endswith("tracing costs speed and memory: lean 0.56x the rows/s, +15 MiB.")
    assert found.lessons == ("lean path: tracing trained at 0.56x",)
    assert learn.measured_by_bench(remedy("batch"), see_also=True) is None
    (tmp_path / "none").mkdir()
    unmeasured = learn_reading(tmp_path / "none", Reference("x", "", None, "python bench/x.py", None, {}))
    assert unmeasured.measured_by_bench(remedy("logging"), see_also=True).caption == (
        "Not measured yet: `python bench/trace_overhead.py`.")


def test_the_memory_model_prices_the_tracker_into_every_phase():
    from svmcore.predict.model import TRACER_MB, Calibration, floor_mb
    from svmcore.predict.floors import floor_for
    from svmcore.spec.config import validate

    cal = Calibration({"linear-svm+base": 126.0}, {}, "f", 0.0, 1, {})
    plain, traced = validate({"rows": 5000}), validate({"rows": 5000, "trace": True})
    assert floor_mb(cal, traced) - floor_mb(cal, plain) == TRACER_MB["base"]
    assert floor_for(traced, None)[0] - floor_for(plain, None)[0] == TRACER_MB["base"]


def test_a_call_path_starts_at_the_run_and_keeps_both_ends_of_a_deep_stack():
    import os

    from svmcore.engine.traces import STACK_FRAMES, _call_path

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    w = os.path.join(root, "svmcore", "worker")
    inner = [(f"f{i}", os.path.join(root, "svmcore", "x.py"), i) for i in range(30)]  # innermost first
    harness = [("_run", f"{w}/main.py", 131), ("traced_run", f"{w}/tracing.py", 21), ("main", f"{w}/main.py", 166),
               ("<module>", f"{w}/__main__.py", 5), ("_run_code", "<frozen runpy>", 88)]
    path = _call_path(inner + harness)
    assert len(path) == STACK_FRAMES and path[0] == "f29 (svmcore/x.py:29)" and path[6] == "…"
    assert path[-1] == "f0 (svmcore/x.py:0)"
    assert _call_path(inner[:3]) == ("f2 (svmcore/x.py:2)", "f1 (svmcore/x.py:1)", "f0 (svmcore/x.py:0)")


def test_the_heap_of_each_interval_is_summed_from_the_records_intervals():
    from types import SimpleNamespace as NS

    from svmcore.engine.traces import heap_by_interval

    a = NS(intervals=[NS(allocated_before_snapshot=1, deallocated_before_snapshot=3, n_bytes=10)])
    b = NS(intervals=[NS(allocated_before_snapshot=2, deallocated_before_snapshot=None, n_bytes=5)])
    assert heap_by_interval([a, b], 4) == [0, 10, 15, 5]
    late = NS(intervals=[NS(allocated_before_snapshot=4, deallocated_before_snapshot=None, n_bytes=40)])
    assert heap_by_interval([a, b, late], 4) == [0, 10, 15, 5, 45]  # past memray's list: a killed writer's
