"""Issue 40, "fit, doctor and words": what hostile use found in ``fit``, ``doctor``, ``estimate``
and ``run`` before launch, through the real CLI (``python -m svmcore``)."""

from __future__ import annotations

import json
import random
import socket

import pytest

from svmcore.store.sqlite import Store
from tests.conftest import cli
from tests.faults.test_cli_errors import one_line_error


def sms_text(path, rows: int = 2000, seed: int = 0) -> str:
    """SMS-like raw text: ``label<TAB>free text`` lines, labels ham/spam, no file extension."""
    rng = random.Random(seed)
    ham = "ok call you later going home now i will be there in a bit what time are we meeting sorry".split()
    spam = "free win prize claim now cash txt reply stop urgent mobile award guaranteed call offer".split()
    with open(path, "w") as f:
        for _ in range(rows):
            is_spam = rng.random() < 0.15
            words = spam if is_spam else ham
            f.write(("spam" if is_spam else "ham") + "\t" + " ".join(rng.choice(words) for _ in range(rng.randint(4, 20)))
                    + "\n")
    return str(path)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens on it once closed


def test_a_fit_budget_above_the_largest_memory_cap_is_refused_as_the_budget(home):
    proc = cli("fit", "--budget", "1000001", "--rows", "2000", home=home)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "error: argument --budget: a budget is a number of MiB from 16 to 1,000,000" in proc.stderr
    assert "memory_cap_mb" not in proc.stderr


def test_a_closed_scheduler_port_is_one_line_before_launch_and_nothing_is_recorded(home):
    port = _closed_port()
    proc = cli("run", "--rows", "4000", "--epochs", "1", "--workers", "2", "--scheduler", f"tcp://127.0.0.1:{port}",
               home=home, timeout=120)
    one_line_error(proc, f"connection refused: nothing listens on 127.0.0.1:{port}")
    store = Store(home)
    assert store.list_runs() == []
    store.close()


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_raw_text_without_an_extension_is_refused_on_the_lean_path_before_launch(home, tmp_path, command):
    sms = sms_text(tmp_path / "SMSSpamCollection")
    proc = cli(command, "--dataset", sms, "--parser", "native", "--solver", "native", "--mode", "stream", home=home,
               timeout=120)
    one_line_error(proc, "SMSSpamCollection is raw text", "by its content", "svmlight files only")
    store = Store(home)
    assert store.list_runs() == []
    store.close()


def test_svmlight_content_takes_the_lean_path_whatever_the_name(home, tmp_path):
    path = tmp_path / "rows.txt"  # an extension that used to keep it off the lean path
    path.write_text("".join(f"{1 if i % 3 else -1} {i % 7 + 1}:1 {i % 5 + 9}:0.5\n" for i in range(2000)))
    proc = cli("run", "--dataset", str(path), "--parser", "native", "--solver", "native", "--mode", "stream",
               "--epochs", "1", "--json", home=home, timeout=120, check=0)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["floor_mb"] < 60, summary["floor_mb"]  # numpy and the native library only, no scikit-learn
    # every phase carries the worker's CPU time (the time model's basis since issue 40)
    assert all(p["cpu_s"] >= 0 for p in summary["phases"]) and summary["phases"][-1]["name"] == "evaluate"
    assert next(p for p in summary["phases"] if p["name"] == "train")["cpu_s"] > 0


def test_fit_on_raw_text_below_its_floor_says_so_with_the_floor_and_launches_nothing(home, tmp_path):
    from svmcore.predict.floors import floor_for
    from svmcore.spec.config import validate

    sms = sms_text(tmp_path / "SMSSpamCollection")
    floor = floor_for(validate(dataset=sms), None)[0]
    proc = cli("fit", "--budget", "100", "--dataset", sms, "--json", home=home, timeout=120, check=3)
    result = json.loads(proc.stdout)
    assert not result["fits"] and result["attempts"] == [], result
    reason = result["reason"]
    assert reason.startswith("no setting fits the budget of 100 MiB"), reason
    assert f"{floor:,.0f} MiB" in reason and "floor" in reason, reason
    assert "raw text" in reason and "svmlight files only" in reason, reason
    assert result["summary"] == reason  # not 'no change needed'
    store = Store(home)
    assert store.list_runs() == []
    store.close()


def test_a_bad_input_failure_mid_run_has_one_exit_code_on_the_cli_and_in_its_json(home, tmp_path):
    path = tmp_path / "train.svm"
    path.write_text("".join(f"{1 if i % 3 else -1} {i % 7 + 1}:1 {i % 5 + 9}:0.5\n" for i in range(3000)))
    proc = cli("run", "--dataset", str(path), "--epochs", "1", "--json", home=home, timeout=120,
               env={"SVMCORE_FAULT": "truncate:0.5@load"})  # the file changes while the run reads it
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["error"]["bad_input"], summary["error"]
    assert proc.returncode == 2 and summary["exit"] == {"code": 2, "signal": None}, (proc.returncode, summary["exit"])


def test_the_train_page_refuses_raw_text_on_the_lean_path_where_it_sizes_the_data(home, tmp_path):
    from svmcore.app.lab import Lab
    from svmcore.spec.errors import ConfigError

    lab = Lab(home)
    upload = lab.folders.upload("SMSSpamCollection", open(sms_text(tmp_path / "sms"), "rb").read())[0]
    lean = {"dataset": upload, "parser": "native", "solver": "native", "mode": "stream"}
    with pytest.raises(ConfigError, match="is raw text .* by its content"):
        lab.forecasts.preview(lean)
    assert lab.forecasts.preview({**lean, "parser": "sklearn"}).size.rows > 0


def test_knobs_that_cannot_run_under_the_budget_as_their_cap_are_one_line_naming_the_budget(home):
    proc = cli("fit", "--budget", "100", "--rows", "20000", "--representation", "dense", "--hashing-bits", "12",
               home=home)
    one_line_error(proc, "budget: under the budget of 100 MiB, which fit makes the run's memory cap")
