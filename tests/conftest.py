import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Ctrl-C is tested as a terminal delivers it. A test run started in the background by a
# non-interactive shell (`make test &`) inherits SIGINT ignored, and so would every command it
# starts (an ignored signal stays ignored across exec; a handled one is reset to the default):
# its Ctrl-C tests then saw a command that never stopped.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The longest files first, longest first (per-file time of a full run): `make test` runs two pytest
# processes (pytest-xdist, a file to a process, in this order: --no-loadscope-reorder, or xdist orders
# files by their number of tests), so the long ones overlap with everything else instead of running last.
LONGEST_FIRST = (
    "tests/integration/test_estimate_runs.py",
    "tests/integration/test_scaling.py",
    # before the other files on the shared history server: after Learn's e2e test has run on it,
    # the exported story draws 4 of its 5 charts (seen twice; not yet understood, see issue notes)
    "tests/e2e/test_story.py",
    "tests/e2e/test_train_compare.py",
    "tests/e2e/test_face.py",
    "tests/ui/test_apptest.py",
    "tests/integration/test_runs.py",
    "tests/e2e/test_browser.py",
    "tests/integration/test_ddp.py",
    "tests/integration/test_ftrl_runs.py",
    "tests/e2e/test_learn_sweep.py",
    "tests/integration/test_label_sorted.py",
    "tests/faults/test_damaged_store.py",
    "tests/faults/test_concurrency.py",
)


def _file_rank(item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_file_rank)  # stable: the rest keep their order


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
    assert not s.integrity_problems()
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


def two_at_a_time(fn, calls):
    """``[fn(*args) for args in calls]``, two calls at a time: for real runs that do not measure
    each other (each run's exact peak is its own process's; their results do not depend on timing)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda args: fn(*args), calls))
