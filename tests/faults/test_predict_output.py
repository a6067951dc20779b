"""``predict --out``: an output that is (or resolves to) an input is refused before anything
is opened for writing; predictions go to a temporary file renamed into place, so a failed
write never leaves half a file where the user's was; a write the device refuses is one line
naming the file."""

import os
import shutil
import stat

import pytest

from tests.conftest import cli
from tests.helpers import lean_model


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return lean_model(tmp_path_factory.mktemp("predict-output"), rows=5000)


@pytest.fixture
def model(trained, tmp_path):
    """A run with an exported model, and a copy of the file it trained on for this test alone."""
    home, data = trained
    return home, shutil.copy(data, tmp_path / "v.svm")


def _predict(home, data, out, check=None):
    return cli("predict", "--model", "1", "--data", data, "--out", out, home=home, check=check)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _one_error_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize("how", ["itself", "symlink", "hard link"])
def test_an_output_that_is_the_data_file_is_refused_and_the_data_kept(model, tmp_path, how):
    home, data = model
    before = _bytes(data)
    out = data
    if how != "itself":
        out = str(tmp_path / "out.svm")
        (os.symlink if how == "symlink" else os.link)(data, out)
    line = _one_error_line(_predict(home, data, out))
    assert line == (f"svmcore: error: --out {out} is the data file being scored ({data}): it would be overwritten "
                    "while it is read; write the predictions to another file"), line
    assert _bytes(data) == before


def test_an_output_inside_the_model_folder_is_refused(model):
    home, data = model
    folder = os.path.join(home, "runs", "1", "model")
    files = {n: _bytes(os.path.join(folder, n)) for n in os.listdir(folder)}
    target = os.path.join(folder, sorted(files)[0])
    line = _one_error_line(_predict(home, data, target))
    assert f"--out {target} is inside the model's folder {folder}" in line, line
    assert {n: _bytes(os.path.join(folder, n)) for n in os.listdir(folder)} == files


def test_a_device_that_refuses_the_writes_is_one_line_naming_it(model):
    home, data = model
    line = _one_error_line(_predict(home, data, "/dev/full"))
    assert line == "svmcore: error: cannot write the predictions to /dev/full: No space left on device", line


def test_a_failed_scoring_keeps_the_old_output_and_leaves_no_temporary(model, tmp_path):
    home, data = model
    bad = tmp_path / "bad.svm"
    lines = _bytes(data).splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:3000]) + b"1 7:x\n" + b"".join(lines[3000:]))  # line 3001 is malformed
    out = tmp_path / "predictions.txt"
    out.write_text("the old predictions\n")
    line = _one_error_line(_predict(home, str(bad), str(out)))
    assert "line 3001" in line, line
    assert out.read_text() == "the old predictions\n"
    assert sorted(os.listdir(tmp_path)) == ["bad.svm", "predictions.txt", "v.svm"]


def test_predictions_replace_the_file_a_symlink_names_and_keep_its_permissions(model, tmp_path):
    home, data = model
    target = tmp_path / "predictions.txt"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "latest.txt"
    os.symlink(target, link)
    proc = _predict(home, data, str(link), check=0)
    assert link.is_symlink() and os.readlink(link) == str(target), proc.stderr
    assert len(target.read_text().splitlines()) == 5000
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["latest.txt", "predictions.txt", "v.svm"]
