"""The measured reference is package data: one format, one reader, written by bench/.
The library reaches nothing outside its package; each file in it is what its benchmark
writes from the results committed in bench/results/; and Learn says in sentences what
the reference holds (pure, compared with ==)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re

import pytest

from bench import distill, estimate_accuracy, fit, memory_pool, serve, trace_overhead
from bench.remedies import REFERENCE_DATA, write_reference
from svmcore.app.learn import Learn, SourcesNote, loop_note, queued_note
from svmcore.app.reference import Reference, read, reference_under_forecasts, remedies_reference
from svmcore.app.remedies import remedy
from tests.helpers import learn_reading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "bench", "results")
# the same rule as the shape check: a string naming bench/ (or bench/results) as a path
BENCH_PATH = re.compile(r"""["'](\.\./)*bench(/results)?["']|parents\[\d\]\s*/\s*["']bench""")


def test_the_library_names_no_path_into_the_repository():
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "svmcore")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if BENCH_PATH.search(f.read()):
                        found.append(os.path.relpath(path, ROOT))
    assert found == []


def test_the_reference_data_is_a_package_folder_of_one_format():
    names = sorted(n[:-5] for n in os.listdir(REFERENCE_DATA) if n.endswith(".json"))
    assert names == ["distill", "estimate-accuracy", "fit", "memory_pool", "remedies", "serve", "trace_overhead"]
    assert os.path.exists(os.path.join(REFERENCE_DATA, "__init__.py"))
    for name in names:
        ref = read(name)
        assert isinstance(ref, Reference) and ref.name == name and ref.command.startswith("python bench/"), name


@pytest.mark.parametrize("bench, stem", [(serve, "serve"), (memory_pool, "memory-pool"), (distill, "distill"),
                                         (fit, "fit"), (estimate_accuracy, "estimate-accuracy"),
                                         (trace_overhead, "trace-overhead")])
def test_each_file_is_what_its_benchmark_writes_from_its_committed_results(bench, stem):
    with open(os.path.join(RESULTS, f"{stem}.json")) as f:
        made = bench.reference(json.load(f))
    assert read(made.name) == Reference(**json.loads(json.dumps(dataclasses.asdict(made))))


def test_a_written_reference_reads_back_equal(tmp_path):
    ref = Reference("serve", "a machine", "2026-12-06", "python bench/serve.py", 12.0,
                    {"row": {"verdict": "v"}, "lessons": ["one"]})
    write_reference(ref, str(tmp_path))
    assert read("serve", str(tmp_path)) == ref


def test_an_absent_file_is_none_and_a_damaged_one_is_said_and_read_as_absent(tmp_path, caplog):
    assert read("fit", str(tmp_path)) is None
    assert remedies_reference(str(tmp_path)) is None and reference_under_forecasts(str(tmp_path)) == []
    (tmp_path / "fit.json").write_text('{"name": "fit", "machine": "m"')
    (tmp_path / "remedies.json").write_text('{"name": "remedies", "unknown": 1}')
    with caplog.at_level(logging.WARNING, logger="svmcore.app.reference"):
        assert read("fit", str(tmp_path)) is None and read("remedies", str(tmp_path)) is None
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "cannot read the reference measurement fit", "cannot read the reference measurement remedies"]


def test_the_accessors_give_the_figures():
    assert remedies_reference() == read("remedies").figures and "batch" in remedies_reference()
    assert reference_under_forecasts() == read("estimate-accuracy").figures["under_forecasts"]
    assert len(reference_under_forecasts()) == 36


# ---------------------------------------------------------------- what Learn says of it

def _pair(desc: str | None = None, when: str | None = None, sps: float = 100_000.0, peak: float = 240.0) -> dict:
    side = {"status": "completed", "config": {}, "peak_mb": peak, "phases": {"load": peak}, "samples_per_s": sps}
    return {"before": side, "after": dict(side, config={"batch_size": 256}),
            **({"machine": desc, "measured": when} if desc else {})}


REMEDIES = Reference("remedies", "AMD EPYC, 2 CPUs", "2026-12-05", "python bench/remedies.py", 600,
                     {"batch": {"default": _pair(sps=100_000.0, peak=240.0)},
                      "gc": {"default": _pair("Intel Xeon, 2 CPUs", "2026-12-01", 250_000.0, 242.5)}})


class _Result:
    def __init__(self, source):
        self.source = source


def test_learn_says_where_its_numbers_come_from(tmp_path):
    learn = learn_reading(tmp_path, REMEDIES)
    ref, here = _Result("reference"), _Result("this machine")
    assert learn.sources_note([ref, here, _Result(None)]) == SourcesNote(
        "Rows marked **reference machine** were measured there, not on yours: AMD EPYC, 2 CPUs, on 2026-12-05 "
        "(batch); Intel Xeon, 2 CPUs, on 2026-12-01 (gc) (`python bench/remedies.py`). Measure on this machine to "
        "replace them with yours.", True)
    assert learn.sources_note([here]) == SourcesNote("Every runnable remedy has been measured on this machine.", False)
    assert learn.sources_note([_Result(None)]) is None
    assert learn.measure_all_help() == ("Every runnable remedy's before and after runs at the stated setups, one at a "
                                        "time through the queue (the reference machine took 10 minutes).")
    assert learn.speed_note([ref]) == (
        "Speed on the reference machine: the default setup ran at 100,000 to 250,000 samples/s over its 2 "
        "before-runs (other work shared its cores), so speed changes within 2.5x are noise there. Their exact peaks "
        "stayed within 240.0–242.5 MiB.")
    assert learn.speed_note([here]) is None


def test_without_a_reference_learn_says_nothing_of_one(tmp_path):
    learn = Learn.__new__(Learn)
    learn._reference_dir, learn._reference = str(tmp_path), None
    assert learn.sources_note([_Result("this machine")]) == SourcesNote(
        "Every runnable remedy has been measured on this machine.", False)
    assert learn.speed_note([_Result("reference")]) is None
    assert learn.measure_all_help().endswith("one at a time through the queue.")
    assert learn.diagnosis_loop().measured is None and learn.diagnosis_loop().steps[0]
    assert learn.measured_by_bench(remedy("serve")).caption == "Not measured yet: `python bench/serve.py`."


def test_the_diagnosis_loop_says_what_fit_measured():
    ref = Reference("fit", "Intel Xeon, 2 CPUs", "2026-12-01", "python bench/fit.py", 1041,
                    {"points": 8, "fitted": 7, "mean_runs": 1.25, "most_runs": 2, "swept_fitting": 7,
                     "median_given_up": 0.0, "worst_given_up": 0.001, "median_speed_ratio": 0.75})
    assert loop_note(ref) == (
        "Measured on the reference machine (Intel Xeon, 2 CPUs, 2026-12-01): from 8 starting points that did not "
        "fit their budget, fit ended within it from **7**, in 1.2 runs on average (at most 2); against the best "
        "fitting point of a small sweep over the same knobs it gave up +0.000 balanced accuracy at the median "
        "(worst +0.001). See docs/benchmarks.md.")
    none_given = dataclasses.replace(ref, figures=dict(ref.figures, median_given_up=None))
    assert loop_note(none_given).endswith("in 1.2 runs on average (at most 2). See docs/benchmarks.md.")
    assert loop_note(None) is None


def test_what_measure_queued_in_a_sentence():
    assert queued_note([(1, 2), (3, 4)]) == ("Queued 2 before/after pair(s): runs 1 and 2, 3 and 4. This page shows "
                                             "each result when its pair has finished.")
