"""The data folders and the files in them: uploads (format read from the content),
generated datasets, inspection, and the one confinement every file knob passes: every
file a browser names must lie inside the data folders, after symlinks are followed."""

from __future__ import annotations

import hashlib
import os
import re
import uuid

from svmcore.data import disk
from svmcore.data.files import inspect_dataset, make_dataset
from svmcore.data.readers import FORMAT_EXT, sniff_format
from svmcore.spec.config import shown_name
from svmcore.spec.errors import ConfigError, DataError
from svmcore.spec.knobs import BUILTIN_DATASETS
from svmcore.spec.units import MiB

UPLOAD_LIMIT_MB = 200
DATA_EXT = (".svm", ".svmlight", ".libsvm", ".txt", ".csv", ".npz", ".tsv")  # dropped from upload names
PATH_KNOBS = ("dataset", "test_file")  # knobs naming files: confined to the data folders


def confine(path: str, roots: list[str], knob: str = "dataset") -> str:
    """Resolve ``path`` and refuse anything outside ``roots`` after symlinks are
    followed. A relative path is looked up in each root in turn; the first one that
    names a file inside the roots wins. Returns the real (symlink-free) path."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ConfigError(knob, "a file path is required")
    candidates = [path] if os.path.isabs(path) else [os.path.join(root, path) for root in roots]
    inside = False
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if disk.is_inside(real, *roots):
            inside = True
            if os.path.isfile(real):
                return real
    if inside:
        raise ConfigError(knob, f"no such file in the data folders: {shown_name(os.path.basename(path))}")
    raise ConfigError(knob, "that path is outside the data folders (the data home's datasets and "
                      "uploads folders, and SVMCORE_DATA_DIRS); copy the file there (symlinks that lead outside are refused)")


class DataFolders:
    def __init__(self, home: str):
        self.home = home
        self.cache_dir = os.path.join(home, "cache")
        self.upload_dir = os.path.join(home, "uploads")
        self.data_dir = os.path.join(home, "datasets")
        self.roots = [self.upload_dir, self.data_dir] + [
            os.path.abspath(p) for p in os.environ.get("SVMCORE_DATA_DIRS", "").split(os.pathsep) if p]

    def resolve(self, path: str, knob: str = "dataset") -> str:
        """A user-typed path, confined to the data folders (no '..', no symlinks out)."""
        return confine(path, self.roots, knob)

    def confined(self, values: dict | None) -> dict:
        """A copy of knob values whose file knobs (``PATH_KNOBS``) are resolved inside the
        data folders. Every Lab call that takes knob values from the browser passes them
        through here first, so no file outside the data folders is ever opened."""
        out = dict(values or {})
        for knob in PATH_KNOBS:
            value = out.get(knob)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue  # unset: validate() applies the default or refuses the empty value
            if not isinstance(value, str):
                raise ConfigError(knob, "expected a file name")
            if knob == "dataset" and value.strip() in BUILTIN_DATASETS:
                out[knob] = value.strip()
                continue
            out[knob] = self.resolve(value.strip(), knob)
        return out

    def _upload_base(self, name: str, data: bytes) -> tuple[str, str]:
        """(the name as the user knows it, the saved file's path without its extension):
        the file's name made safe, then its content's hash, so one file uploaded twice
        (from two sessions, or again after a refresh) is one dataset."""
        shown = os.path.basename(name.replace("\\", "/"))[:80] or "the upload"
        stem, ext = os.path.splitext(shown)
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", stem if ext.lower() in DATA_EXT else shown)[:40] or "data"
        return shown, os.path.join(self.upload_dir, f"{safe}-{hashlib.sha256(data).hexdigest()[:8]}")

    @staticmethod
    def _saved(base: str, data: bytes) -> str | None:
        for ext in sorted(set(FORMAT_EXT.values())):
            path = base + ext
            if os.path.isfile(path) and os.path.getsize(path) == len(data):
                with open(path, "rb") as f:
                    if f.read() == data:
                        return path
        return None

    def upload(self, name: str, data: bytes) -> tuple[str, bool]:
        """Store an upload under the data folder with a generated name; returns its path
        and whether it is new (the same file uploaded again is the file saved before).

        The format is read from the content, not the name (libsvm files come as ``a9a``
        or ``a9a.t``); the saved file's extension says the format. Binary files and
        files that do not parse are refused and not kept."""
        if len(data) > UPLOAD_LIMIT_MB * MiB:
            raise DataError(f"the upload is {len(data) / MiB:,.1f} MB, above the {UPLOAD_LIMIT_MB} MB limit; "
                            "for larger data, put the file in a data folder on the server and name it")
        if not data:
            raise DataError("the uploaded file is empty")
        shown, base = self._upload_base(name, data)
        before = self._saved(base, data)
        if before is not None:
            return before, False
        os.makedirs(self.upload_dir, exist_ok=True)
        tmp, path = f"{base}.{uuid.uuid4().hex[:8]}.tmp", None  # .tmp files are never listed
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            path = base + FORMAT_EXT[sniff_format(tmp, by_content=True)]
            os.replace(tmp, path)
            self.inspect(path)
        except BaseException as e:
            for p in (tmp, path):
                if p and os.path.exists(p):
                    os.remove(p)
            if isinstance(e, DataError) and e.path:  # name the file as the user knows it
                raise DataError(e.reason, shown, e.line) from None
            raise
        return path, True

    def generate(self, kind: str, rows: int, features: int | None, nnz_per_row: int, seed: int,
                 fmt: str = "svmlight", positive_fraction: float = 0.5, sort_by_label: bool = False) -> str:
        os.makedirs(self.data_dir, exist_ok=True)
        ext = {"svmlight": ".svm", "npz": ".npz", "text": ".txt"}[fmt]
        feats = features if features is not None else "auto"
        extra = (f"-p{positive_fraction:g}" if positive_fraction != 0.5 else "") + ("-sorted" if sort_by_label else "")
        path = os.path.join(self.data_dir, f"{kind}-{rows}x{feats}-s{seed}{extra}{ext}")
        make_dataset(kind, rows=rows, features=features, nnz_per_row=nnz_per_row, seed=seed, out=path, fmt=fmt,
                     positive_fraction=positive_fraction, sort_by_label=sort_by_label)
        return path

    def inspect(self, dataset: str, **knobs) -> dict:
        values = self.confined({**knobs, "dataset": dataset})
        ds = values.pop("dataset")
        return inspect_dataset(ds, cache_dir=self.cache_dir, **values)

    def files(self) -> list[str]:
        """Files in the data folders, newest first. A symlink is listed only if it leads
        to a file inside the data folders (never one outside, nor a broken one)."""
        found = []
        for root in self.roots:
            if os.path.isdir(root):
                for name in os.listdir(root):
                    p = os.path.join(root, name)
                    if name.endswith(".tmp") or not disk.is_inside(p, *self.roots):
                        continue
                    if os.path.isfile(p):
                        found.append(p)
        return sorted(found, key=os.path.getmtime, reverse=True)
