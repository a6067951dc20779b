"""Paths typed by a user stay in the data folders; uploads get generated names; no
pickles; the server binds to this machine and sends no tracebacks."""

import os
import pathlib
import tomllib

import pytest

from svmcore import lab as lab_module
from svmcore.errors import ConfigError, DataError
from svmcore.lab import Lab

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOOD = b"1 1:0.5 2:1\n-1 2:0.25\n1 1:1\n-1 3:1\n1 1:0.5\n-1 2:1\n"


@pytest.fixture
def lab(home):
    return Lab(home)


def test_paths_are_confined_to_the_data_folders(lab, tmp_path):
    inside = lab.save_upload("ok.svm", GOOD)
    assert lab.resolve_path(inside) == inside
    assert lab.resolve_path(os.path.basename(inside)) == inside  # relative to the uploads folder
    outside = tmp_path / "outside.svm"
    outside.write_bytes(GOOD)
    for bad in (str(outside), "../../outside.svm", os.path.join(lab.upload_dir, "..", "..", "outside.svm"),
                "/etc/passwd", "", "a\x00b"):
        with pytest.raises(ConfigError):
            lab.resolve_path(bad)
    link = os.path.join(lab.upload_dir, "sneaky.svm")
    os.symlink(outside, link)
    with pytest.raises(ConfigError, match="outside the data folders"):
        lab.resolve_path(link)
    with pytest.raises(ConfigError):
        lab.launch({"dataset": str(outside)})


def test_uploads_get_generated_names_inside_the_uploads_folder(lab):
    path = lab.save_upload("../../../etc/evil name.svm", GOOD)
    assert os.path.dirname(path) == lab.upload_dir
    assert ".." not in os.path.basename(path) and " " not in os.path.basename(path)


def test_upload_limits_and_bad_uploads(lab, monkeypatch):
    monkeypatch.setattr(lab_module, "UPLOAD_LIMIT_MB", 1)
    with pytest.raises(DataError, match="limit"):
        lab.save_upload("big.svm", b"1 1:1\n" * 400_000)
    with pytest.raises(DataError, match="empty"):
        lab.save_upload("empty.svm", b"")
    with pytest.raises(DataError, match="not accepted"):
        lab.save_upload("data.pkl", GOOD)
    with pytest.raises(DataError, match="line 2"):
        lab.save_upload("bad.svm", b"1 1:1\n-1 2:oops\n")
    assert os.listdir(lab.upload_dir) == []  # refused uploads are not kept


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
