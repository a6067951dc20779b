"""Serve a run's exported model: find it, score a file in a lean child process
(``python -m svmcore.serve``), and set the child's exact peak beside the training
run's.

The child's peak is its own kernel high-water mark (VmHWM, read by the child itself at
the end: ``wait4``'s ``ru_maxrss`` would start from this process's RSS, see
``engine.summary``), so the figure is the serving process's alone.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
import time

from svmcore.data import disk
from svmcore.engine import interrupts
from svmcore.engine.process import child_env
from svmcore.serve.model_file import MODEL_DIR, check, read_meta
from svmcore.serve.model_folder import check_digests, files
from svmcore.spec.errors import DataError, SvmcoreError
from svmcore.spec.result import ModelExport
from svmcore.store.sqlite import Store

MiB = 2**20
log = logging.getLogger(__name__)


class ServeError(SvmcoreError):
    """A run that cannot be served (unknown, unfinished, no model)."""


def model_of(store: Store, run_id: int) -> tuple[str, dict]:
    """(model folder, its model.json) of run ``run_id``, or a ServeError (ModelFileError)
    saying why not: the folder must hold regular files only, exactly those the run's export
    recorded (``model_export.files``: sizes and SHA-256), and a model.json that reads."""
    rec = store.get_run(run_id)
    if rec is None:
        raise ServeError(f"no run with id {run_id}")
    rec.readable("served (its model is checked against its summary)")
    export = rec.summary.model_export or ModelExport()
    if not rec.status.is_finished():
        raise ServeError(f"run {run_id} is still {rec.status.value}; serve it when it has finished")
    folder = os.path.join(rec.run_dir, MODEL_DIR) if rec.run_dir else None
    if folder is not None and os.path.islink(folder):
        raise ServeError(f"run {run_id}'s model folder {folder} is a link, not the folder its export wrote")
    if folder is None or not os.path.isdir(folder):
        why = (export.reason if export.exported is False else
               f"it ended {rec.status.value}" if rec.status.value != "completed" else
               "it was trained before models were exported, or its folder was removed")
        raise ServeError(f"run {run_id} has no exported model: {why}")
    recorded = export.files
    if recorded is None:  # exported before models were bound to their runs: checked as far as it can be
        files(folder)
        meta = check(folder)
        log.warning("run %s's model was exported before models were bound to their runs: it is served without "
                    "checking that its files are the ones the run wrote", run_id)
        return folder, meta
    if not isinstance(recorded, dict) or not all(isinstance(v, dict) for v in recorded.values()):
        raise ServeError(f"run {run_id}'s record of its model's files is damaged; its model cannot be checked")
    check_digests(folder, recorded, run_id)
    return folder, read_meta(folder)


def serve(home: str, run_id: int, data: str, out: str | None = None, scores: bool = False,
          list_modules: bool = False) -> dict:
    """Score ``data`` with run ``run_id``'s model in a child process; predictions to
    ``out`` (None: this process's stdout), through a temporary file renamed into place
    when they are all written. Returns the child's summary (rows/s, accuracy, exact peak
    and floor), the model's sizes and the training run's peak and speed."""
    store = Store(home)
    folder, meta = model_of(store, run_id)
    if not os.path.isfile(data):
        raise DataError("no such file" if not os.path.exists(data) else "is not a file", data)
    rec = store.get_run(run_id)
    output = _Output(out, data, folder) if out else None
    try:
        with tempfile.TemporaryDirectory(prefix="svmcore-serve-") as tmp:
            job = {"model": folder, "data": os.path.abspath(data), "out": output.writes_to if output else None,
                   "out_name": out, "scores": scores, "result": os.path.join(tmp, "result.json"),
                   "list_modules": list_modules}
            with open(os.path.join(tmp, "job.json"), "w") as f:
                json.dump(job, f)
            t0 = time.monotonic()
            with open(os.path.join(tmp, "stderr.txt"), "wb") as err:
                returncode = _score(job, tmp, err, to_stdout=out is None)
            wall_s = time.monotonic() - t0
            result = _result(job["result"], returncode, os.path.join(tmp, "stderr.txt"))
        if not result.pop("ok"):
            if result["type"] == "BrokenPipeError":
                raise BrokenPipeError(result["error"])
            raise (DataError if result["type"] in ("DataError", "DataChangedError") else ServeError)(result["error"])
        if output:
            output.commit()
    finally:
        if output:
            output.discard()
    return {**result, "run_id": run_id, "wall_s": wall_s, "peak_mb": result["peak_bytes"] / MiB,
            "floor_mb": result["floor_bytes"] / MiB,
            "peak_source": "the serving process's kernel high-water mark (VmHWM): exact",
            "model": {k: meta.get(k) for k in ("model", "distilled_from", "solver", "loss", "storage", "dtype", "width",
                                               "vectors", "nonzero_weights", "model_bytes", "sizes", "check")},
            "training": training_of(rec)}


def training_of(rec) -> dict:
    """The training run as the summary sets it beside the serving process: its run peak (for a
    data-parallel run all its processes, its largest worker named), speed, accuracy and floor."""
    s, peak = rec.summary, rec.summary.run_peak
    return {"peak_mb": peak.mb, "peak_exact": peak.exact, "peak_text": peak.text(), "peak_rss_mb": s.peak_rss_mb,
            "samples_per_s": s.samples_per_s, "accuracy": s.accuracy, "floor_mb": s.floor_mb}


def _score(job: dict, tmp: str, err, to_stdout: bool) -> int:
    """Run the scoring process to its end; if this process is interrupted (a signal,
    ``engine.interrupts``), it is killed first. Its own session: a Ctrl-C on the
    terminal reaches this process only, which decides."""
    proc = None
    try:
        with interrupts.shielded():  # not between its fork and this process knowing its pid
            proc = subprocess.Popen([sys.executable, "-m", "svmcore.serve", os.path.join(tmp, "job.json")],
                                    stdin=subprocess.DEVNULL, stdout=None if to_stdout else subprocess.DEVNULL,
                                    stderr=err, env=child_env(), start_new_session=True)
        return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


class _Output:
    """Where the predictions go. Refused before anything is opened for writing when it is
    (or resolves to) an input: the data file or the model's files. A regular file (or a
    new one) is written as a temporary file beside it and renamed into place by
    ``commit``, so a failed or interrupted write never leaves half a file where the
    user's was; a device or a pipe (``/dev/null``, a FIFO) is written directly."""

    def __init__(self, out: str, data: str, model_folder: str):
        target = os.path.realpath(out)
        if os.path.isdir(target):
            raise ServeError(f"--out {out} is a folder; name a file for the predictions")
        if _same_file(target, data):
            raise ServeError(f"--out {out} is the data file being scored ({data}): it would be overwritten while it "
                             "is read; write the predictions to another file")
        if disk.is_inside(target, model_folder):
            raise ServeError(f"--out {out} is inside the model's folder {model_folder}: it would overwrite the model; "
                             "write the predictions to another file")
        self.target = target
        self.direct = os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode)
        self.writes_to = target if self.direct else disk.temporary(target)
        if not self.direct:
            try:
                os.close(os.open(self.writes_to, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            except OSError as e:
                raise ServeError(f"cannot write the predictions to {out}: {e.strerror}") from None

    def commit(self) -> None:
        if not self.direct:
            if os.path.exists(self.target):  # the file keeps its permissions
                os.chmod(self.writes_to, stat.S_IMODE(os.stat(self.target).st_mode))
            os.replace(self.writes_to, self.target)

    def discard(self) -> None:
        if not self.direct and os.path.exists(self.writes_to):
            os.remove(self.writes_to)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return os.path.realpath(a) == os.path.realpath(b)


def _result(path: str, returncode: int, stderr_path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        with open(stderr_path, "rb") as f:
            tail = f.read()[-2000:].decode(errors="replace").strip().splitlines()
        raise ServeError(f"the scoring process failed (exit {returncode}): "
                         f"{tail[-1] if tail else 'no message'}") from None


def text(s: dict) -> str:
    """The summary in a few lines."""
    m, t = s["model"], s["training"]
    acc = f", accuracy {s['accuracy']:.4f}" if s.get("accuracy") is not None else ""
    lines = [f"scored {s['rows']:,} rows in {s['score_s']:.2f} s ({s['rows_per_s']:,.0f} rows/s){acc}"]
    if s.get("accuracy_note"):
        lines.append(f"  note: {s['accuracy_note']}")
    trained = f"trained in {t['peak_text']}, " if t.get("peak_mb") else ""
    student = f" (a linear-svm student distilled from {m['distilled_from']})" if m.get("distilled_from") else ""
    lines.append(f"{trained}serves in {s['peak_mb']:.0f} MiB (exact peaks; serving floor {s['floor_mb']:.0f} MiB), "
                 f"{m['model_bytes'] / MiB:.3g} MiB model{student} ({m['storage']} {m['dtype']}, "
                 f"{m['nonzero_weights']:,} of {m['width'] * m['vectors']:,} weights nonzero)")
    chk = (m.get("check") or {}).get("float32_vs_float64") or {}
    if m["dtype"] == "float64" and chk.get("changed_predictions"):
        lines.append(f"  kept float64: float32 weights changed {chk['changed_predictions']} of "
                     f"{m['check']['rows']} checked predictions")
    return "\n".join(lines)
