"""svmcore.engine.interrupts: real signals to this process, under the trap every command runs in."""

import os
import signal

import pytest

from svmcore.engine import interrupts


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_under_the_trap_raises_interrupted_once_with_the_shell_s_exit_code(sig, code):
    with interrupts.trapped():
        with pytest.raises(interrupts.Interrupted) as raised:
            os.kill(os.getpid(), sig)
            signal.sigtimedwait([], 0)  # a bytecode boundary: the handler runs
        assert raised.value.exit_code == code and raised.value.signal_name == sig.name
        assert isinstance(raised.value, KeyboardInterrupt)  # code that stops on Ctrl-C stops on SIGTERM too
        os.kill(os.getpid(), sig)  # while the command ends what it started: logged, not raised again
        assert interrupts.received() is raised.value
        with pytest.raises(interrupts.Interrupted):
            interrupts.check()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handlers before the trap are back
    assert signal.getsignal(signal.SIGINT) == signal.default_int_handler
    assert interrupts.received() is None


def test_a_shielded_block_is_not_cut_and_the_signal_comes_when_it_ends():
    steps = []
    with interrupts.trapped():
        with pytest.raises(interrupts.Interrupted):
            with interrupts.shielded():
                os.kill(os.getpid(), signal.SIGTERM)
                steps.append("after the signal")
                with interrupts.shielded():  # nested: the outermost block's end raises
                    steps.append("inner")
                steps.append("end of the block")
            steps.append("never")
    assert steps == ["after the signal", "inner", "end of the block"]


def test_without_the_trap_a_shield_changes_nothing_and_check_is_quiet():
    with interrupts.shielded():
        pass
    interrupts.check()
