"""The CLI says what is wrong with a folder or a flag in one line and exits 2, never
with a traceback (issue #10). Runs the real CLI (`python -m svmcore`)."""

import os
import subprocess

import pytest

from svmcore.store.sqlite import Store
from tests.conftest import cli, two_at_a_time

GOOD = "1 1:0.5 2:1\n-1 2:0.25\n1 1:1\n-1 3:1\n"
MAKE = ("data", "make", "sparse-text", "--rows", "200", "--features", "64", "--nnz-per-row", "5")


def one_line_error(proc, *needles) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("svmcore: error: "), err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text(GOOD)
    return str(path)


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder that even root cannot write to: a tmpfs remounted read-only (chmod
    does not stop root). Yields (mount point, a folder inside it)."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("needs root to mount a tmpfs: " + r.stderr.decode().strip())
    try:
        (mnt / "home").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        with pytest.raises(OSError):
            open(mnt / "home" / "probe", "w")
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


# ---------------------------------------------------------------- data inspect with an unusable home

def test_inspect_with_the_home_a_regular_file(tmp_path, dataset):
    home = tmp_path / "home"
    home.write_text("not a folder")
    at, below = two_at_a_time(lambda h: cli("data", "inspect", dataset, env={"SVMCORE_HOME": h}),
                              [(str(home),), (str(home / "below"),)])
    one_line_error(at, "is a file, not a folder", "SVMCORE_HOME")
    one_line_error(below, "is a file, not a folder")


def test_inspect_with_a_read_only_home(read_only_dir, dataset):
    for proc in two_at_a_time(lambda h: cli("data", "inspect", dataset, env={"SVMCORE_HOME": h}),
                              [(os.path.join(read_only_dir, "home"),), (os.path.join(read_only_dir, "new", "home"),)]):
        one_line_error(proc, "read-only")


def test_a_home_that_is_a_file_is_refused_by_every_command(tmp_path):
    home = tmp_path / "home"
    home.write_text("")
    commands = [("runs", "list"), ("run", "--rows=2000"), ("estimate",)]
    procs = two_at_a_time(lambda *args: cli(*args, env={"SVMCORE_HOME": str(home)}), commands)
    for args, proc in zip(commands, procs):
        assert proc.returncode == 2, args
        one_line_error(proc, "is a file, not a folder")


def test_inspect_with_a_good_home_still_works(tmp_path, dataset):
    proc = cli("data", "inspect", dataset, "--json", env={"SVMCORE_HOME": str(tmp_path / "new-home")})
    assert proc.returncode == 0, proc.stderr
    assert '"rows": 4' in proc.stdout


# ---------------------------------------------------------------- data make --out that cannot be written

def test_make_into_an_existing_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    one_line_error(cli(*MAKE, "--out", str(out)), "is a folder", os.path.join(str(out), "data.svm"))
    assert os.listdir(out) == [] and sorted(os.listdir(tmp_path)) == ["out"]  # no half-written file left


def test_make_below_a_regular_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    below, deeper = two_at_a_time(lambda out: cli(*MAKE, "--out", out),
                                  [(str(blocker / "x.svm"),), (str(blocker / "sub" / "x.svm"),)])
    one_line_error(below, "is a file, not a folder")
    one_line_error(deeper, "does not exist")


@pytest.mark.parametrize("fmt", ["svmlight", "npz", "text"])
def test_make_into_a_read_only_folder(read_only_dir, fmt):
    out = os.path.join(read_only_dir, "home", "x.svm")
    one_line_error(cli(*MAKE, "--format", fmt, "--out", out), "read-only")
    assert os.listdir(os.path.join(read_only_dir, "home")) == []


def test_make_still_writes_a_file(tmp_path):
    out = tmp_path / "x.svm"
    proc = cli(*MAKE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_text().splitlines()) == 200
    assert sorted(os.listdir(tmp_path)) == ["x.svm"]


# ---------------------------------------------------------------- bool knob flags

TINY = ("--rows=400", "--features=64", "--nnz-per-row=5", "--epochs=1", "--batch-size=16")


BOOL_FLAGS = {
    "space-false": (["--average", "false"], False),
    "equals-no": (["--average=no"], False),
    "zero": (["--average", "0"], False),
    "no-flag": (["--no-average"], False),
    "bare": (["--average"], True),
    "yes": (["--average", "yes"], True),
    "one": (["--average=1"], True),
}


def test_bool_knob_flags_take_true_or_false():
    """Every spelling, through the CLI's own parser and admission (what `run` does with its
    flags before it launches): reading a flag needs no run."""
    from svmcore.cli import build_parser
    from svmcore.cli.common import knob_values
    from svmcore.engine.admission import admit

    got = {}
    for name, (flags, _) in BOOL_FLAGS.items():
        args = build_parser().parse_args(["run", *flags, *TINY])
        got[name] = admit(knob_values(args), None).config.average
    assert got == {name: expect for name, (_, expect) in BOOL_FLAGS.items()}, got


# the lean path (a svmlight file, native parser and solver: numpy only, ~0.3 s of imports)
LEAN = ("--solver=native", "--parser=native", "--mode=stream", "--epochs=1", "--batch-size=16")


def test_a_bool_knob_flag_reaches_the_stored_run(tmp_path):
    """Real `run` processes (two at a time): the value the flag gives is the stored run's config,
    false (not the default) as well as true."""
    data = tmp_path / "d.svm"
    data.write_text(GOOD * 100)

    def run(name, flags):
        home = str(tmp_path / name)
        proc = cli("run", *flags, f"--dataset={data}", *LEAN, home=home)
        assert proc.returncode == 0, (flags, proc.stderr[-2000:])
        store = Store(home)
        try:
            [rec] = store.list_runs()
            return rec.config["average"]
        finally:
            store.close()

    cases = [("space-false", ["--average", "false"]), ("one", ["--average=1"])]
    assert two_at_a_time(run, cases) == [False, True]


@pytest.mark.parametrize("flags,needle", [
    (["--average", "maybe"], "average: expected true or false, got 'maybe'"),
    (["--no-average=1"], "--no-average takes no value"),
])
def test_bad_bool_knob_values_are_one_line(tmp_path, flags, needle):
    proc = cli("run", *flags, *TINY, home=str(tmp_path / "home"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_scheduler_on_a_closed_port_says_nothing_listens_there_at_once(tmp_path):
    import socket
    import time

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = cli("run", "--rows=6000", "--features=1000", "--workers=2", f"--scheduler=tcp://127.0.0.1:{port}",
               home=str(tmp_path / "home"))
    took = time.monotonic() - t0
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"nothing listens on 127.0.0.1:{port}" in lines[0] and "Timed out" not in lines[0], lines
    assert took < 15, took  # Dask alone said "Timed out" after its connect timeout (17 s seen)


@pytest.mark.parametrize("address, needle", [
    ("inproc://x", "inproc:// is not supported"), ("tcp://h:99999", "is not a port number"),
    ("tcp://h:", "has no port")])
def test_a_scheduler_address_the_product_cannot_use_is_one_line_before_launch(tmp_path, address, needle):
    proc = cli("run", "--workers=2", f"--scheduler={address}", home=str(tmp_path / "home"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert "unpack" not in lines[0]
