"""A run's model folder on disk, read as something that may have been tampered with.

- Only regular files directly in the folder are read. A FIFO, a device, a socket, a folder
  or a link (inside the folder or out of it) is refused by ``lstat`` before it is opened,
  and every open is ``O_NOFOLLOW | O_NONBLOCK`` then checked with ``fstat``, so that a file
  swapped for a FIFO after the check still cannot make a read wait forever.
- ``model.json`` is read bounded (``MAX_META_BYTES``; nesting by the decoder's own limit)
  and checked field by field (``check_meta``): a missing field or one of another type is
  one line naming it, never a KeyError or AttributeError.
- ``digests``: each file's size and SHA-256. The export records them in the run's summary
  (``model_export.files``) and ``check_digests`` refuses a folder that disagrees: another
  run's model copied in, a file edited, added or removed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import BinaryIO

from svmcore.spec.errors import SvmcoreError
from svmcore.spec.json_values import JSONValueError, fits, kind_of, loads

DENSE, SPARSE = "dense", "sparse"  # how an export stores its weights: a vector per class, or (column, value) pairs

MAX_META_BYTES = 4 << 20  # model.json holds a few numbers per class; an export writes a few KiB
_CHUNK = 1 << 20
INPUT_PRECISIONS = ("float64", "float32", "float16")
# what a served model's model.json must hold (the reader and the summary use each), and what it may
REQUIRED = {"format": str, "classes": list, "intercept": list, "width": int, "vectors": int, "storage": str,
            "dtype": str, "nonzero_weights": int, "model_bytes": int}
OPTIONAL = {"hashing_bits": int | None, "input_precision": str, "model": str, "distilled_from": str | None,
            "solver": str | None, "loss": str, "dataset": str | None, "sizes": dict, "check": dict}
MAX_HASHING_BITS = 31


class ModelFileError(SvmcoreError):
    """An exported model is missing, damaged, tampered with or of an unknown format."""


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISLNK, "a link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def _refuse(path: str, mode: int) -> ModelFileError:
    return ModelFileError(f"the model's {os.path.basename(path)} is {_kind(mode)}, not a regular file; "
                          "a model folder holds only the files its export wrote")


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file; ModelFileError otherwise (and
    FileNotFoundError if it is not there)."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:  # ELOOP: it became a link since lstat
        raise ModelFileError(f"the model's {os.path.basename(path)} cannot be opened ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(path, mode)
    return os.fdopen(fd, "rb")


def files(folder: str) -> list[str]:
    """The names of the files in the model folder, sorted; ModelFileError for an entry
    that is not a regular file."""
    with os.scandir(folder) as entries:
        found = list(entries)
    for entry in found:
        mode = entry.stat(follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(entry.path, mode)
    return sorted(e.name for e in found)


def digests(folder: str) -> dict[str, dict]:
    """Every file of the folder: ``{name: {"bytes": size, "sha256": hex}}`` (read in 1 MiB
    chunks: the memory it takes does not grow with the model)."""
    out = {}
    for name in files(folder):
        h, size = hashlib.sha256(), 0
        with open_regular(os.path.join(folder, name)) as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                size += len(chunk)
        out[name] = {"bytes": size, "sha256": h.hexdigest()}
    return out


def check_digests(folder: str, recorded: dict[str, dict], run_id: int) -> None:
    """ModelFileError unless the folder holds exactly the files ``recorded`` at export,
    byte for byte."""
    found = digests(folder)
    changed = [f"{n} differs" for n in sorted(set(found) & set(recorded)) if found[n] != recorded[n]]
    changed += [f"{n} is missing" for n in sorted(set(recorded) - set(found))]
    changed += [f"{n} was added" for n in sorted(set(found) - set(recorded))]
    if changed:
        raise ModelFileError(f"the model in {folder} is not the one run {run_id} exported ({', '.join(changed)} "
                             "since its export): it is not served under this run's figures")


def read_json(path: str) -> dict:
    """A JSON object from a regular file of at most MAX_META_BYTES."""
    name = os.path.basename(path)
    with open_regular(path) as f:
        data = f.read(MAX_META_BYTES + 1)
    if len(data) > MAX_META_BYTES:
        raise ModelFileError(f"the model's {name} is larger than {MAX_META_BYTES >> 20} MiB; an export writes a "
                             "few KiB")
    try:
        return loads(data, dict)
    except JSONValueError as e:
        raise ModelFileError(f"the model's {name} cannot be read: {e}") from None


def check_meta(meta: dict, name: str = "model.json") -> None:
    """ModelFileError naming the first field of ``meta`` that is missing, of another type
    or out of range."""
    missing = [k for k in REQUIRED if k not in meta]
    if missing:
        raise ModelFileError(f"the model's {name} has no {', '.join(repr(k) for k in missing)}; export the run again")
    for key, hint in {**REQUIRED, **OPTIONAL}.items():
        if key in meta and not fits(meta[key], hint):
            raise ModelFileError(f"the model's {name}: {key!r} is {kind_of(meta[key])}, not {_wanted(hint)}")
    problem = _range_problem(meta)
    if problem:
        raise ModelFileError(f"the model's {name}: {problem}")


def _wanted(hint) -> str:
    return {str: "text", list: "a list", dict: "an object", int: "a number"}.get(hint, "what an export writes")


def _range_problem(meta: dict) -> str | None:
    nvec = meta["vectors"]
    if meta["storage"] not in (DENSE, SPARSE):
        return f"storage {meta['storage']!r} is neither 'dense' nor 'sparse'"
    if meta["dtype"] not in ("float32", "float64"):
        return f"dtype {meta['dtype']!r} is neither 'float32' nor 'float64'"
    if meta.get("input_precision", "float64") not in INPUT_PRECISIONS:
        return f"input_precision {meta['input_precision']!r} is not one of {', '.join(INPUT_PRECISIONS)}"
    counts = ("width", "vectors", "nonzero_weights", "model_bytes")
    if not all(isinstance(meta[k], int) and not isinstance(meta[k], bool) and meta[k] >= 0 for k in counts):
        return f"{', '.join(counts)} are whole numbers of at least 0"
    if not 1 <= meta["width"] or not 1 <= nvec or meta["nonzero_weights"] > nvec * meta["width"]:
        return "width, vectors or nonzero_weights out of range"
    if not 0 <= (meta.get("hashing_bits") or 0) <= MAX_HASHING_BITS:
        return f"hashing_bits {meta['hashing_bits']} is out of range (0 to {MAX_HASHING_BITS})"
    if len(meta["intercept"]) != nvec or not all(fits(v, float) for v in meta["intercept"]):
        return f"intercept is not {nvec} number(s), one per weight vector"
    if len(meta["classes"]) != max(2, nvec) or not all(fits(v, float) for v in meta["classes"]):
        return f"classes is not {max(2, nvec)} numbers for {nvec} weight vector(s)"
    return None
