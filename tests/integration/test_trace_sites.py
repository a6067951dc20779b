"""The trace knob on a real run: memray's tracker in the worker, its sites read back by the engine."""

import os
import re

from svmcore.data.files import make_dataset
from svmcore.engine import traces
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB
from tests.conftest import cli
from tests.helpers import _run


def test_a_traced_run_names_the_lines_that_held_its_memory(store, tmp_path):
    make_dataset("sparse-text", rows=8000, features=4000, nnz_per_row=40, seed=1, out=str(tmp_path / "d.svm"))
    run = _run(store, dataset=str(tmp_path / "d.svm"), mode="memory", parser="native", solver="native", epochs=2,
               monitor="off", trace=True)
    assert run.wait(180) == RunStatus.COMPLETED, run.summary
    s = store.get_run(run.run_id).summary  # as the store keeps it
    t = s.trace
    assert t is not None and t.error is None and t.allocations > 0, t
    assert os.path.exists(os.path.join(run.run_dir, t.file))
    assert [p.phase for p in t.peaks] == [None] + [p.name for p in s.phases]
    # the load phase holds the training rows: our own reader's lines hold them at its peak
    load = t.at("load")
    ours = [site for site in load.sites if site.file.startswith("svmcore/data/")]
    assert sum(site.bytes for site in ours) >= 0.5 * s.train_data_bytes, load.sites
    assert all(site.stack and site.allocations >= 1 for site in load.sites)
    assert t.at(None).traced_bytes == max(p.traced_bytes for p in t.peaks)
    # the traced heap beside the exact peak: the sample at the traced peak is within it, its parts add up
    assert t.rss_bytes <= s.peak_rss_mb * MiB + 4096 and t.file_backed_bytes <= t.rss_bytes - t.anon_bytes + 4096
    line = t.reconciliation(s.peak_rss_mb)
    assert line.startswith(f"exact peak {round(s.peak_rss_mb):,} MiB (VmHWM)")
    assert f"{round(t.rss_bytes / MiB):,} MiB resident" in line
    shown = cli("runs", "show", str(run.run_id), home=store.home, check=0).stdout
    assert line in shown and f"at load's traced peak, {load.traced_bytes / MiB:,.1f} MiB held:" in shown
    assert f"    {load.sites[0].text()}" in shown
    doctor = cli("doctor", str(run.run_id), "--budget", "16", home=store.home, check=0).stdout
    assert f"The lines that held the memory at {s.peak_phase}'s traced peak" in doctor
    # the heap the tracker saw at the end of each pass, beside the pass's RSS (issue 42)
    assert [p.epoch for p in s.passes] == [1, 2]
    assert all(0 < p.heap_mb * MiB <= t.at(None).traced_bytes for p in s.passes), s.passes
    assert f"of which the traced heap {s.passes[0].heap_mb:,.0f}, {s.passes[1].heap_mb:,.0f} MiB" in shown
    html = traces.flamegraph(run.run_dir)
    with open(html) as f:
        page = f.read()
    assert page[:200].lstrip().lower().startswith("<!doctype html")
    # it draws offline (the dashboard is used where only package registries are reachable): no script from the web
    assert not re.findall(r"<script[^>]+src=[\"']https?:", page), re.findall(r"<script[^>]+src=[^>]+>", page)[:3]
    # Python frames: our reader's lines are in it, the interpreter's C files between them are not
    assert "svmcore/data/" in page and not re.findall(r"Objects/\w+\.c", page)
