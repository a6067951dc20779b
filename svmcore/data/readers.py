"""Readers for data files, chunk by chunk, with errors that name the line.

Formats: svmlight/libsvm (feature ids start at 1), CSV with a header naming a label
column, ``.npz`` (CSR arrays ``data, indices, indptr, shape`` or a dense ``X``, plus
``y``), and raw text (``label<TAB>text``, vectorised by feature hashing).

The fast path hands whole chunks to compiled parsers; only when one fails do we go
line by line to say which line is wrong and why.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from svmcore.data import nativesvm
from svmcore.data.lazy_sparse import sp
from svmcore.data.svmlight_lines import explain_svmlight_line, why_not_a_number
from svmcore.spec.choices import Parser
from svmcore.spec.config import shown
from svmcore.spec.registry import PARSERS
from svmcore.spec.errors import DataError
from svmcore.spec.knobs import MAX_FEATURES

LABEL_COLUMNS = ("label", "target", "y", "class")
TEXT_DEFAULT_BITS = 20
MAX_NPZ_UNCOMPRESSED = 8 * 2**30
MAX_NPZ_RATIO = 200
MAX_NPZ_DENSE_MEMBER = 16 * 2**20  # a member may pack tighter than MAX_NPZ_RATIO up to this size
ZIP_MAGIC = b"PK\x03\x04"  # an .npz is a zip archive
FORMAT_EXT = {"svmlight": ".svm", "csv": ".csv", "text": ".txt", "npz": ".npz"}  # a file name for each format
EXT_FORMAT = {".npz": "npz", ".csv": "csv", ".svm": "svmlight", ".svmlight": "svmlight", ".libsvm": "svmlight"}
BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark: editors on Windows start text files with it; every reader skips it


@dataclass(frozen=True)
class Chunk:
    X: sp.csr_matrix | np.ndarray
    y: np.ndarray
    first_line: int  # 1-based line (or row, for npz) of the chunk's first row


def sniff_format(path: str, by_content: bool = False) -> str:
    """svmlight, csv, npz or text, from the extension (unless ``by_content``) and
    else from the content: the zip magic of an .npz, then the first data line. Files
    without an extension (libsvm's ``a9a``) or with another one (``a9a.t``) are
    sniffed; binary files are refused with a DataError."""
    if not by_content and (fmt := EXT_FORMAT.get(os.path.splitext(path)[1].lower())):
        return fmt
    with open(path, "rb") as f:
        head = f.read(65536)
    if head.startswith(ZIP_MAGIC):
        return "npz"
    head = head.removeprefix(BOM)
    why = _binary(head)
    if why:
        raise DataError(f"is not a dataset: {why}; data files are UTF-8 text (svmlight/libsvm, CSV with a "
                        "label column, raw text) or .npz", path)
    for raw in head.splitlines():
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        if b"\t" in line and b":" not in line.split(b"\t", 1)[0]:
            rest = line.split(b"\t", 1)[1].split()
            if rest and all(re.fullmatch(rb"(qid:)?\d+:\S+", t) for t in rest[:3]):
                return "svmlight"  # svmlight with TABs between fields
            return "text"
        tokens = line.split()
        if len(tokens) >= 1 and all(b":" in t for t in tokens[1:2]) and b"," not in tokens[0]:
            return "svmlight"
        if b"," in line:
            return "csv"
        return "text" if b"\t" in line else "svmlight"
    raise DataError("the file has no data rows", path)


def _binary(head: bytes) -> str | None:
    """Why the first bytes of a file are not text, or None if they look like text. A
    stray bad byte on some line is left to the readers, which name the line."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "it is UTF-16 text (save it as UTF-8)"
    if b"\x00" in head:
        return "it holds binary data"
    controls = sum(head.count(bytes([c])) for c in (*range(0, 9), *range(14, 32), 127) if c != 27)
    invalid = head[:-4].decode("utf-8", errors="replace").count("\ufffd")  # a cut last character is fine
    if controls + invalid > max(2, len(head) // 10):
        return "it holds binary data"
    return None


def _data_lines(path: str, chunk_rows: int, span: tuple | None = None) -> Iterator[tuple[list[bytes], list[int]]]:
    """Non-empty, non-comment lines in groups of ``chunk_rows``, with 1-based line numbers;
    of ``span`` ``(start, end, first_line)`` only, if given (``svmlight_lines.iter_blocks``)."""
    lines: list[bytes] = []
    numbers: list[int] = []
    start, end, first_line = span or (0, None, 1)
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start if end is not None else None
        for no, raw in enumerate(f, first_line):
            if left is not None:
                if left <= 0:
                    break
                left -= len(raw)
            s = raw.rstrip(b"\r\n")
            if no == 1:
                s = s.removeprefix(BOM)
            head = s.lstrip()
            if not head or head.startswith(b"#"):
                continue
            lines.append(s)
            numbers.append(no)
            if len(lines) == chunk_rows:
                yield lines, numbers
                lines, numbers = [], []
    if lines:
        yield lines, numbers


# ---------------------------------------------------------------- svmlight

def _first_bad_line(lines: list[bytes], numbers: list[int], path: str, fallback: str,
                    explain=explain_svmlight_line) -> DataError:
    """The error of the first line ``explain`` finds wrong, else ``fallback`` for the file."""
    for line, no in zip(lines, numbers):
        why = explain(line)
        if why:
            return DataError(why, path, no)
    return DataError(fallback, path)


def parse_svmlight_lines(lines: list[bytes], numbers: list[int], path: str,
                         n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    from sklearn.datasets import load_svmlight_file

    blob = b"\n".join(lines)
    try:
        X, y = load_svmlight_file(io.BytesIO(blob), zero_based=False, n_features=None, dtype=np.float64)
    except (ValueError, OverflowError) as e:
        raise _first_bad_line(lines, numbers, path, str(e)) from None
    if X.shape[0] != len(lines):
        raise _first_bad_line(lines, numbers, path, "a line could not be read as svmlight")
    if X.shape[1] > MAX_FEATURES:
        row = _row_of_max_index(X)
        raise DataError(f"declares feature {X.shape[1]:,}, above the limit of {MAX_FEATURES:,} features",
                        path, numbers[row])
    if not np.isfinite(X.data).all() or not np.isfinite(y).all():
        bad_rows = set(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[~np.isfinite(X.data)].tolist())
        bad_rows |= set(np.flatnonzero(~np.isfinite(y)).tolist())
        row = min(bad_rows)
        raise DataError("contains a NaN or infinite value", path, numbers[row])
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    if n_features is not None:
        if X.shape[1] > n_features:
            row = _row_of_max_index(X)
            raise DataError(f"uses feature {X.shape[1]:,}, more than the {n_features:,} features "
                            "seen when the file was scanned", path, numbers[row])
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    return X, y


def _row_of_max_index(X: sp.csr_matrix) -> int:
    pos = int(np.argmax(X.indices))
    return int(np.searchsorted(X.indptr, pos, side="right") - 1)


# ---------------------------------------------------------------- csv

def _csv_header(path: str) -> tuple[list[str], int, int]:
    """Column names, index of the label column, and the header's line number."""
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            s = (raw.removeprefix(BOM) if no == 1 else raw).strip()
            if not s or s.startswith(b"#"):
                continue
            try:
                header = s.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError("the header is not valid UTF-8 text", path, no) from None
            names = [c.strip().strip('"').strip() for c in header.split(",")]
            lowered = [n.lower() for n in names]
            for cand in LABEL_COLUMNS:
                if cand in lowered:
                    return names, lowered.index(cand), no
            hint = ""
            if len(names) == 1 and any(c in header for c in ";\t|"):
                hint = " The file does not look comma-separated; CSV files must use ','."
            raise DataError(f"no label column: the header must name one of {', '.join(LABEL_COLUMNS)}; "
                            f"found {', '.join(shown(n) for n in names[:8])}.{hint}", path, no)
    raise DataError("the file has no data rows", path)


def _explain_csv_line(line: bytes, n_cols: int) -> str | None:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"is not valid UTF-8 text (byte {e.start})"
    fields = text.split(",")
    if len(fields) != n_cols:
        hint = " (wrong separator?)" if len(fields) == 1 and any(c in text for c in ";\t|") else ""
        return f"has {len(fields)} fields, the header has {n_cols}{hint}"
    for i, f in enumerate(fields):
        f = f.strip().strip('"')
        if not f:
            return f"field {i + 1} is empty"
        why = why_not_a_number(f, f"field {i + 1} ({shown(f)})")
        if why:
            return why
    return None


def parse_csv_lines(lines: list[bytes], numbers: list[int], path: str, n_cols: int, label_col: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    try:
        arr = np.loadtxt([ln.decode("utf-8").replace('"', "") for ln in lines], delimiter=",",
                         dtype=np.float64, ndmin=2)
        if arr.shape[1] != n_cols or not np.isfinite(arr).all():
            raise ValueError
    except ValueError:  # UnicodeDecodeError included
        raise _first_bad_line(lines, numbers, path, "could not be read as numeric CSV",
                              lambda line: _explain_csv_line(line, n_cols)) from None
    y = arr[:, label_col].copy()
    X = np.delete(arr, label_col, axis=1)
    return X, y


# ---------------------------------------------------------------- text

def parse_text_lines(lines: list[bytes], numbers: list[int], path: str, bits: int
                     ) -> tuple[sp.csr_matrix, np.ndarray]:
    from sklearn.feature_extraction.text import HashingVectorizer

    labels, texts = [], []
    for line, no in zip(lines, numbers):
        try:
            s = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"is not valid UTF-8 text (byte {e.start})", path, no) from None
        label, sep, text = s.partition("\t")
        if not sep:
            raise DataError("has no TAB; raw text lines are 'label<TAB>text'", path, no)
        label = label.strip()
        if not label:
            raise DataError("has an empty label", path, no)
        labels.append(label)
        texts.append(text)
    vec = HashingVectorizer(n_features=1 << bits, alternate_sign=False, norm="l2", dtype=np.float64)
    X = vec.transform(texts).tocsr()
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    return X, np.array(labels)


# ---------------------------------------------------------------- npz

def load_npz(path: str) -> tuple[sp.csr_matrix | np.ndarray, np.ndarray]:
    """Load and check an .npz dataset. No pickles: object arrays are refused."""
    import zipfile  # here, not at the top: the lean worker imports this module (zipfile costs 1.3 MiB)
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError):
        raise DataError("is not a valid .npz (zip) file", path) from None
    _check_npz_sizes(path, infos)
    _check_npz_headers(path, infos)
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
            if "y" not in keys:
                raise DataError(f"has no 'y' array of labels (found: {', '.join(sorted(keys)) or 'none'})", path)
            y = np.asarray(z["y"])
            if {"data", "indices", "indptr", "shape"} <= keys:
                raw_shape = np.asarray(z["shape"])
                if raw_shape.shape != (2,) or raw_shape.dtype.kind not in "iu":
                    raise DataError("'shape' must hold two whole numbers (rows, features)", path)
                shape = tuple(int(v) for v in raw_shape)
                if len(shape) != 2 or shape[1] > MAX_FEATURES or shape[1] < 1:
                    raise DataError(f"declares shape {shape}; at most {MAX_FEATURES:,} features", path)
                data = np.asarray(z["data"], dtype=np.float64)
                indices = np.asarray(z["indices"])
                indptr = np.asarray(z["indptr"])
                if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
                    raise DataError("'indices' and 'indptr' must hold whole numbers", path)
                X = _checked_csr(data, indices, indptr, shape, path)
            elif "X" in keys:
                X = np.asarray(z["X"])
                if X.ndim != 2 or X.dtype.kind not in "fiub":
                    raise DataError("array 'X' must be a 2-D numeric matrix", path)
                X = X.astype(np.float64, copy=False)
                if not np.isfinite(X).all():
                    row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
                    raise DataError(f"row {row + 1} of 'X' has a NaN or infinite value", path)
            else:
                raise DataError("needs either CSR arrays (data, indices, indptr, shape) or a dense 'X'", path)
    except ValueError as e:
        if isinstance(e, DataError):
            raise
        raise DataError(f"could not be read safely: {e}", path) from None
    except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError, TypeError,
            MemoryError) as e:
        raise DataError(f"could not be read: {e}", path) from None
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise DataError(f"'y' has {y.shape[0] if y.ndim else 0} labels for {X.shape[0]} rows", path)
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise DataError(f"label of row {int(np.flatnonzero(~np.isfinite(y))[0]) + 1} is NaN or infinite", path)
    if y.dtype.kind not in "fiubU":
        raise DataError("'y' must hold numbers or text labels", path)
    return X, y


def _check_npz_sizes(path: str, infos) -> None:
    """Refuse a possible zip bomb from the sizes the zip declares, before reading
    anything: each member on its own (a tightly packed member must not hide behind
    a stored one of random bytes), then all of them together."""
    for i in infos:
        size, packed = i.file_size, max(1, i.compress_size)
        if size > MAX_NPZ_UNCOMPRESSED or (size > MAX_NPZ_DENSE_MEMBER and size / packed > MAX_NPZ_RATIO):
            raise DataError(f"array {shown(i.filename.removesuffix('.npy'))} would expand to {size / 2**20:,.0f} MiB "
                            f"from {packed / 2**20:,.1f} MiB, which is refused as a possible zip bomb "
                            "(save large arrays uncompressed, with np.savez)", path)
    total = sum(i.file_size for i in infos)
    packed = max(1, sum(i.compress_size for i in infos))
    if total > MAX_NPZ_UNCOMPRESSED or (total > 64 * 2**20 and total / packed > MAX_NPZ_RATIO):
        raise DataError(f"would expand to {total / 2**20:,.0f} MiB from {packed / 2**20:,.1f} MiB "
                        "(refused as a possible zip bomb)", path)


def _check_npz_headers(path: str, infos) -> None:
    """Each member's declared array must fit in the bytes it holds, and hold no
    Python objects: refused before anything is allocated."""
    import zipfile  # see load_npz
    try:
        with zipfile.ZipFile(path) as z:
            for info in infos:
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as member:
                    shape, _, dtype = npy_header(member)
                if dtype.hasobject:
                    raise DataError(f"array {shown(info.filename[:-4])} holds Python objects; "
                                    "pickled data is refused", path)
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if declared > info.file_size:
                    raise DataError(f"array {shown(info.filename[:-4])} declares {declared:,} bytes but holds "
                                    f"{info.file_size:,}", path)
    except DataError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError, TypeError) as e:
        raise DataError(f"could not be read safely: {e}", path) from None


def npy_header(f) -> tuple:
    """(shape, fortran order, dtype) from an .npy file's header, the array itself not read."""
    if np.lib.format.read_magic(f) == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    return np.lib.format.read_array_header_2_0(f)


def _checked_csr(data, indices, indptr, shape, path) -> sp.csr_matrix:
    n_rows, n_cols = shape
    if indptr.ndim != 1 or indptr.shape[0] != n_rows + 1:
        raise DataError(f"'indptr' has {indptr.shape[0]} entries; shape needs {n_rows + 1}", path)
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != data.shape[0] or data.shape != indices.shape:
        raise DataError("'indptr', 'indices' and 'data' are inconsistent", path)
    if indices.size and (indices.min() < 0 or indices.max() >= n_cols):
        raise DataError(f"a column index is outside 0..{n_cols - 1}", path)
    if not np.isfinite(data).all():
        pos = int(np.flatnonzero(~np.isfinite(data))[0])
        row = int(np.searchsorted(indptr, pos, side="right") - 1)
        raise DataError(f"row {row + 1} has a NaN or infinite value", path)
    X = sp.csr_matrix((data, indices.astype(np.int32), indptr.astype(np.int64)), shape=(n_rows, n_cols))
    X.sum_duplicates()
    return X


# ---------------------------------------------------------------- one entry point

def iter_file_chunks(path: str, chunk_rows: int, fmt: str | None = None, n_features: int | None = None,
                     text_bits: int = TEXT_DEFAULT_BITS, parser: str = "sklearn", span: tuple | None = None
                     ) -> Iterator[Chunk]:
    """Yield the rows of a data file in chunks; raise DataError at the first bad line,
    or if the file holds no data rows at all. ``parser='native'`` parses svmlight with the
    compiled parser (chunks are then its blocks, whatever ``chunk_rows``). ``span``
    ``(start, end, first_line)``: the data lines in bytes [start, end) of a text file only,
    ``start`` being where file line ``first_line`` (a data line) starts."""
    rows = 0
    fmt = fmt or sniff_format(path)
    if fmt == "svmlight" and PARSERS[Parser(parser)].compiled:
        chunks = _iter_svmlight_fast(path, n_features, span)
    else:
        chunks = _iter_format(path, chunk_rows, fmt, n_features, text_bits, span)
    for chunk in chunks:
        rows += chunk.X.shape[0]
        yield chunk
    if rows == 0:
        raise DataError("the file has no data rows", path)


def _iter_svmlight_fast(path: str, n_features: int | None, span: tuple | None = None) -> Iterator[Chunk]:
    """Rows parsed by the compiled parser (``nativesvm``; ``span``: a byte range of the file, line-aligned)."""
    for b in nativesvm.iter_parsed_blocks(path, MAX_FEATURES, span=span):
        width = n_features if n_features is not None else max(1, b.max_id)
        if b.max_id > width:
            row = int(np.searchsorted(b.indptr, int(np.argmax(b.indices)), side="right") - 1)
            raise DataError(f"uses feature {b.max_id:,}, more than the {width:,} features seen when "
                            "the file was scanned", path, _line_of_row(path, b.first_row_line, row))
        X = sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.n_rows, width), copy=False)
        X.indices, X.indptr = b.indices, b.indptr  # no copy: int32 indices and int64 indptr kept as they are
        yield Chunk(X, b.y, b.first_row_line)


def _line_of_row(path: str, first_line: int, row: int) -> int | None:
    """The file line of the ``row``-th data row at or after ``first_line`` (slow; errors only)."""
    seen = -1
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            if no < first_line:
                continue
            head = raw.strip()
            if head and not head.startswith(b"#"):
                seen += 1
                if seen == row:
                    return no
    return None


def _iter_format(path, chunk_rows, fmt, n_features, text_bits, span=None) -> Iterator[Chunk]:
    if fmt == "svmlight":
        for lines, numbers in _data_lines(path, chunk_rows, span):
            X, y = parse_svmlight_lines(lines, numbers, path, n_features)
            yield Chunk(X, y, numbers[0])
    elif fmt == "csv":
        names, label_col, _ = _csv_header(path)
        skipped_header = span is not None  # a span starts at a data row, after the header
        for lines, numbers in _data_lines(path, chunk_rows, span):
            if not skipped_header:
                lines, numbers = lines[1:], numbers[1:]
                skipped_header = True
                if not lines:
                    continue
            X, y = parse_csv_lines(lines, numbers, path, len(names), label_col)
            yield Chunk(X, y, numbers[0])
    elif fmt == "text":
        for lines, numbers in _data_lines(path, chunk_rows, span):
            X, y = parse_text_lines(lines, numbers, path, text_bits)
            yield Chunk(X, y, numbers[0])
    elif fmt == "npz":
        X, y = load_npz(path)
        for start in range(0, X.shape[0], chunk_rows):
            yield Chunk(X[start:start + chunk_rows], y[start:start + chunk_rows], start + 1)
    else:
        raise DataError(f"unknown format {fmt!r}", path)
