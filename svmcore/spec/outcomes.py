"""What counts as running out of memory: one classifier for the worker (the exception
it caught) and the engine (a dead worker's last words on stderr), and the message
that says which cap was reached."""

from __future__ import annotations

import errno
import resource

# How a process's failure reads when memory ran out. Explicit statements are out of
# memory with or without a cap; the kernel *refusing* memory (a mapping, a thread) is the
# cap being reached only when there is a cap; without one it stays a failure.
OOM_MARKERS = ("memoryerror", "std::bad_alloc", "out of memory")


# "cannot map zero-fill pages": the loader could not map a shared object's zeroed data
# (.bss) while importing under a tight cap (seen importing sklearn's _loss under 150 MiB).
REFUSAL_MARKERS = ("failed to map segment", "cannot map zero-fill pages", "cannot allocate memory",
                   "thread creation failed", "can't start new thread", "pthread_create failed",
                   "resource temporarily unavailable", "too many memory regions")


# CPython's C code returning NULL without an exception: an allocation failed where the
# code does not expect one. Seen while importing the libraries under a tight cap.
NULL_RETURN_MARKERS = ("error return without exception set", "returned null without setting an exception")


def refused_memory(text: str, capped: bool, phase: str | None) -> bool:
    """Whether a worker's last words (stderr) say it ran out of memory."""
    low = text.lower()
    if any(m in low for m in OOM_MARKERS):
        return True
    if not capped:
        return False
    return (any(m in low for m in REFUSAL_MARKERS)
            or phase in (None, "imports") and any(m in low for m in NULL_RETURN_MARKERS))


def exception_refused_memory(error: BaseException, capped: bool, phase: str | None) -> bool:
    """Whether an exception caught in the worker is memory running out: a MemoryError
    always; under a cap also the kernel refusing memory (ENOMEM, a shared object's segment
    that cannot be mapped, a thread that cannot start) and, while importing, CPython's
    NULL-without-exception SystemError."""
    if isinstance(error, MemoryError):
        return True
    if not capped:
        return False
    message = str(error).lower()
    if isinstance(error, SystemError):
        return phase == "imports" and any(m in message for m in NULL_RETURN_MARKERS)
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return True
    return isinstance(error, (ImportError, OSError, RuntimeError)) and any(m in message for m in REFUSAL_MARKERS)


def thread_stack_bytes() -> int | None:
    """The stack a new thread reserves by default (glibc uses the RLIMIT_STACK soft limit)."""
    soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def cap_name(cap_kind: str, cap_bytes: int | None) -> str:
    """'the 200 MiB rlimit cap' (or 'the cap' when its size is not known)."""
    return f"the {cap_bytes / 2**20:,.0f} MiB {cap_kind} cap" if cap_bytes and cap_kind != "none" else "the cap"


def cap_fix(cap_kind: str, threads: int) -> str:
    """What the user can do about a cap that was too small for this run."""
    if threads > 1:
        return "raise the cap, lower threads or use a cgroup cap" if cap_kind == "rlimit" else \
            "raise the cap or lower threads"
    return "raise the cap"


def cap_message(cap_kind: str, cap_bytes: int, threads: int, phase: str | None, cause: str) -> str:
    """One sentence saying that the cap is what failed, and what it had to hold."""
    where = f" in phase {phase}" if phase else ""
    text = f"{cap_name(cap_kind, cap_bytes)} was reached{where}: the kernel refused memory ({cause})"
    if cap_kind == "rlimit" and threads > 1:
        stack = thread_stack_bytes()
        stacks = (f"{threads} × {stack / 2**20:,.0f} MiB = {threads * stack / 2**20:,.0f} MiB" if stack
                  else "their size")
        text += (f"; under rlimit the cap must also hold what {threads} threads reserve, "
                 f"their stacks ({stacks}) and BLAS buffers included")
    elif threads > 1:
        text += f"; the cap must hold the libraries and {threads} threads"
    return f"{text}: {cap_fix(cap_kind, threads)}" if threads > 1 else f"{text}; {cap_fix(cap_kind, threads)}"


def rss_over_cap_note(peak_rss_mb: float | None, cap_mb: float | None, cap_kind: str | None,
                      cgroup_peak_mb: float | None = None, held_peak_mb: float | None = None,
                      rss_file_mb: float | None = None) -> str | None:
    """What a cgroup cap limits and why a run's RSS differs from it (None when the cap was
    not a cgroup's). RSS counts every page the process maps, but a cgroup is charged for a
    page once, by the group that first brought it into memory: the pages of shared
    libraries already in the page cache (Python's, numpy's, scipy's) were charged to other
    groups. With the run's charge sampled (``held_peak_mb``: the charge less its page cache;
    ``rss_file_mb``: the file-backed pages of its highest RSS sample) the sentence gives its
    own measurement; a run stored before that gets the general one when its RSS passed the cap."""
    if cap_kind != "cgroup" or not peak_rss_mb or not cap_mb:
        return None
    if cgroup_peak_mb and held_peak_mb is not None and rss_file_mb is not None:
        return (f"The cap limits what the kernel charges to the run's cgroup, which peaked at {cgroup_peak_mb:,.0f} "
                f"MiB (exact; {held_peak_mb:,.0f} MiB of it memory the kernel cannot reclaim, sampled), not its RSS, "
                f"which peaked at {peak_rss_mb:,.0f} MiB: RSS also counts the {rss_file_mb:,.0f} MiB of library files "
                "the worker maps, which other processes read into memory first and so are charged to their groups, "
                "while page cache the run brings in is charged to it and reclaimed before any kill.")
    if peak_rss_mb <= cap_mb:
        return None
    charged = (f" (the cgroup itself peaked at {cgroup_peak_mb:,.0f} MiB, page cache included)"
               if cgroup_peak_mb else "")
    return (f"Its RSS peaked at {peak_rss_mb:,.0f} MiB, above the {cap_mb:,.0f} MiB cap{charged}: a cgroup is charged "
            "for each page once, by the group that first brought it into memory, and the shared library pages this "
            "process maps (Python's, numpy's, scipy's) were already cached and charged to other groups. They count in "
            "its RSS, not against its cap: the cap bounds the memory this run added.")


def size_text(n: float) -> str:
    """Bytes as MiB, or KiB below one MiB (a small model would read "0.00 MiB")."""
    return f"{n / 2**20:,.2f} MiB" if n >= 2**20 else f"{n / 1024:,.1f} KiB"
