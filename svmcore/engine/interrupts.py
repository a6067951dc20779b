"""SIGINT and SIGTERM in a command that starts children: the one piece every command
shares (``cli.main`` traps both for the whole command).

While ``trapped()``, either signal raises ``Interrupted`` in the main thread (a
``KeyboardInterrupt``, so code that already stops on Ctrl-C stops on SIGTERM too), once:
later signals are logged and ignored while the command ends what it started. A
``shielded()`` block (a run's start: its row, its cgroup and its worker) is never cut
in half: the signal is raised when the block ends. ``end_children`` cancels every run
this process started and waits until each is recorded, its processes, cgroup, spill and
partial copies gone.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

from svmcore.engine import registry

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command received SIGINT or SIGTERM. ``exit_code`` is the shell's convention
    for a command a signal ended: 128 + the signal's number (130, 143)."""

    def __init__(self, signum: int):
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    trapped = False
    depth = 0  # shielded blocks open in the main thread
    received: Interrupted | None = None
    raised = False  # the one raise a trap makes (the shield may hold it back until it ends)


_state = _State()


def _on_signal(signum: int, _frame) -> None:
    if _state.received is not None:
        log.warning("%s received again: still ending what the command started", signal.Signals(signum).name)
        return
    _state.received = Interrupted(signum)
    if _state.depth == 0:
        _state.raised = True
        raise _state.received


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def trapped() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``Interrupted`` in this (main) thread for the block."""
    if not _in_main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _on_signal) for sig in SIGNALS}
    _state.trapped, _state.depth, _state.received, _state.raised = True, 0, None, False
    try:
        yield
    finally:
        _state.trapped, _state.received = False, None
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A block a signal must not cut in half; a signal that arrives in it is raised
    as the block ends (if the block ends normally). Off the main thread, or with no
    trap, it does nothing."""
    if not (_state.trapped and _in_main_thread()):
        yield
        return
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
    if _state.depth == 0 and _state.received is not None and not _state.raised:
        _state.raised = True
        raise _state.received


def received() -> Interrupted | None:
    """The signal this command received, if it did (under the trap)."""
    return _state.received


def check() -> None:
    """Raise the signal this command received, if any (after its run was cancelled:
    a caller that would go on to the next step stops here)."""
    if _state.received is not None:
        raise _state.received


def end_children(timeout_s: float = 60.0) -> list:
    """Cancel every run this process started (not ones it re-attached after another
    runner died) and wait until each has recorded its outcome and released what it
    leaves behind. Returns those runs."""
    runs = [r for r in registry.active_runs().values() if r.worker is None or r.worker.child]
    for run in runs:
        run.cancel()  # one still queued is recorded cancelled when its queue comes to it
    for run in runs:
        if run.worker is not None:
            run.wait(timeout_s)
            if not run.is_finished():
                log.warning("run %s did not end within %.0f s of its cancel", run.run_id, timeout_s)
    return runs
