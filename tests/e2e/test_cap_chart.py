"""A cgroup cap that looks like a cap, in a real browser: the Train page's memory chart of a run
that completed under a 150 MiB cgroup cap with an RSS above it draws what the cap limits (the
memory charged to the run's cgroup, sampled, split into what the kernel cannot reclaim and page
cache) under the cap line, with its exact peak, and RSS beside it; the caption says why they
differ with the run's own figures. (It drew RSS alone, above the cap line, for the whole run.)"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from svmcore.engine import limits
from tests.e2e.conftest import Server
from tests.e2e.test_browser import no_exception, open_app, screenshot, settle
from tests.helpers import make_history

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not limits.cgroup_available(), reason="no writable cgroup v1 memory controller")]

CAP_MB = 150
CAPPED = {"rows": 20_000, "features": 65_536, "epochs": 1, "memory_cap_mb": CAP_MB, "cap_kind": "cgroup"}

SCRIPT = r"""
import json, sys, time
from svmcore.app.lab import Lab

home, knobs = sys.argv[1], json.loads(sys.argv[2])
lab = Lab(home)
rid = lab.runs.launch(knobs)
deadline = time.monotonic() + 300
while time.monotonic() < deadline and not lab.store.get_run(rid).status.is_finished():
    time.sleep(0.1)
print(json.dumps({"run": rid, "status": lab.store.get_run(rid).status.value}))
"""

TRACES_JS = """() => {
    const el = document.querySelector('.st-key-train_chart .js-plotly-plot');
    if (!el || !el.data) return null;
    return el.data.map(d => ({name: d.name || '', stack: d.stackgroup || '', y: Array.from(d.y || []).map(Number)}));
}"""


@pytest.fixture
def capped_server(tmp_path, artifacts_dir):
    home = str(tmp_path / "home")
    os.makedirs(home)
    made = make_history(SCRIPT, home, CAPPED)
    assert made["status"] == "completed", made
    server = Server(home, os.path.join(artifacts_dir, "streamlit-cap-chart.log"))
    yield server
    server.stop()


def test_a_cgroup_capped_runs_chart_draws_what_the_cap_limits_under_its_line(capped_server, page):
    [run] = capped_server.runs()
    s = run.summary
    assert s.peak_rss_mb > CAP_MB >= s.cgroup_peak_mb, run.summary  # RSS above the cap line, the charge under it
    open_app(page, capped_server)
    settle(page)
    page.locator(".st-key-train_chart .js-plotly-plot").scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({TRACES_JS})() && ({TRACES_JS})().some(t => t.stack === 'charge' && t.y.length > 5)",
                           timeout=60_000, polling=250)
    traces = {t["name"]: t for t in page.evaluate(TRACES_JS)}
    held = traces["charged to its cgroup: memory the kernel cannot reclaim"]
    cache = traces["charged to its cgroup: page cache (reclaimed before any kill)"]
    assert held["stack"] == cache["stack"] == "charge" and len(held["y"]) == len(cache["y"]) > 5
    charged = [h + c for h, c in zip(held["y"], cache["y"])]
    cap_line = traces[f"cgroup cap {CAP_MB} MiB"]
    assert set(cap_line["y"]) == {CAP_MB}
    assert max(charged) <= CAP_MB  # the enforced quantity stays under its cap line ...
    assert max(traces["total RSS"]["y"]) > CAP_MB  # ... while RSS, drawn beside it, passes it
    exact = traces[f"cgroup exact peak {s.cgroup_peak_mb:,.0f} MiB (what the cap limits)"]
    assert max(charged) <= exact["y"][0] + 0.5 <= CAP_MB + 0.5
    caption = page.get_by_text(f"the quantity its cgroup cap of {CAP_MB} MiB limits")
    expect(caption).to_be_visible()
    expect(caption).to_contain_text(f"RSS also counts the {s.rss_file_mb:,.0f} MiB of library files")
    expect(page.get_by_test_id("stMetric").filter(has_text="charged to its cgroup (exact)")).to_contain_text(
        f"{s.cgroup_peak_mb:,.1f} MiB")
    no_exception(page)
    screenshot(page, "train-cgroup-cap")
