"""The native (C) parser against scikit-learn: the same cases as test_fastsvm.py
(the numba parser), so both compiled parsers give the same results and errors."""


from __future__ import annotations

import io
import random
import struct
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svmcore.data import nativesvm as fastsvm
from svmcore.data.nativesvm import (
    BlockError,
    iter_parsed_blocks,
    iter_svmlight_blocks,
    parse_block,
)
from svmcore.data.svmlight_lines import parse_line_python

MAXF = 2**26
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def compiled():
    fastsvm.warm_up()  # compile (or load numba's cache) once, outside the timed tests


# ---------------------------------------------------------------- helpers

def sklearn_parse(blob: bytes):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(io.BytesIO(blob), zero_based=False, dtype=np.float64)
    return X, y


def assert_same_as_sklearn(blob: bytes, max_features: int = MAXF):
    data, indices, indptr, y, n_rows, max_id = parse_block(blob, max_features)
    X, ys = sklearn_parse(blob)
    assert data.dtype == np.float64 and indices.dtype == np.int32 and indptr.dtype == np.int64
    assert n_rows == X.shape[0] == y.shape[0]
    assert np.array_equal(indptr, X.indptr)
    assert np.array_equal(indices, X.indices)
    # bit for bit: -0.0 vs 0.0 and every last ulp
    assert np.array_equal(data.view(np.uint64), np.asarray(X.data, np.float64).view(np.uint64))
    assert np.array_equal(y.view(np.uint64), ys.view(np.uint64))
    # sklearn makes a file without features one column wide
    assert max(max_id, 1) == X.shape[1]
    return data, indices, indptr, y, n_rows, max_id


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# ---------------------------------------------------------------- identity with sklearn

FORMATS = [repr, "%.8g".__mod__, "%.16g".__mod__, "%.17g".__mod__, "%.3e".__mod__, "%.0f".__mod__,
           lambda v: "%.6f" % v]

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
values = st.one_of(finite, st.floats(-1, 1), st.integers(-1000, 1000).map(float), st.just(-0.0),
                   st.just(0.0), st.floats(min_value=1e-320, max_value=1e-300))


def _text(fmt, v: float) -> str:
    s = fmt(v)
    return s if np.isfinite(float(s)) else repr(v)  # '%.3e' % 1.797e308 rounds up to inf


@st.composite
def svm_files(draw):
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t", "# a comment: 1:2", "  # x 3:4"])))
            continue
        fmt = draw(st.sampled_from(FORMATS))
        label = _text(fmt, draw(values))
        ids = sorted(draw(st.sets(st.integers(1, 3000), max_size=8)))
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
        toks = [label]
        if draw(st.booleans()) and draw(st.booleans()):
            toks.append("qid:%d" % draw(st.integers(0, 99)))
        toks += [f"{i}:{_text(fmt, draw(values))}" for i in ids]
        line = draw(st.sampled_from(["", " ", "\t"])) + sep.join(toks)
        line += draw(st.sampled_from(["", " ", "\r", " # trailing 5:6", "#c"]))
        lines.append(line)
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = end.join(lines) + draw(st.sampled_from(["", end]))
    return text.encode()


@PROPERTY
@given(svm_files())
def test_random_valid_files_equal_sklearn(blob):
    try:
        sklearn_parse(blob)
    except ValueError:  # no data line at all: nothing to compare
        data, indices, indptr, y, n_rows, max_id = parse_block(blob, MAXF)
        assert n_rows == 0
        return
    assert_same_as_sklearn(blob)


@pytest.mark.parametrize("fmt", ["repr", "%.8g", "%.16g", "%.17g"])
def test_random_floats_bit_for_bit(fmt):
    rng = np.random.default_rng(7)
    n = 40000
    x = np.concatenate([rng.standard_normal(n // 4), rng.random(n // 4),
                        rng.random(n // 4) * 10.0 ** rng.integers(-300, 300, n // 4),
                        rng.integers(0, 2**64, n // 4, dtype=np.uint64).view(np.float64)])
    x = x[np.isfinite(x)]
    text = [repr(float(v)) if fmt == "repr" else fmt % v for v in x]
    blob = "".join(f"{s} 1:{s}\n" for s in text).encode()
    before = dict(fastsvm.stats)
    data, indices, indptr, y, n_rows, _ = parse_block(blob, 2)
    expected = np.array([float(s) for s in text])
    assert np.array_equal(data.view(np.uint64), expected.view(np.uint64))
    assert np.array_equal(y.view(np.uint64), expected.view(np.uint64))
    assert fastsvm.stats == before, "float64 text (<= 17 digits) must never leave the compiled path"


def test_hard_float_cases_match_python():
    cases = ["0", "-0", "-0.0", "0e999", "1e-400", "4.9406564584124654e-324", "2.4703282292062327e-324",
             "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072014e-308",
             "2.2250738585072012e-308", "1.7976931348623157e308", "1.7976931348623158e308",
             "9007199254740993", "9007199254740992.5", "9007199254740995", ".5", "5.", "+1", "1E+3",
             "1e-3", "0.1", "0.3", "1e23", "8.98846567431158e307", "7.2057594037927933e16",
             "123456789012345678901234567890", "0.000000000000000000000000000001234",
             "1" + "0" * 30 + "e-30", "9999999999999999999", "18446744073709551615", "18446744073709551616e-20",
             # exact halfway points between two doubles, written out in full (> 19 digits)
             "9007199254740993.000000000000000000000001", "9007199254740992.999999999999999999999999",
             "1.00000000000000011102230246251565404236316680908203125",
             "1.00000000000000011102230246251565404236316680908203124",
             "1.00000000000000011102230246251565404236316680908203126"]
    blob = "".join(f"0 1:{c}\n" for c in cases).encode()
    data, *_ = parse_block(blob, 1)
    for c, v in zip(cases, data):
        assert bits(v) == bits(float(c)), c


def test_random_decimal_strings_match_python():
    rnd = random.Random(3)
    cases = []
    for _ in range(30000):
        nd = rnd.randint(1, 24)
        digits = "".join(rnd.choice("0123456789") for _ in range(nd))
        pt = rnd.randint(0, nd)
        s = (digits[:pt] + "." + digits[pt:]).strip(".") or "0"
        if rnd.random() < 0.6:
            s += "e%d" % rnd.randint(-340, 310)
        if rnd.random() < 0.3:
            s = "-" + s
        v = float(s)
        if np.isfinite(v):
            cases.append((s, v))
    blob = "".join(f"1 7:{s}\n" for s, _ in cases).encode()
    data, *_ = parse_block(blob, 7)
    expected = np.array([v for _, v in cases])
    assert np.array_equal(data.view(np.uint64), expected.view(np.uint64))


def test_dump_svmlight_file_round_trip_stays_compiled():
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(1)
    X = sp.random(3000, 5000, density=0.01, format="csr", random_state=rng)
    X.data = np.concatenate([rng.random(X.nnz // 2), rng.standard_normal(X.nnz - X.nnz // 2) * 1e5])
    y = rng.integers(0, 2, 3000) * 2.0 - 1.0
    f = io.BytesIO()
    dump_svmlight_file(X, y, f, zero_based=False, comment="made by a test")
    before = dict(fastsvm.stats)
    data, indices, indptr, yy, n_rows, max_id = assert_same_as_sklearn(f.getvalue())
    assert fastsvm.stats == before
    printed = np.array([float("%.16g" % v) for v in X.data])  # what dump_svmlight_file writes
    assert np.array_equal(data, printed) and np.array_equal(yy, y)


def test_explicit_zero_negative_zero_and_empty_rows():
    blob = b"1 2:0 3:-0.0 4:-0\n-1\n2 \n+1 5:.5\n"
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(blob)
    assert n_rows == 4 and max_id == 5
    assert [bits(v) for v in data[:3]] == [0, 1 << 63, 1 << 63]
    assert indptr.tolist() == [0, 3, 3, 3, 4]


# ---------------------------------------------------------------- comments, blank lines, CRLF, qid

def test_comments_blank_lines_crlf_and_qid():
    blob = (b"# header 1:2\r\n"
            b"\r\n"
            b"1 qid:3 1:0.5 7:2 # comment 9:9\r\n"
            b"   \t\r\n"
            b"\t-1\tqid:abc\t2:1e-3#c\r\n"
            b"  # indented comment\n"
            b"2 3:4")
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(blob)
    assert n_rows == 3 and max_id == 7
    assert y.tolist() == [1.0, -1.0, 2.0]
    assert indices.tolist() == [0, 6, 1, 2]
    assert data.tolist() == [0.5, 2.0, 1e-3, 4.0]


@pytest.mark.parametrize("blob", [b"", b"\n\n", b"# only\n#comments", b"   \r\n\t"])
def test_no_rows(blob):
    data, indices, indptr, y, n_rows, max_id = parse_block(blob, MAXF)
    assert n_rows == 0 and max_id == 0 and indptr.tolist() == [0] and data.size == 0 and y.size == 0


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "ndarray", "readonly memoryview"])
def test_input_kinds(kind):
    blob = b"1 1:1 2:2\n-1 3:3\n"
    buf = {"bytes": blob, "bytearray": bytearray(blob), "memoryview": memoryview(bytearray(blob)),
           "ndarray": np.frombuffer(blob, np.uint8).copy(),
           "readonly memoryview": memoryview(blob)}[kind]
    data, indices, indptr, y, n_rows, max_id = parse_block(buf, 10)
    assert data.tolist() == [1, 2, 3] and indices.tolist() == [0, 1, 2] and y.tolist() == [1, -1]


# ---------------------------------------------------------------- invalid lines

GOOD = b"1 1:1\n# comment\n\n-1 2:0.5\n"  # 4 physical lines, 2 data lines before the bad one

INVALID = {
    "label not a number": b"abc 1:1",
    "label is a pair": b"1:2 3:4",
    "label with comma": b"1,2 3:1",
    "missing colon": b"1 3",
    "id 0": b"1 0:1",
    "negative id": b"1 -3:1",
    "unsorted ids": b"1 3:1 2:1",
    "duplicate ids": b"1 3:1 3:2",
    "id above max_features": b"1 1:1 1500000000:1",
    "huge id": b"1 99999999999999999999999:1",
    "nan value": b"1 3:nan",
    "inf value": b"1 3:inf",
    "-inf value": b"1 3:-inf",
    "nan label": b"nan 1:1",
    "inf label": b"inf",
    "overflowing value": b"1 3:1e999",
    "overflowing label": b"-1.8e308 1:1",
    "garbage bytes": b"\xff\xfe 1:1",
    "non-utf8 value": b"1 3:\xc3\xa9",
    "nul byte": b"1 3:1\x00",
    "two colons": b"1 3:1:2",
    "comma separated pairs": b"1 3:1,4:2",
    "exponent without digits": b"1 3:1e",
    "lone dot": b"1 3:.",
    "lone minus": b"1 3:-",
    "empty id": b"1 :1",
    "space before colon": b"1 3 :1",
    "hex value": b"1 3:0x10",
    "qid not first": b"1 2:1 qid:4 3:1",
    "qid without colon": b"1 qid 3:1",
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_line_is_named(name):
    bad = INVALID[name]
    blob = GOOD + bad + b"\n1 1:1\n"
    with pytest.raises(BlockError) as ei:
        parse_block(blob, MAXF)
    e = ei.value
    assert (e.line_index, e.data_line_index, e.line, e.offset) == (4, 2, bad, len(GOOD))
    assert e.reason


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_line_at_the_end_without_newline(name):
    with pytest.raises(BlockError) as ei:
        parse_block(b"\r\n" + INVALID[name], MAXF)
    assert (ei.value.line_index, ei.value.data_line_index, ei.value.line) == (1, 0, INVALID[name])


@pytest.mark.parametrize("tail", [b"1 3:", b"1 3", b"1 3:1e-", b"-", b"1 qid", b"1 3:+"])
def test_truncated_final_line(tail):
    with pytest.raises(BlockError) as ei:
        parse_block(b"1 1:1\n" + tail, MAXF)
    assert ei.value.line_index == 1 and ei.value.line == tail


def test_crlf_line_is_reported_without_its_line_ending():
    with pytest.raises(BlockError) as ei:
        parse_block(b"1 1:1\r\n1 2:x\r\n1 1:1\r\n", MAXF)
    assert ei.value.line == b"1 2:x" and ei.value.line_index == 1


def test_huge_id_is_refused_quickly_without_allocating():
    blob = b"1 1:1 1500000000:1"
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(BlockError):
        parse_block(blob, MAXF)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 1 << 20


def test_max_features_is_a_hard_bound():
    data, indices, *_ = parse_block(b"1 10:1\n", 10)
    assert indices.tolist() == [9]
    with pytest.raises(BlockError):
        parse_block(b"1 11:1\n", 10)


@pytest.mark.parametrize("blob, expected", [
    (b"1 +3:1\n", ([2], [1.0], [1.0])),                            # int() accepts a sign
    (b"1 00000000003:2.5\n", ([2], [2.5], [1.0])),                 # > 10 digits, leading zeros
    (b"1_0 2:1_5\n", ([1], [15.0], [10.0])),                        # float() accepts underscores
    (b"1 2:" + b"1" * 30 + b"\n", ([1], [float("1" * 30)], [1.0])),  # long mantissa
])
def test_lines_the_strict_grammar_refuses_but_python_accepts(blob, expected):
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(blob)
    assert (indices.tolist(), data.tolist(), y.tolist()) == expected


# ---------------------------------------------------------------- fuzz: never crash, never disagree

FRAGMENTS = [b"1", b"-1", b"+1", b"0", b"3", b"1500000000", b"99999999999999999999", b".", b"e", b"-", b"E5",
             b" ", b"  ", b"\t", b"\n", b"\r\n", b"\r", b":", b",", b";", b"#", b"nan", b"inf", b"qid:", b"qid",
             b"\xff", b"\xc3", b"\x00", b"\x0b", b"abc", b"1:1", b"2:0.5", b"0:1", b"-3:1", b"7:1e-3", b"_"]


@PROPERTY
@given(st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(FRAGMENTS), max_size=60).map(b"".join)))
def test_fuzz_blockerror_or_same_as_sklearn(blob):
    try:
        ours = parse_block(blob, MAXF)
    except BlockError as e:
        assert blob.split(b"\n")[e.line_index].rstrip(b"\r") == e.line
        with pytest.raises((ValueError, IndexError, OverflowError)):
            parse_line_python(e.line, MAXF)
        return
    if ours[4] == 0:
        return
    X, y = sklearn_parse(blob)
    assert np.array_equal(ours[2], X.indptr) and np.array_equal(ours[1], X.indices)
    assert np.array_equal(ours[0].view(np.uint64), X.data.view(np.uint64))
    assert np.array_equal(ours[3].view(np.uint64), y.view(np.uint64))


# ---------------------------------------------------------------- blocks of a file

def _sample_file(tmp_path, n_rows=300, crlf=False, final_newline=True):
    rng = np.random.default_rng(5)
    lines = []
    for r in range(n_rows):
        if r % 37 == 0:
            lines.append("# comment line %d 1:1" % r)
        if r % 53 == 0:
            lines.append("")
        ids = np.sort(rng.choice(500, rng.integers(0, 12), replace=False)) + 1
        lines.append(" ".join([repr(float(rng.integers(-1, 2)))] + [f"{i}:{rng.standard_normal()!r}" for i in ids]))
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if final_newline else "")
    p = tmp_path / "f.svm"
    p.write_bytes(text.encode())
    return str(p), text.encode()


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1000, 1 << 20])
@pytest.mark.parametrize("crlf, final_newline", [(False, True), (True, False)])
def test_blocks_give_the_same_rows_as_one_block(tmp_path, block_bytes, crlf, final_newline):
    path, blob = _sample_file(tmp_path, crlf=crlf, final_newline=final_newline)
    whole = parse_block(blob, MAXF)
    blocks = list(iter_svmlight_blocks(path, block_bytes))
    assert b"".join(bytes(b) for b, _ in blocks) == blob
    offset = 0
    for i, (b, first_line) in enumerate(blocks):
        assert bytes(b)[-1:] == b"\n" or i == len(blocks) - 1  # cut just after a newline
        assert first_line == blob.count(b"\n", 0, offset) + 1
        offset += len(b)
    parts = [parse_block(b, MAXF) for b, _ in blocks]
    data = np.concatenate([p[0] for p in parts])
    indices = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[3] for p in parts])
    counts = np.concatenate([np.diff(p[2]) for p in parts])
    assert np.array_equal(data.view(np.uint64), whole[0].view(np.uint64))
    assert np.array_equal(indices, whole[1])
    assert np.array_equal(y, whole[3])
    assert np.array_equal(np.concatenate([[0], np.cumsum(counts)]), whole[2])
    assert max(p[5] for p in parts) == whole[5]


@pytest.mark.parametrize("block_bytes", [1, 7, 100, 1 << 20])
def test_block_error_maps_to_the_file_line(tmp_path, block_bytes):
    path, blob = _sample_file(tmp_path, n_rows=120)
    lines = blob.split(b"\n")
    bad_line_number = 77
    lines[bad_line_number - 1] = b"1 5:1 4:2"
    p = tmp_path / "bad.svm"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(BlockError) as ei:
        for _ in iter_parsed_blocks(str(p), MAXF, block_bytes):
            pass
    assert ei.value.line_number == bad_line_number
    assert ei.value.line == b"1 5:1 4:2"


def test_iter_parsed_blocks_first_row_line(tmp_path):
    p = tmp_path / "c.svm"
    p.write_bytes(b"# head\n\n1 1:1\n# mid\n2 2:2\n")
    got = [(b.first_line, b.first_row_line, b.n_rows) for b in iter_parsed_blocks(str(p), MAXF, 8)]
    assert got == [(3, 3, 1), (5, 5, 1)]
    got = [(b.first_line, b.first_row_line, b.n_rows) for b in iter_parsed_blocks(str(p), MAXF)]
    assert got == [(1, 3, 2)]


def test_long_line_longer_than_the_block(tmp_path):
    line = b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 2000))
    p = tmp_path / "long.svm"
    p.write_bytes(b"1 1:1\n" + line + b"\n-1 2:2")
    blocks = list(iter_svmlight_blocks(str(p), 16))
    assert [ln for _, ln in blocks] == [1, 2, 3]
    assert bytes(blocks[1][0]) == line + b"\n"


def test_parse_block_rejects_bad_arguments():
    with pytest.raises(ValueError):
        parse_block(b"1 1:1\n", 0)
    with pytest.raises(TypeError):
        parse_block(np.zeros(3, np.int32), 10)


# ---------------------------------------------------------------- wired into the readers

def test_readers_native_parser_matches_sklearn_parser_and_names_bad_lines(tmp_path):
    from svmcore.data.readers import iter_file_chunks
    from svmcore.spec.errors import DataError

    good = tmp_path / "good.svm"
    good.write_text("".join(f"{1 if i % 3 else -1} {i % 7 + 1}:{i / 10:.3f} {i % 7 + 9}:1\n" for i in range(500)))
    a = list(iter_file_chunks(str(good), 64, parser="sklearn"))
    b = list(iter_file_chunks(str(good), 64, parser="native"))
    import scipy.sparse as sp
    Xa = sp.vstack([c.X for c in a]).tocsr()
    Xb = sp.vstack([c.X for c in b]).tocsr()
    assert (Xa != Xb).nnz == 0 and Xa.shape == Xb.shape
    assert np.array_equal(np.concatenate([c.y for c in a]), np.concatenate([c.y for c in b]))
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n# comment\n-1 2:1\n1 3:nan\n")
    for parser in ("sklearn", "native"):
        with pytest.raises(DataError) as err:
            list(iter_file_chunks(str(bad), 64, parser=parser))
        assert err.value.line == 4, (parser, str(err.value))
