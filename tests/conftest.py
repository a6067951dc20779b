import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


# The longest files, started first: `make test` runs two pytest processes (pytest-xdist, a file to a
# process), and these overlap with everything else instead of running last on one of them.
LONGEST_FIRST = ("tests/integration/test_estimate_runs.py", "tests/integration/test_scaling.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: 0 if item.nodeid.startswith(LONGEST_FIRST) else 1)  # stable: the rest keep order


@pytest.fixture
def home(tmp_path):
    """A fresh data folder for one test."""
    path = tmp_path / "home"
    path.mkdir()
    return str(path)


@pytest.fixture
def store(home):
    from svmcore.store.sqlite import Store

    s = Store(home)
    yield s
    assert s.integrity_ok()
    s.close()


def cli(*args, home=None, env=None, timeout=600, check=None, prefix=()):
    """Run `python -m svmcore ...` as a real process (after ``prefix``, e.g. a
    ``prlimit`` command line); returns CompletedProcess."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = ROOT
    if env:
        full_env.update(env)
    cmd = list(prefix) + [sys.executable, "-m", "svmcore"] + list(args)
    if home:
        cmd += ["--home", home] if args and args[0] in ("run", "sweep") else []
        full_env["SVMCORE_HOME"] = home
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc
