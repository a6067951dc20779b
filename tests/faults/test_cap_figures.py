"""A cgroup cap as a student should see it: what the cap limits (the memory charged to the run's
cgroup) sampled with every reading, never above the cap though the run's RSS is, and its exact
peak; the gap between the two explained by what was measured (the file-backed library pages that
other processes cached first, charged to their groups)."""

import json
import statistics

import pytest

from svmcore.engine import limits
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB
from tests.conftest import cli, two_at_a_time
from tests.helpers import _run

needs_cgroup = pytest.mark.skipif(not limits.cgroup_available(), reason="no writable cgroup v1 memory controller")
CAP_MB = 130  # well below the small run's exact peak (150-163 MiB RSS), above what is charged to its group (~95-110)


def _finished(store, **knobs):
    run = _run(store, epochs=1, **knobs)
    run.wait(120)
    return run


@pytest.mark.slow
@needs_cgroup
def test_a_cgroup_capped_runs_samples_carry_what_the_cap_limits_and_never_pass_it(home, store):
    capped, free = two_at_a_time(lambda k: _finished(store, **k),
                                 [({"memory_cap_mb": CAP_MB, "cap_kind": "cgroup"},), ({},)])
    assert capped.status == RunStatus.COMPLETED, capped.summary
    s = capped.summary
    samples = store.samples(capped.run_id)
    assert s.peak_rss_mb > CAP_MB, s  # RSS goes above the cap line: RSS is not what the cap limits ...
    charged = [r[5] for r in samples]
    assert None not in charged and len(charged) > 10
    assert max(charged) <= CAP_MB * MiB  # ... what is charged to the run's cgroup is, in every sample
    assert all(0 <= r[6] <= r[5] for r in samples)  # its page cache, a part of the charge
    assert max(charged) <= s.cgroup_peak_mb * MiB <= CAP_MB * MiB  # the exact peak bounds every sample
    held = [r[5] - r[6] for r in samples]
    assert s.cgroup_held_peak_mb == max(held) / MiB  # sampled: the charge the kernel cannot reclaim
    # the gap, as measured: RSS less the held charge is the file-backed pages (libraries cached by other
    # processes first, charged to their groups), give or take the kernel's own memory charged here
    gaps = [(r[1] - held_b - r[3]) / MiB for r, held_b in zip(samples, held)]
    assert abs(statistics.median(gaps)) < 4, statistics.median(gaps)
    # and every anonymous page of the worker is charged to its group, those of its first moments too
    assert statistics.median((r[2] - held_b) / MiB for r, held_b in zip(samples, held)) < 1.5
    assert free.status == RunStatus.COMPLETED, free.summary
    assert {r[5] for r in store.samples(free.run_id)} == {None}  # an uncapped run's group limits nothing
    assert free.summary.cgroup_held_peak_mb is None and free.summary.cgroup_peak_mb is None
    # the run list shows the cap and the capped figure (the charge the kernel cannot reclaim, sampled)
    listed = {r["id"]: r for r in json.loads(cli("runs", "list", "--json", home=home, check=0).stdout)}
    mine = listed[capped.run_id]
    assert (mine["cap"], mine["cap_mb"], mine["cgroup_peak_mb"], mine["cgroup_held_peak_mb"]) == (
        "cgroup", CAP_MB, s.cgroup_peak_mb, s.cgroup_held_peak_mb)
    assert (listed[free.run_id]["cap"], listed[free.run_id]["cgroup_held_peak_mb"]) == ("none", None)
    table = cli("runs", "list", home=home, check=0).stdout.splitlines()
    header, row = table[0], next(line for line in table if line.split()[0] == str(capped.run_id))
    assert "cap" in header.split() and "held" in header.split()
    assert f"cgroup {CAP_MB}" in row and f"{s.cgroup_held_peak_mb:.1f}" in row, (header, row)
    # and so does the run's own description
    shown = cli("runs", "show", str(capped.run_id), home=home, check=0).stdout
    assert f"cap cgroup {CAP_MB} MiB" in shown and "The cap limits what the kernel charges" in shown, shown
    # and its exports keep the charge with every sample
    exported = json.loads(cli("runs", "export", str(capped.run_id), "--format", "json", home=home, check=0).stdout)
    assert [(x["cgroup_bytes"], x["cgroup_cache_bytes"]) for x in exported["samples"]] == [r[5:] for r in samples]
    csv_lines = cli("runs", "export", str(capped.run_id), "--format", "csv", home=home, check=0).stdout.splitlines()
    assert csv_lines[0].endswith(",hwm_bytes,cgroup_bytes,cgroup_cache_bytes")
    assert csv_lines[1].split(",")[-2:] == [str(v) for v in samples[0][5:]]
