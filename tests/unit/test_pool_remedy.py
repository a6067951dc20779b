"""The memory pool on Learn and in the claims table: measured by its own benchmark
(bench/memory_pool.py, which writes what Learn reads into the package's reference data),
saying it saves nothing."""

from bench.memory_pool import reference
from svmcore.app.reference import read
from svmcore.app.remedies import remedy
from svmcore.app.remedy_results import measured_row
from tests.helpers import learn_reading

MiB = 2**20


def _case(path, alloc, buffers, trim, peak, rss):
    return {"path": path, "allocator": alloc, "buffers": buffers, "trim": trim, "peak_bytes": peak * MiB,
            "epochs": [{"rss_bytes": r * MiB, "free_in_heap_bytes": MiB} for r in rss], "seconds": 1.0}


BENCH = {"date": "2026-12-02", "description": "AMD EPYC", "seconds": 36, "rows": 50_000, "epochs": 2,
         "batch_size": 1024, "cases": [
    _case("lean", "lean", "per-batch", False, 54.5, (52.0, 52.0)),
    _case("lean", "lean", "pool", False, 54.75, (52.0, 52.5)),
    _case("lean", "lean", "per-batch", True, 54.5, (51.0, 51.0)),
    _case("lean", "glibc", "per-batch", False, 57.0, (55.0, 57.0)),
    _case("lean", "glibc", "pool", False, 57.25, (55.0, 57.0)),
    _case("classic", "worker", "per-batch", False, 246.0, (245.0, 245.0)),
    _case("classic", "worker", "pool", False, 245.5, (245.0, 245.0))]}


def test_the_claims_row_gives_each_paths_peaks_and_says_it_saves_nothing():
    row = measured_row(remedy("pool"), reference(BENCH))
    assert row["run's exact peak (MiB)"] == "lean 54.5 → 54.8 · classic 246.0 → 245.5"
    assert row["verdict"].startswith("saves nothing measurable: exact peak -0.5 to +0.2 MiB")
    assert "RSS growth over the epochs: per-batch +0.0, +0.0; pool +0.5, +0.0" == row["phases it acts on (MiB)"]
    assert row["setup"] == "50,000 sparse-text rows, 2 epochs, batches of 1,024"
    assert row["measured on"] == "reference machine"
    assert measured_row(remedy("pool"), None)["verdict"] == "not measured yet (python bench/memory_pool.py)"


def test_the_lessons_give_the_figures_of_both_paths_the_allocator_and_trim():
    lines = reference(BENCH).figures["lessons"]
    assert lines[0].startswith("lean path (the lean worker's malloc settings): exact peak 54.5 MiB with per-batch "
                               "arrays, 54.8 MiB with reused buffers (+0.2)")
    assert lines[1].startswith("classic path (every worker's fixed mmap threshold") and "246.0 MiB" in lines[1] \
        and "(-0.5)" in lines[1]
    assert "54.5 MiB with the lean malloc settings against 57.0 MiB with glibc's defaults" in lines[2]
    assert lines[3] == "malloc_trim after each epoch lowers the RSS after the last epoch by 1.0 to 1.0 MiB, " \
                       "the exact peak by +0.0 to +0.0 MiB"


def test_a_pool_that_moves_the_peak_by_a_mebibyte_or_more_is_not_called_nothing():
    moved = dict(BENCH, cases=[dict(c, peak_bytes=c["peak_bytes"] - 2 * MiB) if c["buffers"] == "pool" else c
                               for c in BENCH["cases"]])
    row = measured_row(remedy("pool"), reference(moved))
    assert row["verdict"].startswith("changes the exact peak measurably: exact peak -2.5 to -1.8 MiB"), row["verdict"]
    assert "the pool changes the exact peak measurably" in reference(moved).figures["lessons"][0]


def test_learn_reads_the_memory_pool_result_file(tmp_path):
    learn = learn_reading(tmp_path, reference(BENCH))
    assert learn.measured_by_bench(remedy("pool")).lessons == tuple(reference(BENCH).figures["lessons"])


def test_the_committed_reference_gives_the_row_its_figures():
    ref = read("memory_pool")
    row = measured_row(remedy("pool"), ref)
    assert row["run's exact peak (MiB)"].startswith("lean ") and " · classic " in row["run's exact peak (MiB)"]
    assert row["verdict"].startswith("saves nothing measurable") and ref.command == "python bench/memory_pool.py"
