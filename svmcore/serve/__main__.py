"""The scoring process: ``python -m svmcore.serve JOB.json``.

JOB.json: ``{"model": MODEL_DIR, "data": FILE, "out": FILE or null (stdout),
"scores": bool, "result": RESULT.json}``. Loads only numpy and the native library,
scores the file, and writes RESULT.json: the scoring summary and this process's own
memory from the kernel (VmHWM: its exact peak; VmHWM before the model is loaded: the
floor), or the error. Exit status 0, or 2 for bad input (the message in RESULT.json).
"""

from __future__ import annotations

import json
import os
import sys

from svmcore.data.proc_status import status_kib
from svmcore.spec.errors import SvmcoreError


def _write(path: str, result: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)


class _Output:
    """The predictions' file (or stdout): a write that fails (a full disk, ``/dev/full``)
    names the file the user gave, not the temporary one, in one line."""

    def __init__(self, job: dict):
        self.name = job.get("out_name") or job.get("out")
        self.f = sys.stdout.buffer
        if job.get("out"):
            self._do(lambda: setattr(self, "f", open(job["out"], "wb")))

    def write(self, data: bytes) -> None:
        self._do(self.f.write, data)

    def close(self) -> None:
        self._do(self.f.flush if self.f is sys.stdout.buffer else self.f.close)

    def _do(self, call, *args) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            where = f"to {self.name}" if self.name else "to stdout"
            raise SvmcoreError(f"cannot write the predictions {where}: {e.strerror or e}") from None


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    try:
        from svmcore.data.native import binding
        from svmcore.serve import model_file, scoring

        binding.library()
        floor = status_kib(b"VmHWM:")[0] * 1024
        model = model_file.load(job["model"])
        out = _Output(job)
        try:
            summary = scoring.score_file(model, job["data"], out, job.get("scores", False))
        finally:
            out.close()
    except BrokenPipeError:  # the reader of the predictions (e.g. `head`) closed them: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _write(job["result"], {"ok": False, "error": "the predictions' reader closed the pipe",
                               "type": "BrokenPipeError"})
        return 1
    except (SvmcoreError, OSError) as e:
        message = str(e) if not isinstance(e, OSError) else f"{e.strerror or e}" + (f": {e.filename}" if e.filename else "")
        _write(job["result"], {"ok": False, "error": message, "type": type(e).__name__})
        return 2
    [peak_kib] = status_kib(b"VmHWM:")
    _write(job["result"], {"ok": True, **summary, "floor_bytes": floor, "peak_bytes": peak_kib * 1024,
                           "model_memory_bytes": model.nbytes, "pid": os.getpid(),
                           "modules": sorted(sys.modules) if job.get("list_modules") else None})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
