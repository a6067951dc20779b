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
