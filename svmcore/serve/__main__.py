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


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def _write(path: str, result: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    from svmcore.spec.errors import SvmcoreError

    try:
        from svmcore.data import native
        from svmcore.serve import model_file, scoring

        native.lib()
        floor = _status_bytes("VmHWM:")
        model = model_file.load(job["model"])
        out = open(job["out"], "wb") if job.get("out") else sys.stdout.buffer
        try:
            summary = scoring.score_file(model, job["data"], out, job.get("scores", False))
        finally:
            if out is not sys.stdout.buffer:
                out.close()
            else:
                out.flush()
    except BrokenPipeError:  # the reader of the predictions (e.g. `head`) closed them: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _write(job["result"], {"ok": False, "error": "the predictions' reader closed the pipe",
                               "type": "BrokenPipeError"})
        return 1
    except (SvmcoreError, OSError) as e:
        message = str(e) if not isinstance(e, OSError) else f"{e.strerror or e}: {e.filename}"
        _write(job["result"], {"ok": False, "error": message, "type": type(e).__name__})
        return 2
    _write(job["result"], {"ok": True, **summary, "floor_bytes": floor, "peak_bytes": _status_bytes("VmHWM:"),
                           "model_memory_bytes": model.nbytes, "pid": os.getpid(),
                           "modules": sorted(sys.modules) if job.get("list_modules") else None})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
