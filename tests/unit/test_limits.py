"""Which failures are the kernel refusing memory (svmcore.engine.limits.refused_memory): under a
cap they are the cap being reached (oom); without one they stay failures."""

import errno

import pytest

from svmcore.spec.outcomes import cap_message, exception_refused_memory, refused_memory

REFUSALS = [
    ImportError("/x/_slsqplib.cpython-311-x86_64-linux-gnu.so: failed to map segment from shared object"),
    ImportError("_loss.cpython-311-x86_64-linux-gnu.so: cannot map zero-fill pages"),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
    OSError("libfoo.so: cannot allocate memory in static TLS block"),
    RuntimeError("can't start new thread"),
    RuntimeError("Thread creation failed: Resource temporarily unavailable"),
]


@pytest.mark.parametrize("error", REFUSALS, ids=lambda e: type(e).__name__ + ":" + str(e)[-30:])
def test_refusals_are_oom_under_a_cap_only(error):
    assert exception_refused_memory(error, capped=True, phase="load")
    assert not exception_refused_memory(error, capped=False, phase="load")


@pytest.mark.parametrize("message", ["error return without exception set",
                                     "<built-in method _find_and_load> returned NULL without setting an exception"])
def test_a_null_return_while_importing_under_a_cap_is_oom(message):
    assert exception_refused_memory(SystemError(message), capped=True, phase="imports")
    assert not exception_refused_memory(SystemError(message), capped=False, phase="imports")
    assert not exception_refused_memory(SystemError(message), capped=True, phase="train")


@pytest.mark.parametrize("error", [ImportError("No module named 'foo'"), OSError(errno.ENOENT, "No such file"),
                                   RuntimeError("injected failure"), ValueError("cannot allocate memory")])
def test_other_errors_are_not_refusals(error):
    assert not exception_refused_memory(error, capped=True, phase="imports")


def test_memory_error_is_oom_with_or_without_a_cap():
    assert exception_refused_memory(MemoryError(), capped=False, phase="train")


@pytest.mark.parametrize("text", ["libgomp: Thread creation failed: Resource temporarily unavailable",
                                  "OpenBLAS blas_thread_init: pthread_create failed for thread 3 of 64",
                                  "BLAS : Program is Terminated. Because you tried to allocate too many "
                                  "memory regions.",
                                  "ImportError: x.so: failed to map segment from shared object"])
def test_the_worker_last_words_are_refusals_under_a_cap_only(text):
    assert refused_memory(text, capped=True, phase="train")
    assert not refused_memory(text, capped=False, phase="train")


@pytest.mark.parametrize("text", ["Traceback ...\nMemoryError: Unable to allocate 1 GiB", "std::bad_alloc"])
def test_explicit_out_of_memory_in_the_last_words_is_oom_without_a_cap_too(text):
    assert refused_memory(text, capped=False, phase="train")


def test_cap_message_names_the_cap_and_the_threads():
    text = cap_message("rlimit", 200 * 2**20, 64, "imports", "ImportError: failed to map segment")
    assert "200 MiB" in text and "rlimit" in text and "64 threads" in text and "imports" in text
    assert "thread" not in cap_message("cgroup", 200 * 2**20, 1, "load", "x").split(";")[0]
