"""Property-based tests of the trace readers: random input never escapes as anything but
TraceFormatError, both tokenizer engines agree, and random valid records round-trip exactly."""
from __future__ import annotations

import gzip
import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hss_gym.workloads.readers import FORMATS, convert, iter_chunks, load_trace
from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.trace import READ, TraceFormatError

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
TEXT_FORMATS = [name for name in FORMATS if name != "cache"]
CSV_OPTIONS = {"columns": {"time": 0, "op": 1, "offset": 2, "size": 3}, "time_unit": "s",
               "offset_unit": 1, "size_unit": 1}
ALPHABET = "0123456789012345,,.. \t\n\n\rRWrw-+x2a8:(#"


def text(min_size: int = 0, max_size: int = 400) -> st.SearchStrategy[bytes]:
    return st.text(alphabet=ALPHABET, min_size=min_size, max_size=max_size).map(str.encode)


junk = st.one_of(
    st.binary(max_size=600),
    text(),
    st.tuples(st.sampled_from([b"fio version 2 iolog\n", b"fio version 3 iolog\n",
                               b"version,time,op,size,lbn\n", b"\x1f\x8b", b"\x28\xb5\x2f\xfd",
                               b"  8,0 1 1 0.5 7 D W ", b"HSSTRACE"]), st.binary(max_size=300)
              ).map(b"".join))


@SETTINGS
@given(data=junk, fmt=st.sampled_from([None, *TEXT_FORMATS]), skip_bad=st.booleans(),
       block=st.sampled_from([7, 64, 1 << 20]))
def test_random_input_only_raises_trace_format_error(tmp_path: Path, data: bytes,
                                                     fmt: str | None, skip_bad: bool,
                                                     block: int) -> None:
    path = tmp_path / "random.trace"
    path.write_bytes(data)
    options = CSV_OPTIONS if fmt == "csv" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            trace = load_trace(path, fmt, skip_bad=skip_bad, block_bytes=block, **options)
        except TraceFormatError:
            return
        assert len(trace) > 0
        trace.validate()
        chunks = list(iter_chunks(path, fmt, chunk_size=3, skip_bad=skip_bad, block_bytes=block,
                                  **options))
    np.testing.assert_array_equal(np.concatenate([c.offset for c in chunks]), trace.offset)


# ---------------------------------------------------------------- the two tokenizer engines


@pytest.mark.skipif(tk.ACCELERATOR is None, reason="C tokenizer not built")
@SETTINGS
@given(data=text(max_size=300), delim=st.sampled_from([b",", b";", b"\t", b" ", None]),
       kinds=st.lists(st.sampled_from("xudkK"), min_size=1, max_size=5).map("".join),
       extra=st.integers(0, 2), keys=st.lists(text(max_size=3), max_size=4))
def test_engines_agree(data: bytes, delim: bytes | None, kinds: str, extra: int,
                       keys: list[bytes]) -> None:
    tables = {i: tk.KeyTable({tk.pack_key(k, kind == "K"): j for j, k in enumerate(keys)})
              for i, kind in enumerate(kinds) if kind in "kK"}
    args = (data, delim, len(kinds), len(kinds) + extra, kinds, tables)
    c, py = tk.tokenize(*args, engine="c"), tk.tokenize(*args, engine="numpy")
    assert c.n == py.n == tk.count_lines(data)
    np.testing.assert_array_equal(c.err, py.err)
    for i, kind in enumerate(kinds):
        if kind == "x":
            continue
        converted = (c.err == tk.ERR_OK) | (c.err > i)
        np.testing.assert_array_equal(c.vals[i][converted], py.vals[i][converted])
        if kind == "d":
            np.testing.assert_array_equal(c.fracs[i][converted], py.fracs[i][converted])


decimal_token = st.one_of(
    st.from_regex(r"[0-9]{0,30}\.?[0-9]{0,40}", fullmatch=True),
    st.from_regex(r"0{0,30}[1-9][0-9]{0,25}(\.[0-9]{0,30})?", fullmatch=True),
    st.text(alphabet="0.", max_size=40))


@SETTINGS
@given(tokens=st.lists(decimal_token, min_size=1, max_size=20))
def test_decimal_rule_matches_scalar_reference(tokens: list[str]) -> None:
    data = "\n".join(t if t else "x" for t in tokens).encode() + b"\n"
    engines = ["numpy", "c"] if tk.ACCELERATOR is not None else ["numpy"]
    for engine in engines:
        table = tk.tokenize(data, None, 1, 1, "d", engine=engine)
        for row, token in enumerate(tokens):
            want = tk.parse_decimal_scalar(token.encode()) if token else None
            assert (table.err[row] == tk.ERR_OK) == (want is not None), (engine, token)
            if want is not None:
                got = (int(table.vals[0][row]), int(table.fracs[0][row]))
                assert got == want, (engine, token)
                digits = token.replace(".", "").lstrip("0")
                if len(digits) <= 19 and len(token.partition(".")[2]) <= 24:
                    assert Fraction(got[0], 10 ** got[1]) == Fraction(token.rstrip(".") or "0")


@SETTINGS
@given(tokens=st.lists(st.one_of(st.from_regex(r"[0-9]{1,21}", fullmatch=True), text(max_size=8)),
                       min_size=1, max_size=20))
def test_uint_rule_matches_scalar_reference(tokens: list[bytes | str]) -> None:
    raw = [t.encode() if isinstance(t, str) else t for t in tokens]
    cells = [t.replace(b",", b"").replace(b"\n", b"").strip(b" \t\r") for t in raw]
    data = b"".join(b"%s,0\n" % c for c in cells)
    engines = ["numpy", "c"] if tk.ACCELERATOR is not None else ["numpy"]
    for engine in engines:
        table = tk.tokenize(data, b",", 2, 2, "u", engine=engine)
        for row, cell in enumerate(cells):
            want = tk.parse_uint_scalar(cell)
            if not cell.strip():
                assert table.err[row] in (tk.ERR_BLANK, 0), (engine, cell)
                continue
            assert (table.err[row] == tk.ERR_OK) == (want is not None), (engine, cell)
            if want is not None:
                assert int(table.vals[0][row]) == want


# ------------------------------------------------------------------------- round trips


@dataclass(frozen=True)
class Spec:
    """How to write records in one format, for the round trip."""

    line: Callable[[str, int, int, int, int], str]   # (time text, op, offset, size, i) -> line
    unit_exp: int                                    # time unit -> µs power of ten
    sector: bool                                     # offsets/sizes are in 512-byte sectors
    max_frac: int = 9                                # fraction digits the time may have
    header: str = ""
    options: tuple[tuple[str, object], ...] = ()
    relative: bool = False                           # times count from the first request


def rw(op: int, read: str, write: str) -> str:
    return read if op == READ else write


SPECS: dict[str, Spec] = {
    "msr": Spec(lambda t, o, off, sz, i: f"{t},host,0,{rw(o, 'Read', 'Write')},{off},{sz},9",
                -1, False, 0, relative=True),
    "systor17": Spec(lambda t, o, off, sz, i: f"{t},0.0001,{rw(o, 'R', 'W')},1,{off},{sz}", 6,
                     False, header="Timestamp,Response,IOType,LUN,Offset,Size\n"),
    "alibaba": Spec(lambda t, o, off, sz, i: f"3,{rw(o, 'R', 'W')},{off},{sz},{t}", 0, False, 0),
    "tencent": Spec(lambda t, o, off, sz, i: f"{t},{off // 512},{sz // 512},{o},7", 6, True, 0),
    "fiu": Spec(lambda t, o, off, sz, i: f"{t} 100 proc {off // 512} {sz // 512} "
                f"{rw(o, 'R', 'W')} 8 0 d41d8cd98f00b204e9800998ecf8427e", -3, True, 0),
    "mqsim": Spec(lambda t, o, off, sz, i: f"{t} 0 {off // 512} {sz // 512} {1 - o}", -3, True,
                  0),
    "spc": Spec(lambda t, o, off, sz, i: f"0,{off // 512},{sz},{rw(o, 'r', 'w')},{t}", 6, True),
    "cloudphysics": Spec(lambda t, o, off, sz, i: f"1,{t},{rw(o, '28', '2A')},{sz},{off // 512}",
                         6, True, header="version,time,op,size,lbn\n"),
    # flags: a bitmask whose bit 0 is the read bit (other bits vary with the line)
    "disksim": Spec(lambda t, o, off, sz, i: f"{t} 0 {off // 512} {sz // 512} "
                    f"{(i % 8) * 2 + (1 if o == READ else 0)}", 3, True, 6),
    "heimdall": Spec(lambda t, o, off, sz, i: f"{t} 0 {off} {sz} {1 - o}", 3, False, 3),
    "blkparse": Spec(lambda t, o, off, sz, i: f"  8,0 {i % 4} {i + 1} {t} 100 D "
                     f"{rw(o, 'R', 'WS')} {off // 512} + {sz // 512} [proc]", 6, True),
    "fio": Spec(lambda t, o, off, sz, i: f"{t} /dev/sdb {rw(o, 'read', 'write')} {off} {sz}", 0,
                False, 0, header="fio version 3 iolog\n0 /dev/sdb add\n"),
    "csv": Spec(lambda t, o, off, sz, i: f"{off // 512}|{rw(o, 'get', 'put')}|{t}|{sz}", 3,
                True, 6, options=(("columns", {"time": 2, "op": 1, "offset": 0, "size": 3}),
                                  ("delimiter", "|"), ("time_unit", "ms"),
                                  ("offset_unit", 512), ("size_unit", 1), ("read_values", ("GET",)),
                                  ("write_values", ("PUT",)))),
}


@st.composite
def records(draw: st.DrawFn, sector: bool, max_frac: int, big: bool
            ) -> tuple[list[int], int, list[int], list[int], list[int]]:
    n = draw(st.integers(1, 25))
    k = draw(st.integers(0, max_frac))
    top = 2**63 - 1 if big else 10**15
    mantissas = sorted(draw(st.lists(st.integers(0, top), min_size=n, max_size=n)))
    ops = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    unit = 512 if sector else 1
    offsets = [unit * v for v in draw(st.lists(st.integers(0, (1 << 43) - (1 << 20) - 1), min_size=n,
                                               max_size=n))]
    sizes = [unit * v for v in draw(st.lists(st.integers(1, 1 << 20), min_size=n, max_size=n))]
    return mantissas, k, ops, offsets, sizes


def time_text(m: int, k: int) -> str:
    return f"{m // 10**k}.{m % 10**k:0{k}d}" if k else str(m)


@SETTINGS
@given(data=st.data(), fmt=st.sampled_from(sorted(SPECS)),
       packing=st.sampled_from(["plain", "gzip", "zstd"]),
       block=st.sampled_from([16, 200, 1 << 20]), big=st.booleans())
def test_valid_records_round_trip(tmp_path: Path, data: st.DataObject, fmt: str, packing: str,
                                  block: int, big: bool) -> None:
    spec = SPECS[fmt]
    mantissas, k, ops, offsets, sizes = data.draw(records(spec.sector, spec.max_frac, big))
    lines = [spec.line(time_text(m, k), o, off, sz, i)
             for i, (m, o, off, sz) in enumerate(zip(mantissas, ops, offsets, sizes))]
    raw = (spec.header + "\n".join(lines) + data.draw(st.sampled_from(["", "\n", "\r\n"]))).encode()
    if packing == "gzip":
        raw = gzip.compress(raw)
    elif packing == "zstd":
        raw = zstandard.ZstdCompressor().compress(raw)
    path = tmp_path / f"records.{fmt}"
    path.write_bytes(raw)
    trace = load_trace(path, fmt, block_bytes=block, **dict(spec.options))
    assert trace.op.tolist() == ops
    assert trace.offset.tolist() == offsets
    assert trace.size.tolist() == sizes
    origin = mantissas[0] if spec.relative else 0
    if spec.relative:
        assert trace.source["time_origin"] == time_text(origin, k)
    for got, m in zip(trace.time_us.tolist(), mantissas):
        exact = float(Fraction(m - origin, 10**k) * Fraction(10) ** spec.unit_exp)
        if m - origin < 2**53:
            assert got == exact, (m, k)           # correctly rounded
        else:
            assert abs(got - exact) <= np.spacing(exact), (m, k)   # within 1 ulp
    chunks = list(iter_chunks(path, fmt, chunk_size=7, block_bytes=block, **dict(spec.options)))
    joined = np.concatenate([c.time_us for c in chunks])
    np.testing.assert_array_equal(joined, trace.time_us)


@SETTINGS
@given(n=st.integers(1, 40), gap=st.sampled_from([0.0, 1.0, 100.0, 2.5]))
def test_fio_v2_times_are_the_documented_gap(tmp_path: Path, n: int, gap: float) -> None:
    ops = itertools.islice(itertools.cycle(["read", "write", "write"]), n)
    body = "".join(f"/dev/x {op} {4096 * i} 4096\n" for i, op in enumerate(ops))
    path = tmp_path / "v2.iolog"
    path.write_text("fio version 2 iolog\n/dev/x add\n/dev/x open\n" + body)
    trace = load_trace(path, gap_us=gap)
    assert trace.time_us.tolist() == [i * gap for i in range(n)]


@SETTINGS
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["28", "2a", "zz", "x"]),
                               st.sampled_from(["512", "0", "-1", "4096"])), min_size=1,
                     max_size=30))
def test_skip_bad_counts_exactly_the_bad_rows(tmp_path: Path, rows: list[tuple[int, str, str]]
                                              ) -> None:
    rows = sorted(rows)
    body = "".join(f"1,{t},{op},{size},5\n" for t, op, size in rows)
    good = [r for r in rows if r[1] in ("28", "2a") and r[2] in ("512", "4096")]
    assume(good)
    path = tmp_path / "mixed.csv"
    path.write_text("version,time,op,size,lbn\n" + body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = load_trace(path, "cloudphysics", skip_bad=True)
    assert trace.source["skipped"] == len(rows) - len(good)
    assert trace.size.tolist() == [int(s) for _, _, s in good]
    bad_lines = [i + 2 for i, r in enumerate(rows) if r not in good]  # line 1 is the header
    assert len(caught) == (1 if bad_lines else 0)
    if bad_lines:
        assert f"line {bad_lines[0]}," in str(caught[0].message)


JUNK_LINE = st.one_of(st.just(b"# exported by a tool"),
                      st.binary(max_size=80).map(lambda b: b"\0" + b.replace(b"\n", b"")))


@SETTINGS
@given(data=st.data(), fmt=st.sampled_from(sorted(n for n in SPECS if n != "fio")),
       junk=st.lists(JUNK_LINE, max_size=4), pad=st.integers(0, 3000),
       block=st.sampled_from([16, 200, 1 << 20]))
def test_junk_before_the_records_and_nul_padding_read_the_same(
        tmp_path: Path, data: st.DataObject, fmt: str, junk: list[bytes], pad: int,
        block: int) -> None:
    """A file with junk lines before its first record (before its header) and NUL padding at
    its end reads as the clean file does, with the counts in source (fio logs must start with
    their version line, as fio requires)."""
    spec = SPECS[fmt]
    mantissas, k, ops, offsets, sizes = data.draw(records(spec.sector, spec.max_frac, False))
    body = "\n".join(spec.line(time_text(m, k), o, off, sz, i)
                     for i, (m, o, off, sz) in enumerate(zip(mantissas, ops, offsets, sizes)))
    body = spec.header + body + data.draw(st.sampled_from(["", "\n"]))
    clean = tmp_path / f"clean.{fmt}"
    clean.write_text(body)
    dirty = tmp_path / f"dirty.{fmt}"
    dirty.write_bytes(b"".join(j + b"\n" for j in junk) + body.encode() + b"\0" * pad)
    options = dict(spec.options)
    want = load_trace(clean, fmt, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = load_trace(dirty, fmt, block_bytes=block, **options)
    for col in ("time_us", "op", "offset", "size"):
        np.testing.assert_array_equal(getattr(got, col), getattr(want, col), err_msg=col)
    assert got.source["junk_lines"] == len(junk) and got.source["nul_padding"] == pad
    assert got.source["skipped"] == 0
    assert len(caught) == (1 if junk or pad else 0)


# ------------------------------------------------------------------------ the fuzz harness

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
HOSTILE_BYTES = b"\0\n\r\t ,;|-+.eE9x\xff\x80#:()[]"
MUTATIONS = ("delete", "insert", "replace", "duplicate line", "drop line", "swap lines", "truncate")


@st.composite
def mutated_records(draw: st.DrawFn) -> tuple[str, bytes, dict[str, object]]:
    """A valid file of one format (header included) with one to four random mutations."""
    fmt = draw(st.sampled_from(sorted(SPECS)))
    spec = SPECS[fmt]
    mantissas, k, ops, offsets, sizes = draw(records(spec.sector, spec.max_frac, False))
    lines = [spec.line(time_text(m, k), o, off, sz, i).encode()
             for i, (m, o, off, sz) in enumerate(zip(mantissas, ops, offsets, sizes))]
    lines = [*spec.header.encode().splitlines(), *lines]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(MUTATIONS))
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if not lines:
            lines = [b""]
        line = lines[i]
        at = draw(st.integers(0, len(line)))
        byte = bytes([draw(st.sampled_from(HOSTILE_BYTES))])
        if kind == "delete" and line:
            lines[i] = line[:at] + line[at + 1:]
        elif kind == "insert":
            lines[i] = line[:at] + byte + line[at:]
        elif kind == "replace" and line:
            lines[i] = line[:max(0, at - 1)] + byte + line[at:]
        elif kind == "duplicate line":
            lines.insert(i, line)
        elif kind == "drop line" and len(lines) > 1:
            del lines[i]
        elif kind == "swap lines" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "truncate":
            lines[i] = line[:at]
            del lines[i + 1:]
    return fmt, b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"])), dict(spec.options)


def read_or_refuse(src: Path, fmt: str | None, **options: object) -> None:
    """``load_trace`` and ``convert`` of ``src`` give a valid Trace (the cache holds the same
    requests) or a TraceFormatError / ValueError naming the file, and a line where it names one;
    any other exception fails the test."""
    dst = src.with_name(src.name + ".cache")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (lambda: load_trace(src, fmt, block_bytes=64, **options),
                     lambda: convert(src, dst, fmt, force=True, **options)):
            try:
                trace = call()
            except ValueError as exc:  # TraceFormatError is one
                assert str(src) in str(exc), exc
                line = getattr(exc, "line", None)
                assert line is None or (line >= 1 and f"line {line}" in str(exc)), exc
                continue
            assert len(trace) > 0
            trace.validate()
    if dst.exists():
        np.testing.assert_array_equal(load_trace(dst).offset, trace.offset)
        dst.unlink()


@FUZZ
@given(case=mutated_records(), packing=st.sampled_from(["plain", "gzip", "zstd"]),
       name_format=st.booleans(), cut=st.sampled_from([0, 0, 1, 5]))
def test_fuzz_mutated_records_every_reader_and_convert(
        tmp_path: Path, case: tuple[str, bytes, dict[str, object]], packing: str,
        name_format: bool, cut: int) -> None:
    """Valid files of every format, mutated (bytes deleted, inserted or replaced, lines
    duplicated, dropped, swapped, cut), plain or compressed (the stream possibly cut short): a
    Trace or a clear error naming file and line, never another exception."""
    fmt, raw, options = case
    if packing == "gzip":
        raw = gzip.compress(raw)
    elif packing == "zstd":
        raw = zstandard.ZstdCompressor().compress(raw)
    if packing != "plain" and cut:
        raw = raw[:-cut]
    src = tmp_path / f"fuzz.{fmt}"
    src.write_bytes(raw)
    read_or_refuse(src, fmt if name_format or options else None, **options)


@FUZZ
@given(data=junk, fmt=st.sampled_from([None, *TEXT_FORMATS]))
def test_fuzz_random_bytes_every_reader_and_convert(tmp_path: Path, data: bytes,
                                                   fmt: str | None) -> None:
    """Random bytes (and random text after a format's magic) through load_trace and convert."""
    src = tmp_path / "random.trace"
    src.write_bytes(data)
    read_or_refuse(src, fmt, **(CSV_OPTIONS if fmt == "csv" else {}))
