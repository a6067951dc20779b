"""The native library: svmlight parsing and writing, the SGD and FTRL solvers, CSR row ops,
the spill's window reads, numpy's seeded permutations. This
module builds and finds it; ``binding`` loads it and declares its typed functions.

C sources next to this file, compiled by gcc into one shared library and loaded with
ctypes; nothing but numpy is needed at run time. The library is built on demand: the
first process that needs it compiles the sources into a file named by their hash (so
an edit rebuilds, and old builds are never loaded), under a file lock so concurrent
processes build it once. ``make run``/``make test`` build it ahead
(``python -m svmcore.data.native``). Where it goes: ``$SVMCORE_NATIVE_DIR`` if set,
else ``build/`` in this folder when writable (git-ignored), else
``~/.cache/svmcore/native``. No binary is committed.
"""

from __future__ import annotations

import hashlib
import logging
import os

log = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ("svmlight.c", "sgd.c", "ftrl.c", "spill.c", "random.c")
CFLAGS = ("-O3", "-std=gnu99", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math", "-Wall",
          "-Werror=implicit-function-declaration")

class NativeBuildError(RuntimeError):
    """The native library could not be built (no gcc, or it refused the sources)."""


def source_hash() -> str:
    h = hashlib.sha256(" ".join(CFLAGS).encode())
    for name in SOURCES:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _candidate_dirs() -> list[str]:
    env = os.environ.get("SVMCORE_NATIVE_DIR")
    if env:
        return [env]
    return [os.path.join(HERE, "build"), os.path.join(os.path.expanduser("~"), ".cache", "svmcore", "native")]


def _usable(folder: str) -> bool:
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def library_path(build: bool = True) -> str:
    """The compiled library for the current sources, built now if missing."""
    name = f"libsvmnative-{source_hash()}.so"
    dirs = _candidate_dirs()
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    if not build:
        raise NativeBuildError(f"{name} is not built")
    for d in dirs:
        if _usable(d):
            return _build(d, name)
    raise NativeBuildError(f"no writable folder to build the native library in (tried {', '.join(dirs)})")


def _build(folder: str, name: str) -> str:
    # here, not at the top: only a build needs them, and the lean worker, which imports this module, counts its floor
    import fcntl
    import shutil
    import subprocess
    import tempfile

    target = os.path.join(folder, name)
    with open(os.path.join(folder, ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others find the file done
        if os.path.exists(target):
            return target
        cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
        if not cc:
            raise NativeBuildError("no C compiler found (install gcc) to build the native library")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".so")
        os.close(fd)
        cmd = [cc, *CFLAGS, "-o", tmp, *(os.path.join(HERE, s) for s in SOURCES), "-lm"]
        log.info("building the native library: %s", " ".join(cmd))
        try:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True)
            except OSError as e:
                raise NativeBuildError(f"cannot run the C compiler {cc} ({e.strerror or e}); install gcc") from None
            if proc.returncode != 0:
                raise NativeBuildError(f"{cc} could not build the native library:\n{proc.stderr.strip()}")
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        for old in os.listdir(folder):  # builds of older sources
            if old.startswith("libsvmnative-") and old != name:
                try:
                    os.remove(os.path.join(folder, old))
                except OSError:
                    pass
    return target
