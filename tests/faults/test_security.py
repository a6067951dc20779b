"""Paths typed by a user stay in the data folders; uploads get generated names; no
pickles; the server binds to this machine and sends no tracebacks."""

import os
import pathlib
import tomllib

import pytest

from svmcore.app import folders as lab_module
from svmcore.app.lab import Lab
from svmcore.spec.errors import ConfigError, DataError

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOOD = b"1 1:0.5 2:1\n-1 2:0.25\n1 1:1\n-1 3:1\n1 1:0.5\n-1 2:1\n"


@pytest.fixture
def lab(home):
    return Lab(home)


def test_paths_are_confined_to_the_data_folders(lab, tmp_path):
    inside = lab.folders.upload("ok.svm", GOOD)[0]
    assert lab.folders.resolve(inside) == inside
    assert lab.folders.resolve(os.path.basename(inside)) == inside  # relative to the uploads folder
    outside = tmp_path / "outside.svm"
    outside.write_bytes(GOOD)
    for bad in (str(outside), "../../outside.svm", os.path.join(lab.folders.upload_dir, "..", "..", "outside.svm"),
                "/etc/passwd", "", "a\x00b"):
        with pytest.raises(ConfigError):
            lab.folders.resolve(bad)
    link = os.path.join(lab.folders.upload_dir, "sneaky.svm")
    os.symlink(outside, link)
    with pytest.raises(ConfigError, match="outside the data folders"):
        lab.folders.resolve(link)
    with pytest.raises(ConfigError):
        lab.runs.launch({"dataset": str(outside)})


def test_uploads_get_generated_names_inside_the_uploads_folder(lab):
    path = lab.folders.upload("../../../etc/evil name.svm", GOOD)[0]
    assert os.path.dirname(path) == lab.folders.upload_dir
    assert ".." not in os.path.basename(path) and " " not in os.path.basename(path)


def test_the_same_file_uploaded_twice_is_one_dataset(lab):
    # the walk uploaded one 300-line file from two sessions and got two datasets
    first = lab.folders.upload("small300.libsvm", GOOD)[0]
    assert lab.folders.upload("small300.libsvm", GOOD) == (first, False)
    other = lab.folders.upload("small300.libsvm", GOOD * 2)[0]  # same name, other content: its own file
    assert other != first and sorted(os.listdir(lab.folders.upload_dir)) == sorted(
        os.path.basename(p) for p in (first, other))
    assert lab.folders.upload("renamed.libsvm", GOOD)[1]  # the name is part of what the user sees: a new file


def test_upload_limits_and_bad_uploads(lab, monkeypatch):
    monkeypatch.setattr(lab_module, "UPLOAD_LIMIT_MB", 1)
    with pytest.raises(DataError, match="limit"):
        lab.folders.upload("big.svm", b"1 1:1\n" * 400_000)[0]
    with pytest.raises(DataError, match="empty"):
        lab.folders.upload("empty.svm", b"")[0]
    with pytest.raises(DataError, match="binary data"):
        lab.folders.upload("data.pkl", b"\x80\x04\x95" + bytes(range(256)) * 4)[0]  # a pickle: binary
    with pytest.raises(DataError, match="line 2"):
        lab.folders.upload("bad.svm", b"1 1:1\n-1 2:oops\n")[0]
    assert os.listdir(lab.folders.upload_dir) == []  # refused uploads are not kept


def test_no_pickle_is_ever_loaded():
    for path in (ROOT / "svmcore").glob("*.py"):
        text = path.read_text()
        assert "allow_pickle=True" not in text, path
        assert "import pickle" not in text, path
        for line in text.splitlines():
            if "np.load(" in line:
                assert "allow_pickle=False" in line, (path, line)


def test_server_binds_locally_and_hides_tracebacks():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["server"]["maxUploadSize"] <= 200
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["client"]["showErrorDetails"] in ("none", False)


# ---------------------------------------------------------------- every file knob is confined (issue #10)

def _outward_link(lab, name="passwd.svm", target="/etc/passwd"):
    """A symlink inside the datasets folder that leads to a system file."""
    os.makedirs(lab.folders.data_dir, exist_ok=True)
    link = os.path.join(lab.folders.data_dir, name)
    os.symlink(target, link)
    return link


def _good_dataset(lab, name="good.svm"):
    os.makedirs(lab.folders.data_dir, exist_ok=True)
    path = os.path.join(lab.folders.data_dir, name)
    with open(path, "wb") as f:
        f.write(GOOD * 20)
    return path


@pytest.mark.parametrize("how", ["launch", "start_sweep", "sweep_preview", "preview", "recommend", "inspect",
                                 "run_remedy", "sweep_grid"])
def test_test_file_symlink_to_a_system_file_is_refused_and_never_read(lab, how):
    good = _good_dataset(lab)
    link = _outward_link(lab)
    values = {"dataset": good, "test_file": link, "batch_size": 2, "epochs": 1}
    calls = {
        "launch": lambda: lab.runs.launch(values),
        "start_sweep": lambda: lab.sweeps.start(values, {"batch_size": [2, 4]}),
        "sweep_preview": lambda: lab.sweeps.preview(values, {"batch_size": [2, 4]}),
        "preview": lambda: lab.forecasts.preview(values),
        "recommend": lambda: lab.forecasts.recommend(values, 500),
        "inspect": lambda: lab.folders.inspect(good, test_file=link),
        "run_remedy": lambda: lab.learn.run_remedy("batch", {"test_file": link}),
        "sweep_grid": lambda: lab.sweeps.start({"dataset": good}, {"test_file": [link], "batch_size": [2]}),
    }
    with pytest.raises(ConfigError, match="outside the data folders") as err:
        calls[how]()
    assert err.value.knob == "test_file"
    assert not lab.store.list_runs(), "a run was queued with a file outside the data folders"
    cache = os.path.join(lab.home, "cache")
    assert not os.path.isdir(cache) or not os.listdir(cache), "the outside file was scanned"


@pytest.mark.parametrize("how", ["launch", "start_sweep", "preview", "inspect"])
def test_dataset_symlink_to_a_system_file_is_refused(lab, how):
    link = _outward_link(lab)
    values = {"dataset": link}
    calls = {
        "launch": lambda: lab.runs.launch(values),
        "start_sweep": lambda: lab.sweeps.start(values, {"batch_size": [2, 4]}),
        "preview": lambda: lab.forecasts.preview(values),
        "inspect": lambda: lab.folders.inspect(link),
    }
    with pytest.raises(ConfigError, match="outside the data folders") as err:
        calls[how]()
    assert err.value.knob == "dataset"
    assert not lab.store.list_runs()


def test_listing_hides_symlinks_that_leave_the_data_folders(lab, tmp_path):
    good = _good_dataset(lab)
    outside = tmp_path / "outside.svm"
    outside.write_bytes(GOOD)
    _outward_link(lab, "passwd.svm")
    _outward_link(lab, "outside.svm", str(outside))
    _outward_link(lab, "broken.svm", os.path.join(lab.folders.data_dir, "gone.svm"))
    inward = os.path.join(lab.folders.data_dir, "alias.svm")
    os.symlink(good, inward)
    listed = sorted(os.path.basename(p) for p in lab.folders.files())
    assert listed == ["alias.svm", "good.svm"], listed
    for p in lab.folders.files():  # everything listed is usable
        assert lab.folders.resolve(p).startswith(os.path.realpath(lab.folders.data_dir))


def test_relative_name_is_looked_up_in_every_data_folder(lab, tmp_path, monkeypatch):
    in_datasets = _good_dataset(lab, "rel.svm")
    assert lab.folders.resolve("rel.svm") == os.path.realpath(in_datasets)
    assert lab.folders.inspect("rel.svm")["rows"] == 120
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "more.svm").write_bytes(GOOD)
    monkeypatch.setenv("SVMCORE_DATA_DIRS", str(extra))
    lab2 = Lab(lab.home)
    assert lab2.folders.resolve("more.svm") == str((extra / "more.svm").resolve())
    with pytest.raises(ConfigError, match="no such file in the data folders: nothing.svm"):
        lab2.folders.resolve("nothing.svm")
    # the uploads folder comes first: the same name there wins
    uploaded = os.path.join(lab.folders.upload_dir, "rel.svm")
    os.makedirs(lab.folders.upload_dir, exist_ok=True)
    with open(uploaded, "wb") as f:
        f.write(GOOD)
    assert lab.folders.resolve("rel.svm") == os.path.realpath(uploaded)


# ---------------------------------------------------------------- npz zip bomb behind a stored member (issue #10)

class _SameBlockDeflate:
    """zipfile's deflater for a member written as the same block over and over: each write is
    deflated and fully flushed (no reference back across writes), so a block deflates to the same
    bytes every time, and those bytes are reused instead of deflating 1 GiB of zeros again
    (~10 s). The member is the same valid deflate stream of the same bytes."""

    def __init__(self, deflate):
        import zlib

        self._deflate, self._full = deflate, zlib.Z_FULL_FLUSH
        self._last = (None, b"")

    def compress(self, data):
        if self._last[0] != data:
            self._last = (bytes(data), self._deflate.compress(data) + self._deflate.flush(self._full))
        return self._last[1]

    def flush(self, *mode):
        return self._deflate.flush(*mode)


def _npz_bomb(path, rows=2**20, cols=128):
    """An .npz of ~13 MB: y, ``rows`` random float64 stored as is (8 MiB), and X, a
    rows x cols float64 array of zeros (1 GiB) deflated. Written a MiB at a time, so
    making it costs no memory. Together the members look like a ~90:1 ratio."""
    import zipfile

    import numpy as np

    rng = np.random.default_rng(0)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6, allowZip64=True) as z:
        stored = zipfile.ZipInfo("y.npy")
        stored.compress_type = zipfile.ZIP_STORED
        with z.open(stored, "w", force_zip64=True) as m:
            np.lib.format.write_array_header_1_0(m, {"descr": "<f8", "fortran_order": False, "shape": (rows,)})
            for _ in range(rows // 2**17):
                m.write(rng.random(2**17).tobytes())
        with z.open("X.npy", "w", force_zip64=True) as m:
            m._compressor = _SameBlockDeflate(m._compressor)
            np.lib.format.write_array_header_1_0(m, {"descr": "<f8", "fortran_order": False,
                                                     "shape": (rows, cols)})
            zeros = bytes(2**20)
            for _ in range(rows * cols * 8 // 2**20):
                m.write(zeros)
        infos = z.infolist()
    return infos


def test_npz_bomb_hidden_behind_a_stored_member_is_refused_without_growing(tmp_path):
    from svmcore.data.readers import load_npz
    from svmcore.engine import procfs
    from svmcore.worker.main import reset_peak

    path = str(tmp_path / "bomb.npz")
    infos = _npz_bomb(path)
    assert os.path.getsize(path) < 16 * 2**20
    total, packed = sum(i.file_size for i in infos), sum(i.compress_size for i in infos)
    assert total >= 2**30 and total / packed < 200  # the whole-file ratio alone lets it through
    assert reset_peak()
    before = procfs.read_status()
    with pytest.raises(DataError, match="zip bomb") as err:
        load_npz(path)
    grew = procfs.read_status().hwm_bytes - before.rss_bytes
    assert "'X'" in str(err.value) and "1,024 MiB" in str(err.value), str(err.value)
    assert grew < 64 * 2**20, f"the test process grew by {grew / 2**20:.0f} MiB while refusing"
    with pytest.raises(DataError, match="zip bomb"):  # and through the Lab, as an upload would go
        lab_dir = tmp_path / "home"
        lab_dir.mkdir()
        Lab(str(lab_dir)).folders.upload("bomb.npz", open(path, "rb").read())[0]


# ---------------------------------------------------------------- uploads are accepted by content (issue #10)

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00" + bytes(200)


@pytest.mark.parametrize("name", ["a9a", "a9a.t", "w8a", "train.data", "a9a.svm"])
def test_libsvm_uploads_without_the_usual_extension_are_accepted_by_content(lab, name):
    path = lab.folders.upload(name, GOOD * 10)[0]
    base = os.path.basename(path)
    assert os.path.dirname(path) == lab.folders.upload_dir and path.endswith(".svm")
    assert base.startswith(name.replace(".svm", "").replace(".", "_") + "-"), base
    info = lab.folders.inspect(path)
    assert (info["rows"], info["format"], sorted(info["classes"])) == (60, "svmlight", ["-1.0", "1.0"])
    assert path in lab.folders.files()
    assert lab.forecasts.preview({"dataset": path}).size.rows > 0  # trainable: the Train page sizes it


def test_other_formats_without_an_extension_are_sniffed(lab, tmp_path):
    import numpy as np

    csv = lab.folders.upload("table", b"a,label\n1,0\n2,1\n3,0\n4,1\n")[0]
    text = lab.folders.upload("reviews", b"pos\tgood film\nneg\tbad film\n")[0]
    np.savez(tmp_path / "arrays.npz", X=np.eye(4), y=np.array([0, 1, 0, 1]))
    npz = lab.folders.upload("arrays", (tmp_path / "arrays.npz").read_bytes())[0]
    assert [os.path.splitext(p)[1] for p in (csv, text, npz)] == [".csv", ".txt", ".npz"]
    assert [lab.folders.inspect(p)["format"] for p in (csv, text, npz)] == ["csv", "text", "npz"]


@pytest.mark.parametrize("name,data", [
    ("picture.png", PNG),
    ("a9a", PNG),  # a binary file under a dataset's name
    ("junk.bin", bytes(__import__("random").Random(0).getrandbits(8) for _ in range(4096))),
    ("notes.txt", "pos\tgood".encode("utf-16")),
], ids=["png", "png-named-a9a", "random-bytes", "utf-16"])
def test_binary_uploads_are_refused_clearly_and_not_kept(lab, name, data):
    with pytest.raises(DataError) as err:
        lab.folders.upload(name, data)[0]
    msg = str(err.value)
    assert msg.startswith(os.path.basename(name) + ": is not a dataset: ") and "UTF-8" in msg, msg
    assert len(msg.splitlines()) == 1 and lab.folders.upload_dir not in msg
    assert os.listdir(lab.folders.upload_dir) == []
    assert lab.folders.files() == []


def test_a_refused_upload_is_named_as_the_user_named_it(lab):
    with pytest.raises(DataError) as err:
        lab.folders.upload("a9a.t", b"1 1:1\n-1 2:oops\n")[0]
    assert str(err.value).startswith("a9a.t, line 2: ") and err.value.line == 2
    assert os.listdir(lab.folders.upload_dir) == []
