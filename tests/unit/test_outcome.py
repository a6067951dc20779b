"""svmcore.engine.outcome.classify: every branch, on events as the worker writes them and
an Ending built by hand (no process), compared with ==."""

from __future__ import annotations

import pytest

from svmcore.engine.outcome import IMPORTS_LIMIT_S, Ending, classify
from svmcore.spec.events import OUTCOME, PHASE_END, PHASE_START, STARTED
from svmcore.spec.outcomes import NULL_RETURN_MARKERS, OOM_MARKERS, REFUSAL_MARKERS
from svmcore.spec.status import RunStatus

MiB = 2**20


def started(t=0.0):
    return {"kind": STARTED, "t_s": t, "pid": 4242, "cap_kind": None, "cap_bytes": None}


def phase(name, t=1.0, end=True):
    out = [{"kind": PHASE_START, "t_s": t, "phase": name, "rss_bytes": 10 * MiB}]
    if end:
        out.append({"kind": PHASE_END, "t_s": t + 0.5, "phase": name, "wall_s": 0.5,
                    "peak_rss_bytes": 20 * MiB, "rss_bytes": 15 * MiB})
    return out


def outcome(status, phase_name=None, error=None):
    return {"kind": OUTCOME, "t_s": 9.0, "status": status, "phase": phase_name, "error": error,
            "summary": {}, "peak_rss_bytes": 40 * MiB}


def events_until(last_phase, ended=False):
    """The worker's events up to the start of ``last_phase`` (left open unless ``ended``)."""
    names = ["imports", "prepare", "load", "transform", "train", "evaluate"]
    out = [started()]
    for i, name in enumerate(names[:names.index(last_phase) + 1]):
        out += phase(name, t=float(i + 1), end=name != last_phase or ended)
    return out


EXITED_1 = {"code": 1}
KILLED = {"signal": "SIGKILL"}


# ---------------------------------------------------------------- the worker reported

def test_completed_is_completed_with_the_last_phase():
    events = events_until("evaluate", ended=True) + [outcome("completed")]
    assert classify(events, Ending({"code": 0})) == (RunStatus.COMPLETED, None, "evaluate")


def test_completed_wins_over_everything_the_engine_saw_after():
    """The worker said it completed: a cancel that came too late, a non-zero exit, an OOM
    count or frightening stderr do not change that."""
    events = events_until("evaluate", ended=True) + [outcome("completed")]
    ending = Ending({"signal": "SIGKILL"}, cancelled=True, stuck_in_imports=True, oom_kills=1,
                    stderr_tail="MemoryError\n", cap_kind="cgroup", cap_bytes=256 * MiB)
    assert classify(events, ending) == (RunStatus.COMPLETED, None, "evaluate")


def test_the_last_completed_outcome_counts():
    events = events_until("evaluate", ended=True) + [outcome("failed", "train", {"type": "X", "message": "x"}),
                                                      outcome("completed")]
    assert classify(events, Ending({"code": 0}))[0] == RunStatus.COMPLETED


def test_the_worker_s_own_oom_outcome_with_its_error_and_phase():
    error = {"type": "OutOfMemory", "cause": "MemoryError", "message": "the 256 MiB rlimit cap was reached"}
    events = events_until("train", ended=True) + [outcome("oom", "train", error)]
    assert classify(events, Ending({"code": 3}, cap_kind="rlimit", cap_bytes=256 * MiB)) == (
        RunStatus.OOM, error, "train")


def test_the_worker_s_own_failed_outcome_with_its_error_and_phase():
    error = {"type": "DataError", "message": "data.svm, line 3: bad label", "bad_input": True}
    events = events_until("load", ended=True) + [outcome("failed", "load", error)]
    assert classify(events, Ending(EXITED_1)) == (RunStatus.FAILED, error, "load")


def test_the_worker_s_outcome_phase_wins_over_the_last_phase_started():
    events = events_until("train") + [outcome("failed", "load", {"type": "ValueError", "message": "m"})]
    assert classify(events, Ending(EXITED_1))[2] == "load"


def test_an_outcome_without_a_phase_keeps_the_last_phase_started():
    events = events_until("train") + [outcome("failed", None, {"type": "ValueError", "message": "m"})]
    assert classify(events, Ending(EXITED_1)) == (RunStatus.FAILED, {"type": "ValueError", "message": "m"},
                                                  "train")


def test_an_oom_outcome_without_an_error_gets_a_plain_out_of_memory():
    events = events_until("train") + [outcome("oom", "train", None)]
    assert classify(events, Ending({"code": 3})) == (
        RunStatus.OOM, {"type": "MemoryError", "message": "out of memory"}, "train")


def test_a_failed_outcome_without_an_error_stays_without_one():
    events = events_until("train") + [outcome("failed", "train", None)]
    assert classify(events, Ending(EXITED_1)) == (RunStatus.FAILED, None, "train")


def test_the_worker_s_outcome_wins_over_the_exit_status_and_stderr():
    error = {"type": "ValueError", "message": "boom", "bad_input": False}
    events = events_until("train") + [outcome("failed", "train", error)]
    ending = Ending(KILLED, stderr_tail="Traceback ...\nValueError: boom\n", oom_kills=0)
    assert classify(events, ending) == (RunStatus.FAILED, error, "train")


# ---------------------------------------------------------------- cancelled, stuck

CANCELLED = {"type": "Cancelled", "message": "cancelled by the user"}


def test_cancelled_without_an_outcome():
    assert classify(events_until("train"), Ending(KILLED, cancelled=True)) == (
        RunStatus.CANCELLED, CANCELLED, "train")


def test_cancelled_wins_over_an_oom_kill_and_a_worker_failure():
    events = events_until("train") + [outcome("oom", "train", {"type": "MemoryError", "message": "m"})]
    ending = Ending(KILLED, cancelled=True, oom_kills=1, cap_kind="cgroup", cap_bytes=256 * MiB)
    assert classify(events, ending) == (RunStatus.CANCELLED, CANCELLED, "train")


def test_cancelled_before_any_phase_has_no_phase():
    assert classify([started()], Ending(KILLED, cancelled=True)) == (RunStatus.CANCELLED, CANCELLED, None)
    assert classify([], Ending(KILLED, cancelled=True)) == (RunStatus.CANCELLED, CANCELLED, None)


def test_stuck_in_imports_is_out_of_memory():
    status, error, last_phase = classify(events_until("imports"), Ending(
        KILLED, stuck_in_imports=True, cap_kind="rlimit", cap_bytes=64 * MiB))
    assert (status, error["type"], last_phase) == (RunStatus.OOM, "OutOfMemory", "imports")
    assert error == {"type": "OutOfMemory", "message": (
        "the libraries could not start under the 64 MiB rlimit cap (still importing after 30 s: OpenBLAS retries a "
        "failed allocation forever); it is below what Python, numpy and scikit-learn need: raise the cap")}
    assert IMPORTS_LIMIT_S == 30.0


def test_stuck_in_imports_names_the_cap_and_the_threads_as_a_refusal_would():
    """Under a tight rlimit with many threads the kernel's refusal reaches Python, or OpenBLAS spins on
    it, by timing (both seen in test_caps' 64-thread run): the user is told the same either way."""
    status, error, _ = classify(events_until("imports"), Ending(
        KILLED, stuck_in_imports=True, cap_kind="rlimit", cap_bytes=200 * MiB, threads=64,
        stderr_tail="OpenBLAS warning: precompiled NUM_THREADS exceeded\nmemory allocation failed\n"))
    assert status == RunStatus.OOM
    assert error["message"].startswith("the libraries could not start under the 200 MiB rlimit cap")
    assert error["message"].endswith("need with 64 threads: raise the cap, lower threads or use a cgroup cap")
    assert error["cause"] == "memory allocation failed"


def test_stuck_in_imports_wins_over_the_kill_s_signal():
    assert classify([started()], Ending(KILLED, stuck_in_imports=True))[0] == RunStatus.OOM


# ---------------------------------------------------------------- no outcome: the engine decides

def test_no_outcome_and_a_cgroup_oom_kill_is_out_of_memory():
    ending = Ending(KILLED, oom_kills=1, cap_kind="cgroup", cap_bytes=256 * MiB, stderr_tail="")
    assert classify(events_until("train"), ending) == (
        RunStatus.OOM, {"type": "OutOfMemory", "message": "killed by the kernel's OOM killer at the cgroup cap"},
        "train")


def test_an_oom_kill_wins_over_stderr_and_the_exit_code():
    ending = Ending(EXITED_1, oom_kills=2, cap_kind="cgroup", cap_bytes=256 * MiB,
                    stderr_tail="OSError: Cannot allocate memory\n")
    assert classify(events_until("load"), ending)[:2] == (
        RunStatus.OOM, {"type": "OutOfMemory", "message": "killed by the kernel's OOM killer at the cgroup cap"})


def test_no_outcome_capped_and_the_kernel_refusing_memory_is_the_cap():
    last_words = "OSError: libopenblas.so: failed to map segment from shared object"
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=256 * MiB,
                    stderr_tail=f"Traceback (most recent call last):\n  File \"x.py\"\n{last_words}\n\n")
    assert classify(events_until("train"), ending) == (RunStatus.OOM, {
        "type": "OutOfMemory", "cause": last_words,
        "message": ("the 256 MiB rlimit cap was reached in phase train: the kernel refused memory "
                    f"(the worker's last words: {last_words}); raise the cap")}, "train")


def test_the_cap_message_says_threads_when_there_are_several():
    ending = Ending(EXITED_1, cap_kind="cgroup", cap_bytes=512 * MiB, threads=4,
                    stderr_tail="RuntimeError: can't start new thread\n")
    status, error, _ = classify(events_until("load"), ending)
    assert status == RunStatus.OOM
    assert error["message"] == (
        "the 512 MiB cgroup cap was reached in phase load: the kernel refused memory (the worker's last words: "
        "RuntimeError: can't start new thread); the cap must hold the libraries and 4 threads: "
        "raise the cap or lower threads")


def test_the_cap_message_without_a_phase_names_none():
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=100 * MiB, stderr_tail="Cannot allocate memory")
    status, error, last_phase = classify([started()], ending)
    assert (status, last_phase) == (RunStatus.OOM, None)
    assert error["message"].startswith("the 100 MiB rlimit cap was reached: the kernel refused memory (")


def test_the_cause_is_the_last_line_cut_to_200_characters():
    long = "OSError: [Errno 12] Cannot allocate memory " + "x" * 400
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=256 * MiB, stderr_tail=long)
    _, error, _ = classify(events_until("train"), ending)
    assert error["cause"] == long[:200]
    assert f"(the worker's last words: {long[:200]})" in error["message"]


@pytest.mark.parametrize("marker", REFUSAL_MARKERS)
def test_every_refusal_marker_under_a_cap_is_oom(marker):
    ending = Ending(EXITED_1, cap_kind="cgroup", cap_bytes=256 * MiB, stderr_tail=f"Error: {marker.upper()}\n")
    assert classify(events_until("train"), ending)[0] == RunStatus.OOM


@pytest.mark.parametrize("marker", REFUSAL_MARKERS)
def test_the_same_refusal_without_a_cap_stays_failed(marker):
    stderr = f"Traceback (most recent call last):\nOSError: {marker}\n"
    ending = Ending(EXITED_1, cap_kind="none", cap_bytes=None, stderr_tail=stderr)
    assert classify(events_until("train"), ending) == (RunStatus.FAILED, {
        "type": "Exit", "message": f"the worker exited with code 1: OSError: {marker}"}, "train")


def test_a_cap_kind_without_bytes_is_not_a_cap():
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=None, stderr_tail="Cannot allocate memory\n")
    assert classify(events_until("train"), ending)[0] == RunStatus.FAILED
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=0, stderr_tail="Cannot allocate memory\n")
    assert classify(events_until("train"), ending)[0] == RunStatus.FAILED


def test_bytes_without_a_cap_kind_is_not_a_cap():
    ending = Ending(EXITED_1, cap_kind="none", cap_bytes=256 * MiB, stderr_tail="Cannot allocate memory\n")
    assert classify(events_until("train"), ending)[0] == RunStatus.FAILED


@pytest.mark.parametrize("marker", OOM_MARKERS)
def test_an_explicit_out_of_memory_is_oom_without_a_cap(marker):
    ending = Ending(EXITED_1, stderr_tail=f"Traceback\n{marker}\n")
    assert classify(events_until("train"), ending) == (RunStatus.OOM, {
        "type": "OutOfMemory", "message": f"out of memory (the worker's last words: {marker})"}, "train")


def test_an_explicit_out_of_memory_under_a_cap_says_the_cap():
    ending = Ending(KILLED, cap_kind="rlimit", cap_bytes=128 * MiB,
                    stderr_tail="terminate called after throwing an instance of 'std::bad_alloc'\n")
    status, error, _ = classify(events_until("train"), ending)
    assert status == RunStatus.OOM
    assert error["cause"] == "terminate called after throwing an instance of 'std::bad_alloc'"
    assert error["message"].startswith("the 128 MiB rlimit cap was reached in phase train")


@pytest.mark.parametrize("marker", NULL_RETURN_MARKERS)
def test_a_null_return_while_importing_under_a_cap_is_oom(marker):
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=96 * MiB, stderr_tail=f"SystemError: {marker}\n")
    assert classify(events_until("imports"), ending)[0] == RunStatus.OOM
    assert classify([started()], ending)[0] == RunStatus.OOM  # before any phase: also importing


@pytest.mark.parametrize("marker", NULL_RETURN_MARKERS)
def test_a_null_return_after_the_imports_is_a_failure(marker):
    ending = Ending(EXITED_1, cap_kind="rlimit", cap_bytes=96 * MiB, stderr_tail=f"SystemError: {marker}\n")
    assert classify(events_until("train"), ending) == (RunStatus.FAILED, {
        "type": "Exit", "message": f"the worker exited with code 1: SystemError: {marker}"}, "train")


def test_killed_by_a_signal_is_failed_naming_the_signal():
    assert classify(events_until("train"), Ending(KILLED, stderr_tail="")) == (RunStatus.FAILED, {
        "type": "Signal", "message": "the worker was killed by SIGKILL", "signal": "SIGKILL"}, "train")


def test_killed_by_a_signal_with_unrelated_stderr_is_still_the_signal():
    ending = Ending({"signal": "SIGSEGV"}, stderr_tail="Fatal Python error: Segmentation fault\n")
    assert classify(events_until("load"), ending) == (RunStatus.FAILED, {
        "type": "Signal", "message": "the worker was killed by SIGSEGV", "signal": "SIGSEGV"}, "load")


def test_an_exit_code_with_stderr_names_the_last_line():
    ending = Ending({"code": 2}, stderr_tail="Traceback (most recent call last):\n  ...\nKeyError: 'x'\n\n  \n")
    assert classify(events_until("prepare"), ending) == (RunStatus.FAILED, {
        "type": "Exit", "message": "the worker exited with code 2: KeyError: 'x'"}, "prepare")


def test_an_exit_code_without_stderr_is_just_the_code():
    assert classify(events_until("prepare"), Ending({"code": 1})) == (RunStatus.FAILED, {
        "type": "Exit", "message": "the worker exited with code 1"}, "prepare")
    assert classify([], Ending({"code": 1}, stderr_tail="  \n\n")) == (RunStatus.FAILED, {
        "type": "Exit", "message": "the worker exited with code 1"}, None)


def test_exit_code_zero_without_an_outcome_is_a_failure():
    assert classify(events_until("evaluate"), Ending({"code": 0}))[:2] == (RunStatus.FAILED, {
        "type": "Exit", "message": "the worker exited with code 0"})


def test_no_exit_code_is_lost():
    expected = (RunStatus.LOST, {"type": "Lost", "message": "the worker ended without reporting an outcome"})
    assert classify(events_until("train"), Ending({"code": None})) == expected + ("train",)
    assert classify([], Ending({})) == expected + (None,)


def test_the_last_phase_started_is_the_phase_even_if_it_ended():
    events = events_until("load", ended=True)
    assert classify(events, Ending({"code": None}))[2] == "load"


def test_a_dask_worker_killed_at_the_cgroup_cap_is_oom_naming_the_worker():
    worker = "Dask worker 2 (tcp://127.0.0.1:4000, pid 77)"
    error = {"type": "WorkerLost", "message": f"{worker} died while training shard 2 in epoch 1; ...",
             "worker": worker, "doing": "while training shard 2 in epoch 1"}
    events = events_until("train") + [outcome("failed", "train", error)]
    ending = Ending({"code": 1}, oom_kills=1, cap_kind="cgroup", cap_bytes=300 * MiB)
    assert classify(events, ending) == (RunStatus.OOM, {
        "type": "OutOfMemory", "worker": worker,
        "message": f"{worker} was killed by the kernel's OOM killer at the 300 MiB cgroup cap while training "
                   "shard 2 in epoch 1; raise the cap or use fewer workers"}, "train")
    # without an OOM kill in the run's cgroup the same loss is a failure, as the worker said
    assert classify(events, Ending({"code": 1}, cap_kind="cgroup", cap_bytes=300 * MiB)) == (
        RunStatus.FAILED, error, "train")


# ---------------------------------------------------------------- a full disk

def test_no_outcome_on_a_full_disk_is_disk_full_naming_the_run_folder():
    """The worker could not write its outcome (nor its last words): its disk was full when it
    ended, its reserve still held. Bad input, as a copy that does not fit is: the CLI's exit 2."""
    ending = Ending({"code": 1}, run_dir="/data/home/runs/6", disk_free_bytes=12 * 1024)
    assert classify(events_until("train"), ending) == (RunStatus.FAILED, {
        "type": "DiskFull", "bad_input": True,
        "message": "disk full: the worker could not write its files in /data/home/runs/6; 0.0 MiB are free. "
                   "Free some space or put the data folder on a larger disk"}, "train")


@pytest.mark.parametrize("ending", [
    Ending({"signal": "SIGKILL"}, run_dir="/r", disk_free_bytes=0),  # killed: the signal says why
    Ending({"code": 1}, run_dir="/r", disk_free_bytes=5 * MiB),  # room left: not the disk
    Ending({"code": 1}),  # not measured
], ids=["killed", "room-left", "unknown"])
def test_a_disk_with_room_or_a_killed_worker_is_not_disk_full(ending):
    assert classify(events_until("train"), ending)[1]["type"] in ("Signal", "Exit")


def test_the_worker_s_own_outcome_wins_over_a_full_disk():
    events = events_until("train") + [outcome("failed", "prepare", {"type": "DiskFull", "message": "disk full: x"})]
    assert classify(events, Ending({"code": 1}, run_dir="/r", disk_free_bytes=0))[:2] == (
        RunStatus.FAILED, {"type": "DiskFull", "message": "disk full: x"})
