"""`svmcore run` says before starting, on stderr, when a run may not fit or may take
long, and starts it anyway (issue #10: an MLP on 2^20 columns, 3.7 GiB and ten
minutes, without a word)."""

import json

from tests.conftest import cli


def test_cli_run_warns_on_stderr_before_starting_and_does_not_block(home):
    proc = cli("run", "--model=mlp", "--hidden=64", "--rows=20000", "--memory-cap-mb=300", "--cap-kind=rlimit",
               "--json", home=home, timeout=300)
    assert proc.returncode == 3, proc.stderr  # it ran, and ended out of memory under its cap, as warned
    assert json.loads(proc.stdout.strip().splitlines()[-1])["status"] == "oom"
    lines = proc.stderr.strip().splitlines()
    warnings = [ln for ln in lines if ln.startswith("svmcore: warning: ")]
    assert lines[:len(warnings)] == warnings  # printed before anything else
    memory = [w for w in warnings if w.startswith("svmcore: warning: Memory: ")]
    assert len(memory) == 1 and "needs at least 3," in memory[0] and "a lower bound" in memory[0], warnings
    assert "most of it model" in memory[0] and "its memory cap is 300 MiB" in memory[0]
    time_ = [w for w in warnings if w.startswith("svmcore: warning: Time: ")]
    assert len(time_) == 1 and "minutes" in time_[0] and "rough" in time_[0], warnings


def test_cli_run_with_nothing_to_fear_prints_no_warning(home):
    proc = cli("run", "--rows=3000", "--features=4096", "--epochs=1", home=home, check=0)
    assert "warning" not in proc.stderr
