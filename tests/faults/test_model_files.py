"""Issue 40: tampered model files (``runs/N/model/``). ``model.json`` = ``[1,2]`` gave an
AttributeError traceback, 100k nested ``[`` a RecursionError, ``coef.npy`` as a FIFO hung,
a missing field a raw ``KeyError: 'storage'``, and another run's model copied in was served
silently under the first run's figures. Now the export records each file's size and
SHA-256 in the run's summary (``model_export.files``) and ``predict`` refuses a folder that
disagrees, or holds anything but regular files, in one line (exit 2), never opening a
FIFO for a blocking read; a model exported before that binding is still read bounded and
checked field by field."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import numpy as np
import pytest

from svmcore.serve.model_folder import digests
from tests.conftest import cli
from tests.faults.test_cli_errors import one_line_error
from tests.faults.test_damaged_store import LEAN, _dataset


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Two real runs (lean path) that exported their models; a pristine copy of the home to
    put back after each tampering (run folders are named by absolute path in the store)."""
    root = tmp_path_factory.mktemp("models")
    home = str(root / "home")
    os.makedirs(home)
    data = _dataset(home)
    proc = cli("sweep", f"--dataset={data}", *LEAN, "--grid", "seed=0,1", home=home, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shutil.copytree(home, str(root / "pristine"))
    return {"home": home, "data": data, "pristine": str(root / "pristine"), "out": str(root / "predictions.txt")}


@pytest.fixture
def model(exported):
    """Run 1's model folder, the home put back as exported first."""
    home = exported["home"]
    shutil.rmtree(home)
    shutil.copytree(exported["pristine"], home)
    yield os.path.join(home, "runs", "1", "model")
    shutil.rmtree(os.path.join(os.path.dirname(home), "elsewhere"), ignore_errors=True)


def _predict(exported, timeout=60):
    return cli("predict", "--model", "1", "--data", exported["data"], "--out", exported["out"],
               home=exported["home"], timeout=timeout)


def _unbind(home: str) -> None:
    """As a run exported before models were bound to their runs: no files recorded."""
    db = sqlite3.connect(os.path.join(home, "runs.sqlite"))
    db.execute("UPDATE runs SET summary=json_remove(summary, '$.model_export.files')")
    db.commit()
    db.close()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _fifo(path: str) -> None:
    os.remove(path)
    os.mkfifo(path)


def _without(field: str):
    def edit(model: str) -> None:
        meta = json.load(open(os.path.join(model, "model.json")))
        del meta[field]
        _write(os.path.join(model, "model.json"), json.dumps(meta))
    return edit


def _other_runs_model(model: str) -> None:
    shutil.rmtree(model)
    shutil.copytree(os.path.join(os.path.dirname(os.path.dirname(model)), "2", "model"), model)


def _folder_link(model: str) -> None:
    elsewhere = os.path.join(os.path.dirname(model), "..", "..", "..", "elsewhere")
    shutil.move(model, elsewhere)
    os.symlink(os.path.abspath(elsewhere), model)


def _link(target: str):
    def edit(model: str) -> None:
        os.remove(os.path.join(model, "coef.npy"))
        os.symlink(target, os.path.join(model, "coef.npy"))
    return edit


NOT_THIS_RUNS = "is not the one run 1 exported"
CASES = {  # how the folder is tampered with, whether the run's summary records its files, what predict says
    "model.json [1,2]": (lambda m: _write(f"{m}/model.json", "[1,2]"), True, f"{NOT_THIS_RUNS} (model.json differs"),
    "coef.npy a FIFO": (lambda m: _fifo(f"{m}/coef.npy"), True, "the model's coef.npy is a FIFO, not a regular file"),
    "another run's model copied in": (_other_runs_model, True, f"{NOT_THIS_RUNS} (check_scores.npy differs, "
                                                             "coef.npy differs, model.json differs since its export)"),
    "a file added": (lambda m: _write(f"{m}/extra.npy", ""), True, f"{NOT_THIS_RUNS} (extra.npy was added"),
    "a file removed": (lambda m: os.remove(f"{m}/check_scores.npy"), True, "check_scores.npy is missing"),
    "coef.npy a link to /dev/zero": (_link("/dev/zero"), True, "the model's coef.npy is a link, not a regular file"),
    "the model folder a link out of the run": (_folder_link, True, "run 1's model folder "),
    "unbound: model.json [1,2]": (lambda m: _write(f"{m}/model.json", "[1,2]"), False,
                                  "the model's model.json cannot be read: a JSON array, not a JSON object"),
    "unbound: 100k nested [": (lambda m: _write(f"{m}/model.json", "[" * 100_000), False,
                               "the model's model.json cannot be read: JSON nested too deeply to read"),
    "unbound: no storage": (_without("storage"), False, "the model's model.json has no 'storage'"),
    "unbound: model.json of 5 MiB": (lambda m: _write(f"{m}/model.json", " " * (5 << 20) + "{}"), False,
                                     "the model's model.json is larger than 4 MiB"),
    "unbound: coef.npy a FIFO": (lambda m: _fifo(f"{m}/coef.npy"), False, "coef.npy is a FIFO, not a regular file"),
    "unbound: coef.npy of another shape": (lambda m: np.save(f"{m}/coef.npy", np.zeros((1, 5), np.float32)), False,
                                           "the model's coef.npy holds (1, 5) float32, which does not match "
                                           "model.json ((1, 1024) float32)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_tampered_model_is_refused_in_one_line(exported, model, case):
    tamper, bound, said = CASES[case]
    if not bound:
        _unbind(exported["home"])
    tamper(model)
    one_line_error(_predict(exported), said)  # a FIFO read would hang past the timeout


def test_the_export_records_each_file_and_an_intact_model_serves(exported, model):
    rec = json.loads(cli("runs", "show", "1", "--json", home=exported["home"], check=0).stdout)
    files = rec["summary"]["model_export"]["files"]
    assert set(files) == {"model.json", "coef.npy", "check_scores.npy"} and files == digests(model), files
    served = _predict(exported)
    assert served.returncode == 0 and "serves in" in served.stdout, (served.stdout, served.stderr)
    _unbind(exported["home"])
    unbound = _predict(exported)
    assert unbound.returncode == 0 and "served without checking that its files are the ones the run wrote" in \
        unbound.stderr, unbound.stderr
