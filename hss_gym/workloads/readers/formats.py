"""The trace formats hss-gym reads: their columns, units, and the parsers that convert them.

Every parser turns blocks of complete text lines into :class:`Block` s of requests in the units
of :class:`~hss_gym.workloads.trace.Trace` (arrival time in microseconds as written in the file,
byte offset, byte size, op ``READ`` = 0 / ``WRITE`` = 1). Parsers are stateful (line numbers,
headers, pairing of events) and are fed the blocks of one file in order.

Most formats are *delimited*: one request per line, fixed columns. They are declared as
:class:`DelimitedFormat` instances and parsed by the vectorised tokenizer (``_tokenize``).
``blkparse`` and ``fio`` logs mix several kinds of lines and have line-oriented parsers.

Rows that a format defines as not being requests (a blank SYSTOR'17 ``IOType``, a blkparse
``N`` (no data) event, a fio ``sync``) are *dropped* and counted per reason; rows that are
malformed are errors (or, with ``skip_bad``, *skipped* and counted). Nothing is lost silently.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.trace import MAX_BYTES, READ, WRITE, TraceFormatError

DROP = -1                      # op code of a row the format defines as "not a request"
#: Most malformed lines taken as junk before a file's first record (a tar header, a preamble);
#: more than this and they are malformed rows (the file is probably of another format).
MAX_JUNK_LINES = 100
_LIMIT_TEXT = "the end of the address space hss-gym simulates"
SECTOR = 512
_WHITE = re.compile(rb"[ \t\r]+")  # the tokenizer's white space

#: time units accepted by the ``csv`` format (and fio v3): power of ten from the unit to µs.
TIME_UNITS: dict[str, int] = {"s": 6, "ms": 3, "us": 0, "ns": -3, "100ns": -1}


@dataclass
class Block:
    """Requests parsed from one block of lines (columns in Trace units) and what was left out.

    Request ``i`` comes from line ``line_base + i`` (``rows`` is None) or
    ``line_base + rows[i]``.
    """

    time_us: np.ndarray
    op: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    line_base: int
    rows: np.ndarray | None = None
    skipped: int = 0                                  # malformed rows
    first_error: TraceFormatError | None = None       # the first malformed row's error
    dropped: Counter[str] = field(default_factory=Counter)

    def __len__(self) -> int:
        return len(self.time_us)

    def line(self, i: int) -> int:
        """1-based line number of request ``i``."""
        return self.line_base + (i if self.rows is None else int(self.rows[i]))

    def slice(self, start: int, stop: int) -> "Block":
        """Requests ``[start, stop)`` (views); the counts stay with the original block."""
        rows = None if self.rows is None else self.rows[start:stop]
        base = self.line_base + (start if self.rows is None else 0)
        return Block(self.time_us[start:stop], self.op[start:stop], self.offset[start:stop],
                     self.size[start:stop], base, rows)

    @classmethod
    def from_lists(cls, time_us: list[float], op: list[int], offset: list[int], size: list[int],
                   line: list[int], skipped: int, first_error: TraceFormatError | None,
                   dropped: Counter[str]) -> "Block":
        return cls(np.array(time_us, dtype=np.float64), np.array(op, dtype=np.uint8),
                   np.array(offset, dtype=np.int64), np.array(size, dtype=np.int64), 0,
                   np.array(line, dtype=np.int64), skipped, first_error, dropped)


class Parser(Protocol):
    """What the reader driver needs from a format's parser."""

    name: str          # format name
    time_field: str    # name of the time column, for ordering errors
    next_line: int     # 1-based number of the line the next block starts with

    def parse(self, data: bytes | memoryview) -> Block:
        """Parse the next block of complete lines of the file."""

    def info(self) -> dict[str, Any]:
        """Format-specific provenance for ``Trace.source`` (JSON-serialisable)."""

    def extras(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Per-request arrays for requests ``[start, stop)`` (e.g. measured latency)."""


# ============================================================================ delimited formats


@dataclass(frozen=True)
class Column:
    """One column of a delimited format that becomes a Trace field."""

    index: int      # 0-based field index
    name: str       # the column's name in the format's documentation (used in error messages)
    unit: int = 1   # time: power of ten to microseconds; offset/size: bytes per unit


@dataclass(frozen=True)
class DelimitedFormat:
    """A one-request-per-line format with fixed columns.

    ``ops`` maps each accepted op token (compared case-insensitively when ``fold_case``) to
    ``READ``, ``WRITE`` or ``DROP``. A first line whose time, offset and size fields all start
    with a letter is a header and is skipped (``header=None``); ``header=True`` / ``False``
    force it. ``detect_needs_header`` keeps auto-detection from choosing the format for a file
    without its header (when its rows alone are ambiguous). ``relative_time`` makes times count
    from the file's first request, subtracted exactly before the conversion to float64 (for
    absolute clocks too fine for float64: MSR's 100 ns filetimes); ``Trace.source["time_origin"]``
    holds that first time as written.
    """

    name: str
    summary: str
    columns: tuple[str, ...]          # all column names, in order (for messages)
    delimiter: bytes | None           # b"," etc., or None for runs of white space
    time: Column
    op: Column
    offset: Column
    size: Column
    ops: Mapping[str, int]
    fold_case: bool = True
    max_fields: int | None = None     # default: len(columns)
    header: bool | None = None
    drop_reason: str = ""
    detect_needs_header: bool = False
    extensions: tuple[str, ...] = ()
    plausible: Callable[[Block], bool] | None = None
    op_help: str = ""                 # what the op column holds, for errors (default: the tokens)
    relative_time: bool = False       # times since the first request (exact integer difference)

    @property
    def min_fields(self) -> int:
        return max(c.index for c in (self.time, self.op, self.offset, self.size)) + 1

    def __post_init__(self) -> None:
        for token in self.ops:
            if len(token.encode()) > 8:
                raise ValueError(f"op value {token!r} is longer than 8 bytes")


class DelimitedParser:
    """Parses a :class:`DelimitedFormat` with the vectorised tokenizer."""

    def __init__(self, fmt: DelimitedFormat, path: str, engine: str = "auto",
                 describe_errors: bool = True) -> None:
        self.fmt, self.path, self.engine = fmt, path, engine
        self.describe_errors = describe_errors  # False: count malformed rows only (detection)
        self.name = fmt.name
        self.time_field = fmt.time.name
        self.next_line = 1
        self.saw_header = False
        self._started = False
        self.junk = 0                                        # junk lines before the first record
        self.first_junk_error: TraceFormatError | None = None  # why the first of them is junk
        self._junk_open = True                               # no record seen yet
        self.time_origin: tuple[int, int] | None = None      # relative_time: the first time
        roles = {fmt.time.index: "time", fmt.op.index: "op", fmt.offset.index: "offset",
                 fmt.size.index: "size"}
        if len(roles) != 4:
            raise ValueError(f"format {fmt.name!r}: two fields share a column")
        kind = {"time": "d", "op": "K" if fmt.fold_case else "k", "offset": "u", "size": "u"}
        self.roles = roles
        self.kinds = "".join(kind[roles[i]] if i in roles else "x"
                             for i in range(fmt.min_fields))
        self.max_fields = fmt.max_fields or len(fmt.columns)
        self._ops = tk.KeyTable({tk.pack_key(t.encode(), fmt.fold_case): code
                                 for t, code in fmt.ops.items()})
        self._drops = DROP in fmt.ops.values()

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"header": self.saw_header}
        if self.fmt.relative_time and self.time_origin is not None:
            m, k = self.time_origin
            info["time_origin"] = f"{m // 10**k}.{m % 10**k:0{k}d}" if k else str(m)
        return info

    def extras(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return {}

    def unresolved_junk(self) -> tuple[int, TraceFormatError | None]:
        """At the end of the file: the lines held as junk although no record followed them
        (they are malformed rows, not a preamble), and the first one's error; forgets them."""
        if not self._junk_open or not self.junk:
            return 0, None
        out = (self.junk, self.first_junk_error)
        self.junk, self.first_junk_error = 0, None
        return out

    def _times(self, mantissa: np.ndarray, frac: np.ndarray, inplace: bool) -> np.ndarray:
        """Arrival times in µs: as written (most formats), or, for a ``relative_time`` format,
        since the first request, subtracted as exact integers before the one rounding to float64
        (MSR's absolute filetimes, ~1.3e17 ticks, would lose up to 2 µs in float64 first)."""
        unit = self.fmt.time.unit
        if not self.fmt.relative_time or not len(mantissa):
            return tk.to_us(mantissa, frac, unit, inplace=inplace)
        if self.time_origin is None:
            self.time_origin = (int(mantissa[0]), int(frac[0]))
        m0, f0 = self.time_origin
        if (frac == f0).all() and int(mantissa.max()) < 2**63 and m0 < 2**63:
            delta = mantissa.astype(np.int64) - np.int64(m0)  # exact: integer ticks
            return tk.to_us(delta, frac, unit)
        # fractions of different lengths (not in MSR files): the difference of the two floats
        return tk.to_us(mantissa, frac, unit) - tk.to_us_scalar(m0, f0, unit)

    def _take_junk(self, data: bytes | memoryview, base: int, err: np.ndarray, fail: np.ndarray,
                   bad: np.ndarray, good: np.ndarray) -> tuple[np.ndarray, int,
                                                               TraceFormatError | None]:
        """Set aside the junk before the file's first record (a tar header, a preamble), up to
        :data:`MAX_JUNK_LINES` lines. Junk is a line that is not a record at all: it has the wrong
        number of fields, or control bytes (NUL, ...) that text does not hold, or is a comment
        (``#`` first); and it is junk
        only if a valid record follows it. A line shaped like a record but with a bad value is a
        malformed row, even on line 1, and so is the junk-like text before it.
        Returns ``bad`` without the junk, and, when what was held as junk turns out to be
        malformed rows (a malformed record follows, or too many lines for a preamble: the
        wrong format?), their number and the first one's error."""
        first_good = int(np.argmax(good)) if good.any() else len(bad)
        lead = np.flatnonzero(bad[:first_good])
        if self.junk + len(lead) > MAX_JUNK_LINES or not (
                (err[lead] == tk.ERR_NFIELDS) | _junk_rows(data, lead)).all():
            earlier, error = self.junk, self.first_junk_error
            self.junk, self.first_junk_error, self._junk_open = 0, None, False
            return bad, earlier, error
        if good.any():
            self._junk_open = False
        if not len(lead):
            return bad, 0, None
        if self.first_junk_error is None and self.describe_errors:
            self.first_junk_error = self._junk_error(_line_at(data, int(lead[0])),
                                                     base + int(lead[0]))
        self.junk += len(lead)
        bad = bad.copy()
        bad[:first_good] = False
        return bad, 0, None

    def column_name(self, index: int) -> str:
        return self.fmt.columns[index] if index < len(self.fmt.columns) else f"field {index + 1}"

    def parse(self, data: bytes | memoryview) -> Block:
        fmt = self.fmt
        base = self.next_line
        if not self._started:
            self._started = True
            found = self._find_header(data, base)  # after blank lines, or junk (a tar header)
            if found is not None:
                lines, end = found
                data = memoryview(data)[end:]  # no copy
                base += lines
                self.saw_header = True
        table = tk.tokenize(data, fmt.delimiter, fmt.min_fields, self.max_fields, self.kinds,
                            {fmt.op.index: self._ops}, engine=self.engine)
        self.next_line = base + table.n
        err, vals = table.err, table.vals
        t_m, t_f = vals[fmt.time.index], table.fracs[fmt.time.index]
        codes, offset_raw, size_raw = (vals[fmt.op.index], vals[fmt.offset.index],
                                       vals[fmt.size.index])
        assert t_m is not None and t_f is not None and codes is not None
        assert offset_raw is not None and size_raw is not None
        # values that are not valid although they parsed (rows with errors hold garbage)
        # (a row the format drops, e.g. a SYSTOR'17 blank IOType, may have no data: size 0)
        empty = size_raw == 0
        if self._drops:
            empty &= codes != DROP
        checks = [(fmt.op, codes == tk.KEY_MISSING), (fmt.size, empty)]
        ou, su = fmt.offset.unit, fmt.size.unit
        if int(offset_raw.max(initial=0)) * ou + int(size_raw.max(initial=0)) * su >= MAX_BYTES:
            # some request may end at or beyond 4 PiB (rows with errors hold garbage: re-checked)
            far = offset_raw >= -(-MAX_BYTES // ou)
            big = size_raw >= -(-MAX_BYTES // su)
            # the end, where both are below the limit (then the products cannot overflow)
            ends = ~far & ~big & (offset_raw * ou + size_raw * su >= MAX_BYTES)
            checks += [(fmt.offset, far), (fmt.size, big | ends)]
        if (err.min(initial=tk.ERR_OK) == tk.ERR_OK == err.max(initial=tk.ERR_OK)
                and not any(wrong.any() for _, wrong in checks)
                and not (self._drops and (codes == DROP).any())):
            if fmt.offset.unit != 1:  # the common case: no copies
                offset_raw *= fmt.offset.unit
            if fmt.size.unit != 1:
                size_raw *= fmt.size.unit
            if table.n:
                self._junk_open = False
            return Block(self._times(t_m, t_f, inplace=True), codes.view(np.uint8),
                         offset_raw, size_raw, base)
        fail = np.where(err >= 0, err, 127).astype(np.int8)  # first failing column per row
        for col, wrong in checks:
            # a value failure counts only where the column was converted (C leaves other rows
            # uninitialised) and no earlier column failed
            hit = wrong & ((err == tk.ERR_OK) | (err > col.index))
            if hit.any():
                fail[hit] = np.minimum(fail[hit], col.index)
        bad = (fail < 127) | (err == tk.ERR_NFIELDS)
        good = (err == tk.ERR_OK) & ~bad
        earlier, earlier_error = 0, None
        if self._junk_open:
            bad, earlier, earlier_error = self._take_junk(data, base, err, fail, bad, good)
        nbad = int(np.count_nonzero(bad))
        first_error = earlier_error or (self._error(data, base, int(np.argmax(bad)), err, fail)
                                        if nbad and self.describe_errors else None)
        nbad += earlier
        drop = good & (codes == DROP)
        dropped: Counter[str] = Counter()
        if drop.any():
            dropped[fmt.drop_reason] = int(np.count_nonzero(drop))
        rows = np.flatnonzero(good & ~drop)
        return Block(self._times(t_m[rows], t_f[rows], inplace=False), codes[rows].view(np.uint8),
                     offset_raw[rows] * fmt.offset.unit, size_raw[rows] * fmt.size.unit, base,
                     rows, nbad, first_error, dropped)

    # ------------------------------------------------------------------ headers and messages

    def fields(self, line: bytes) -> list[bytes]:
        """The fields of one line, split and stripped like the tokenizer does."""
        if self.fmt.delimiter is None:
            return [f for f in _WHITE.split(line) if f]
        return [f.strip(b" \t\r") for f in line.split(self.fmt.delimiter)]

    def _find_header(self, data: bytes | memoryview, base: int) -> tuple[int, int] | None:
        """The header line, if the file has one: ``(lines up to and including it, byte offset
        after it)``. It is the first line that is not blank or junk (see :meth:`_take_junk`;
        junk before it is counted). With ``header=None`` it must look like a header (time,
        offset and size fields start with a letter)."""
        head = bytes(data[:1 << 16])
        pos, row, junk = 0, 0, []
        while pos <= len(head) and len(junk) <= MAX_JUNK_LINES:
            nl = head.find(b"\n", pos)
            end = nl if nl >= 0 else len(head)
            line = head[pos:end]
            if line.strip(b" \t\r"):
                binary = _CONTROL.search(line) is not None
                text = _CONTROL.split(line)[-1]  # after binary junk glued to it
                comment = line.lstrip(b" \t\r")[:1] == b"#"
                if self.fmt.header is not False and (self._looks_like_header(line) or (
                        self.fmt.header and text.strip(b" \t\r") and not comment)):
                    if binary:  # junk glued to the header (a tar header has no line end)
                        junk.append((row, line))
                    if junk:
                        self.junk += len(junk)
                        self.first_junk_error = self._junk_error(junk[0][1], base + junk[0][0])
                    return row + 1, (end + 1 if nl >= 0 else end)
                if not (binary or comment or not self.fmt.min_fields
                        <= len(self.fields(line)) <= self.max_fields):
                    return None  # a record (or a malformed one): no header
                junk.append((row, line))
            if nl < 0:
                return None
            pos, row = nl + 1, row + 1
        return None

    def _junk_error(self, line: bytes, lineno: int) -> TraceFormatError:
        """Why ``line`` is junk (for the JunkWarning)."""
        if _CONTROL.search(line):
            why = f"binary data (control bytes such as NUL): {_show(line)}"
        elif line.lstrip(b" \t\r")[:1] == b"#":
            why = f"a comment: {_show(line)}"
        else:
            lo, hi = self.fmt.min_fields, self.max_fields
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            why = (f"not a record ({len(self.fields(line))} fields, not {want}): "
                   f"{_show(line)}")
        return TraceFormatError(why, path=self.path, line=lineno)

    def _looks_like_header(self, line: bytes) -> bool:
        fields = self.fields(line)
        numeric = (self.fmt.time.index, self.fmt.offset.index, self.fmt.size.index)
        return len(fields) >= self.fmt.min_fields and all(fields[i][:1].isalpha()
                                                          for i in numeric)

    def _error(self, data: bytes | memoryview, base: int, row: int, err: np.ndarray,
               fail: np.ndarray) -> TraceFormatError:
        fields = self.fields(_line_at(data, row))
        line = base + row
        if err[row] == tk.ERR_NFIELDS:
            n, lo, hi = len(fields), self.fmt.min_fields, self.max_fields
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            sep = "white space" if self.fmt.delimiter is None else repr(self.fmt.delimiter.decode(
                "latin-1"))
            missing = self.column_name(n) if n < lo else None
            return TraceFormatError(f"expected {want} fields separated by {sep}, found {n}",
                                    path=self.path, line=line, field=missing)
        col = int(fail[row])
        return TraceFormatError(self._explain(col, fields[col]), path=self.path, line=line,
                                field=self.column_name(col))

    def _explain(self, col: int, token: bytes) -> str:
        """Why ``token`` is not valid in column ``col`` (re-checks it with the scalar rules)."""
        fmt, role = self.fmt, self.roles[col]
        shown = repr(token.decode("utf-8", "replace")[:40])
        if role == "time":
            return f"expected a decimal number such as 12 or 0.25 (at most 19 integer " \
                   f"digits), got {shown}"
        if role == "op" and fmt.op_help:
            return f"unknown op code {shown}; expected {fmt.op_help}"
        if role == "op":
            allowed = ", ".join(repr(t) for t, c in fmt.ops.items() if c != DROP)
            case = " (case-insensitive)" if fmt.fold_case else ""
            return f"unknown op code {shown}; expected one of {allowed}{case}"
        value = tk.parse_uint_scalar(token)
        if value is None and token.isdigit():
            return f"value too large (above 2**63 - 1): {shown}"
        if value is None:
            return f"expected an unsigned integer, got {shown}"
        unit = fmt.offset.unit if role == "offset" else fmt.size.unit
        if role == "size" and value == 0:
            return "size must be > 0, got 0"
        shown_bytes = f"{value} bytes" if unit == 1 else f"{value} x {unit} bytes"
        if value * unit >= MAX_BYTES:
            return f"{role} {shown_bytes} is at or beyond 4 PiB (2**52 bytes), {_LIMIT_TEXT}"
        return f"the request (offset + size) ends at or beyond 4 PiB, {_LIMIT_TEXT}"


_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x0c\x0e-\x1f\x7f]")  # not text (tab, CR are)
_TEXT_BYTE = np.ones(256, dtype=bool)
_TEXT_BYTE[:32] = False
_TEXT_BYTE[[ord("\t"), ord("\n"), ord("\r")]] = True
_TEXT_BYTE[127] = False


def _junk_rows(data: bytes | memoryview, rows: np.ndarray) -> np.ndarray:
    """Which of the lines ``rows`` (0-based in ``data``, ascending) are not text records:
    those holding a control byte (NUL, ESC, ...; not tab or CR: binary data such as a tar
    header) and comments (``#`` first)."""
    if not len(rows):
        return np.zeros(0, dtype=bool)
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    end = int(newlines[rows[-1]]) if rows[-1] < len(newlines) else len(buf)
    control = np.flatnonzero(~_TEXT_BYTE[buf[:end]])
    line_of = np.searchsorted(newlines, control)  # the line each control byte is on
    starts = np.concatenate(([0], newlines + 1))[rows]
    comment = np.array([bytes(data[s:s + 256]).lstrip(b" \t\r")[:1] == b"#" for s in starts])
    return np.isin(rows, line_of) | comment


def _line_at(data: bytes | memoryview, row: int) -> bytes:
    """Line ``row`` (0-based) of a block, without its newline."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    start = int(newlines[row - 1]) + 1 if row else 0
    end = int(newlines[row]) if row < len(newlines) else len(data)
    return bytes(data[start:end])


def _first_line(data: bytes | memoryview) -> bytes:
    """The first line of a block (without its newline)."""
    size = 1 << 12
    while True:
        head = bytes(data[:size])
        end = head.find(b"\n")
        if end >= 0 or len(head) < size:
            return head if end < 0 else head[:end]
        size *= 8


_BLANK_LINES = re.compile(rb"(?:[ \t\r]*\n)*")


def first_text_line(data: bytes | memoryview) -> tuple[int, int, bytes]:
    """The first line of a block that is not blank (blank lines within its first 64 KiB are
    passed over): the number of blank lines before it, its byte offset and the line (without its
    newline)."""
    blank = _BLANK_LINES.match(bytes(data[:1 << 16]))
    assert blank is not None  # the pattern matches the empty string
    start = blank.end()
    return blank.group().count(b"\n"), start, _first_line(memoryview(data)[start:])


def header_text(head: bytes) -> bytes:
    """The line a header would be, for column names: the first non-blank text of the first
    lines after any binary junk (a tar header, glued to the first line of the file it holds)
    and comments (``#`` first; a comment is the header only if nothing else is)."""
    comment = b""
    for line in head.split(b"\n", MAX_JUNK_LINES + 1)[:MAX_JUNK_LINES + 1]:
        text = _CONTROL.split(line)[-1]
        if text.lstrip(b" \t\r")[:1] == b"#":
            comment = comment or text
        elif text.strip(b" \t\r"):
            return text
    return comment


def _byte_sizes(block: Block) -> bool:
    """Sizes in bytes of a block device: all multiples of 512 (offsets may be unaligned)."""
    return bool((block.size % SECTOR == 0).all())


def _sector_counts(block: Block) -> bool:
    """Sizes in 512-byte sectors (MQSim): not all multiples of 512 sectors (256 KiB), and the
    nanosecond times are integers."""
    ns = block.time_us * 1000
    return bool((block.size % (SECTOR * SECTOR) != 0).any() and
                (np.abs(ns - np.round(ns)) <= 1e-6 * np.maximum(1.0, ns)).all())


def _disksim_values(block: Block) -> bool:
    """DiskSim's units: sizes in 512-byte blocks (not all multiples of 512 blocks: those are
    byte counts, Heimdall's), and times in milliseconds: some with a fraction of a millisecond,
    or, all integer, less than a second apart on average (MQSim's integer nanoseconds read as
    milliseconds put requests minutes apart)."""
    if not (block.size % (SECTOR * SECTOR) != 0).any():
        return False
    us = block.time_us
    if (us % 1000 != 0).any():
        return True
    return bool(len(us) > 1 and (us.max() - us.min()) / (len(us) - 1) < 1e6)


_PLAUSIBLE = {"heimdall": "heimdall sizes are bytes, multiples of 512",
              "mqsim": "mqsim times are integer nanoseconds and sizes are 512-byte sector counts, "
                       "not all multiples of 512",
              "disksim": "disksim sizes are 512-byte block counts, not all multiples of 512, "
                         "and times milliseconds (with a fraction, or < 1 s apart on average)"}


_HEX_OPS = {f"{prefix}{code}": op for code, op in (
    ("08", READ), ("28", READ), ("a8", READ), ("88", READ),
    ("0a", WRITE), ("2a", WRITE), ("aa", WRITE), ("8a", WRITE)) for prefix in ("", "0x")}

MSR = DelimitedFormat(
    name="msr",
    summary="MSR Cambridge CSV: Timestamp (Windows filetime, 100 ns ticks; read relative to the "
            "first request, exactly), Hostname, DiskNumber, Type (Read/Write), Offset (bytes), "
            "Size (bytes), ResponseTime (100 ns ticks)",
    columns=("Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"),
    delimiter=b",", time=Column(0, "Timestamp", -1), op=Column(3, "Type"),
    offset=Column(4, "Offset"), size=Column(5, "Size"), ops={"Read": READ, "Write": WRITE},
    relative_time=True)

SYSTOR17 = DelimitedFormat(
    name="systor17",
    summary="SNIA SYSTOR'17 CSV: Timestamp (Unix seconds with fraction), Response (s), IOType "
            "(R/W; blank = no data transfer, dropped), LUN, Offset (bytes), Size (bytes); "
            "optional header line",
    columns=("Timestamp", "Response", "IOType", "LUN", "Offset", "Size"),
    delimiter=b",", time=Column(0, "Timestamp", 6), op=Column(2, "IOType"),
    offset=Column(4, "Offset"), size=Column(5, "Size"),
    ops={"R": READ, "W": WRITE, "": DROP}, drop_reason="blank IOType")

ALIBABA = DelimitedFormat(
    name="alibaba",
    summary="Alibaba block traces 2020 CSV: device_id, opcode (R/W), offset (bytes), length "
            "(bytes), timestamp (microseconds)",
    columns=("device_id", "opcode", "offset", "length", "timestamp"),
    delimiter=b",", time=Column(4, "timestamp", 0), op=Column(1, "opcode"),
    offset=Column(2, "offset"), size=Column(3, "length"), ops={"R": READ, "W": WRITE})

TENCENT = DelimitedFormat(
    name="tencent",
    summary="Tencent CBS CSV: Timestamp (Unix seconds), Offset (512-byte sectors), Size "
            "(512-byte sectors), IOType (0 = read, 1 = write), VolumeID",
    columns=("Timestamp", "Offset", "Size", "IOType", "VolumeID"),
    delimiter=b",", time=Column(0, "Timestamp", 6), op=Column(3, "IOType"),
    offset=Column(1, "Offset", SECTOR), size=Column(2, "Size", SECTOR),
    ops={"0": READ, "1": WRITE}, fold_case=False)

FIU = DelimitedFormat(
    name="fiu",
    summary="FIU SRCMap / IODedup traces, space separated: ts (ns), pid, process, lba (512-byte "
            "sectors), size (512-byte sectors), op (R/W), major, minor, md5 (optional)",
    columns=("ts", "pid", "process", "lba", "size", "op", "major", "minor", "md5"),
    delimiter=None, time=Column(0, "ts", -3), op=Column(5, "op"),
    offset=Column(3, "lba", SECTOR), size=Column(4, "size", SECTOR),
    ops={"R": READ, "W": WRITE}, max_fields=9)

MQSIM = DelimitedFormat(
    name="mqsim",
    summary="MQSim ASCII trace, space separated: arrival_time (integer ns), device_id, "
            "start_sector (512-byte sectors), size (512-byte sectors), type (0 = write, 1 = read)",
    columns=("arrival_time", "device_id", "start_sector", "size", "type"),
    delimiter=None, time=Column(0, "arrival_time", -3), op=Column(4, "type"),
    offset=Column(2, "start_sector", SECTOR), size=Column(3, "size", SECTOR),
    ops={"1": READ, "0": WRITE}, fold_case=False, extensions=(".trace",),
    plausible=_sector_counts)

DISKSIM = DelimitedFormat(
    name="disksim",
    summary="DiskSim ASCII trace (DiskSim, SSDsim, FlashSim sample traces), space separated: "
            "arrival_time (ms, with fraction), device, block_number (512-byte blocks), size "
            "(512-byte blocks), flags (integer bitmask, bit 0 set = read)",
    columns=("arrival_time", "device", "block_number", "size", "flags"),
    delimiter=None, time=Column(0, "arrival_time", 3), op=Column(4, "flags"),
    offset=Column(2, "block_number", SECTOR), size=Column(3, "size", SECTOR),
    ops={str(flags): READ if flags & 1 else WRITE for flags in range(127)}, fold_case=False,
    extensions=(".trace", ".disksim"), plausible=_disksim_values,
    op_help="a flags bitmask, a decimal integer 0-126 (bit 0 set = read)")

SPC = DelimitedFormat(
    name="spc",
    summary="SPC / UMass trace repository CSV: ASU, LBA (512-byte blocks), Size (bytes), Opcode "
            "(r/w), Timestamp (seconds); further optional fields are ignored",
    columns=("ASU", "LBA", "Size", "Opcode", "Timestamp"),
    delimiter=b",", time=Column(4, "Timestamp", 6), op=Column(3, "Opcode"),
    offset=Column(1, "LBA", SECTOR), size=Column(2, "Size"),
    ops={"r": READ, "w": WRITE}, max_fields=64, extensions=(".spc",))

CLOUDPHYSICS = DelimitedFormat(
    name="cloudphysics",
    summary="CloudPhysics / libCacheSim CSV with header version,time,op,size,lbn: time "
            "(seconds), op (SCSI opcode in hex: 08/28/88/a8 read, 0a/2a/8a/aa write), size "
            "(bytes), lbn (512-byte blocks)",
    columns=("version", "time", "op", "size", "lbn"),
    delimiter=b",", time=Column(1, "time", 6), op=Column(2, "op"),
    offset=Column(4, "lbn", SECTOR), size=Column(3, "size"),
    ops=_HEX_OPS, detect_needs_header=True)

HEIMDALL = DelimitedFormat(
    name="heimdall",
    summary="Heimdall replayer trace (MSR excerpts), space separated: timestamp (ms), device, "
            "offset (bytes), size (bytes), op (1 = read, 0 = write)",
    columns=("timestamp", "device", "offset", "size", "op"),
    delimiter=None, time=Column(0, "timestamp", 3), op=Column(4, "op"),
    offset=Column(2, "offset"), size=Column(3, "size"),
    ops={"1": READ, "0": WRITE}, fold_case=False, extensions=(".trace",),
    plausible=_byte_sizes)

DELIMITED: dict[str, DelimitedFormat] = {f.name: f for f in (
    MSR, SYSTOR17, ALIBABA, TENCENT, FIU, MQSIM, DISKSIM, SPC, CLOUDPHYSICS, HEIMDALL)}


#: units a csv header name may end in (after ``_``, ``-``, a space or in brackets: ``time_us``,
#: ``Size (bytes)``, ``offset[sectors]``), for the time column and for the offset and size columns
NAMED_TIME_UNITS: dict[str, str] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("us", "µs", "usec", "microsecond", "microseconds"), "us"),
    **dict.fromkeys(("ns", "nsec", "nanosecond", "nanoseconds"), "ns")}
NAMED_BYTE_UNITS: dict[str, int] = {**dict.fromkeys(("b", "byte", "bytes"), 1),
                                    **dict.fromkeys(("sector", "sectors"), SECTOR)}


def unit_in_name(name: str, units: Mapping[str, Any]) -> Any:
    """The unit a column name states by its last word (``"time_us"`` -> ``"us"``, ``"Size
    (bytes)"`` -> 1), or None: a name like ``"ts"`` or ``"lba"`` states none."""
    words = re.findall(r"[^\W_]+", name.lower())
    return units.get(words[-1]) if words else None


def csv_format(columns: Mapping[str, int | str], *, delimiter: str | None = ",",
               header: bool | None = None, time_unit: str | None = None,
               offset_unit: int | None = None, size_unit: int | None = None,
               read_values: Iterable[str] = ("r", "read"),
               write_values: Iterable[str] = ("w", "write"), drop_values: Iterable[str] = (),
               case_sensitive: bool = False,
               header_names: Sequence[str] | None = None) -> DelimitedFormat:
    """The generic ``csv`` format from a column map; the options of ``load_trace(p, "csv")``.

    Example: ``load_trace(p, "csv", columns={"time": 0, "op": 2, "offset": 3, "size": 4},
    time_unit="s", offset_unit=512, read_values=("R", "0"), write_values=("W", "1"))``.

    ``columns`` maps ``time``, ``op``, ``offset`` and ``size`` to a 0-based field index, or to a
    column name looked up in the header line (``header_names``, read from the file by the
    reader). Other fields are ignored. ``delimiter`` is one character, or None for runs of white
    space. ``header``: None skips a first line whose time, offset and size fields start with a
    letter, True always skips the first line, False never (names in ``columns`` imply True).
    ``time_unit`` is one of :data:`TIME_UNITS` (times may have a fraction); ``offset_unit`` /
    ``size_unit`` are bytes per unit (512 for sectors). Units are never guessed: each must be
    given, or be the last word of its column's header name (``time_us``, ``size_bytes``,
    ``offset (sectors)``: :data:`NAMED_TIME_UNITS`, :data:`NAMED_BYTE_UNITS`); one given that
    contradicts the name is an error too. Op tokens (at most 8 bytes; compared
    case-insensitively unless ``case_sensitive``) in ``read_values`` / ``write_values`` become
    reads / writes, those in ``drop_values`` are dropped (counted in ``source["dropped"]``),
    anything else is an error.
    """
    need = {"time", "op", "offset", "size"}
    for option, values in (("read_values", read_values), ("write_values", write_values),
                           ("drop_values", drop_values)):
        if isinstance(values, (str, bytes)) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{option} must be a list of strings (op values), got {values!r}")
    for option, flag in (("case_sensitive", case_sensitive), ("header", header)):
        if not isinstance(flag, bool) and not (option == "header" and flag is None):
            raise ValueError(f"{option} must be true or false, got {flag!r}")
    if set(columns) != need:
        raise ValueError(f"columns must map exactly {sorted(need)}, got {sorted(columns)}")
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {list(TIME_UNITS)}, got {time_unit!r}")
    if delimiter is not None and (len(delimiter.encode()) != 1 or delimiter in "\r\n"):
        raise ValueError(f"delimiter must be one byte other than CR/LF, got {delimiter!r}")
    for unit_name, unit in (("offset_unit", offset_unit), ("size_unit", size_unit)):
        if unit is not None and (not isinstance(unit, int) or isinstance(unit, bool) or unit < 1):
            raise ValueError(f"{unit_name} must be a positive integer (bytes), got {unit!r}")
    index: dict[str, int] = {}
    for role, col in columns.items():
        if isinstance(col, str):
            names = [n.strip().lower() for n in header_names or ()]
            if col.strip().lower() not in names:
                raise ValueError(f"column {col!r} is not in the header {list(header_names or ())}")
            index[role] = names.index(col.strip().lower())
        elif isinstance(col, int) and not isinstance(col, bool) and 0 <= col < 64:
            index[role] = col
        else:
            raise ValueError(f"column for {role!r} must be an index in [0, 64) or a name, "
                             f"got {col!r}")
    ops: dict[str, int] = {}
    for values, code in ((read_values, READ), (write_values, WRITE), (drop_values, DROP)):
        for value in values:
            key = value if case_sensitive else value.lower()
            if ops.get(key, code) != code:
                raise ValueError(f"op value {value!r} is given for two different ops")
            ops[key] = code
    time_unit = _stated_unit("time", "time_unit", time_unit, columns, index, header_names,
                             NAMED_TIME_UNITS, "one of " + ", ".join(TIME_UNITS))
    offset_unit = _stated_unit("offset", "offset_unit", offset_unit, columns, index, header_names,
                               NAMED_BYTE_UNITS, "bytes per unit: 1 for bytes, 512 for sectors")
    size_unit = _stated_unit("size", "size_unit", size_unit, columns, index, header_names,
                             NAMED_BYTE_UNITS, "bytes per unit: 1 for bytes, 512 for sectors")
    width = max(index.values()) + 1
    names = tuple(header_names or ()) if header_names and len(header_names) >= width else ()
    names = names or tuple(f"field {i + 1}" for i in range(width))
    for role, i in index.items():
        if names[i].startswith("field "):
            names = names[:i] + (role,) + names[i + 1:]
    return DelimitedFormat(
        name="csv", summary="", columns=names,
        delimiter=None if delimiter is None else delimiter.encode(),
        time=Column(index["time"], names[index["time"]], TIME_UNITS[time_unit]),
        op=Column(index["op"], names[index["op"]]),
        offset=Column(index["offset"], names[index["offset"]], offset_unit),
        size=Column(index["size"], names[index["size"]], size_unit),
        ops=ops, fold_case=not case_sensitive, max_fields=1 << 20,
        header=True if header_names else header, drop_reason="drop_values")


def _stated_unit(role: str, option: str, given: Any, columns: Mapping[str, int | str],
                 index: Mapping[str, int], header_names: Sequence[str] | None,
                 named: Mapping[str, Any], values: str) -> Any:
    """The unit of a csv column: ``given``, else the one its header name states; a ValueError
    when neither states one (a trace's units are never guessed) or the two disagree."""
    name = None
    if header_names and index[role] < len(header_names):
        name = header_names[index[role]]
    elif isinstance(columns[role], str):
        name = columns[role]
    in_name = unit_in_name(name, named) if name else None
    column = f"{role} column {name!r}" if name else f"{role} column (field {index[role] + 1})"
    if given is None and in_name is None:
        raise ValueError(f"the unit of the {column} is not stated: give {option}= ({values}), or "
                         f"name the unit at the end of the column's header (e.g. '{role}_"
                         f"{'us' if role == 'time' else 'bytes'}'); hss-gym never guesses a unit")
    if given is not None and in_name is not None and given != in_name:
        raise ValueError(f"{option}={given!r} contradicts the {column}, whose name says "
                         f"{in_name!r}")
    return in_name if given is None else given


# ============================================================================ blkparse


_DEVICE = re.compile(rb"[0-9]+,[0-9]+")
_EVENT_FIELDS = ("device", "cpu", "sequence", "time", "pid", "action", "RWBS")


Columns = tuple[list[float], list[int], list[int], list[int], list[int]]


class FatalFormatError(TraceFormatError):
    """An error that ends the read (not a bad row that ``skip_bad`` may skip)."""


def parse_lines(data: bytes | memoryview, first_line: int,
                handle: Callable[[bytes, int, Columns, Counter[str]], None]) -> tuple[Block, int]:
    """Run ``handle(line, line_number, out, dropped)`` on every line of ``data``, counting the
    rows it rejects with TraceFormatError (the first error is kept for the message). Returns the
    block and the number of the line after the last one."""
    data = bytes(data)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    out: Columns = ([], [], [], [], [])
    skipped, first_error, dropped = 0, None, Counter[str]()
    for i, line in enumerate(lines):
        try:
            handle(line, first_line + i, out, dropped)
        except FatalFormatError:
            raise
        except TraceFormatError as exc:
            skipped += 1
            first_error = first_error or exc
    return Block.from_lists(*out, skipped=skipped, first_error=first_error, dropped=dropped), first_line + len(lines)


class BlkparseParser:
    """``blkparse`` default text output (blktrace's ``blkparse_fmt.c``, ``process_default``).

    Every event line starts ``maj,min cpu seq seconds.nanoseconds pid action RWBS``; what follows
    depends on the action (``blkparse(1)``, "Default output"):

    ==========================  ===============================================================
    action                      rest of the line
    ==========================  ===============================================================
    Q queued, D issued,         ``sector + nsectors [comm]``; without data: ``[comm]``; with
    I inserted, B bounced       ``-t``: ``(elapsed)`` before ``[comm]``; packet (SCSI
                                passthrough) commands: ``bytes [(cdb)] [comm]``
    C complete, R requeue       ``sector + nsectors [error]``; without data ``sector [error]``;
                                ``(elapsed)`` before ``[error]`` with ``-t``; packet commands
                                ``[(cdb)] [error]``; error is 0 or a negative errno
    M/F back/front merge,       ``sector + nsectors [comm]`` or ``[comm]``
    G get request, S sleep
    P plug; U/UT unplug         ``[comm]``; ``[comm] requests``
    ZP/ZU zone (un)plug
    A remap                     ``sector + nsectors <- (maj,min) sector``
    X split                     ``sector / new_sector [comm]``
    m message                   free text
    ==========================  ===============================================================

    RWBS is an optional ``F`` (pre-flush), then ``D`` (discard), ``W`` (write), ``R`` (read) or
    ``N`` (no data), then optional ``F`` (FUA), ``A`` (read-ahead), ``S`` (sync), ``M`` (meta).
    Sectors are 512 bytes.

    A blkparse file is not an ordered log: blktrace buffers events per CPU and blkparse merges
    the buffers, so on a multi-CPU machine (or from ``blkparse -i`` of several files) times go
    backwards. :func:`~hss_gym.workloads.readers.load_trace` therefore sorts blkparse requests by
    time by default (stable: ties keep their file order) and counts those that moved in
    ``Trace.source["reordered"]``. Lines before the first event line (a tar header, a note) are
    junk, counted in ``source["junk_lines"]``; lines after it that are not events are the
    summaries blkparse prints at the end.

    **Requests are the ``D`` (issue) events** by default: a ``D`` is one request handed to the
    device driver, after the I/O scheduler merged or split the file system's bios, so the trace
    is what the device served (the granularity of the MSR and SYSTOR block traces, and what
    ``btrecord``/``btreplay`` replay). ``event="Q"`` takes the ``Q`` (queued) events instead: the
    bios as submitted, before merging - use it for traces without ``D`` events (a device-mapper
    volume, or ``blktrace -a queue``). ``D`` events that ``R`` requeued are issued again; the
    repeat is not a new request (counted as ``requeued``). Request events without data (RWBS
    ``N``, flushes of 0 sectors), discards (``D`` in RWBS) and packet commands are dropped and
    counted. Other actions are not requests; every action's count is in
    ``Trace.source["events"]``, the devices seen in ``source["devices"]`` (``device="8,0"``
    keeps one device's events: sectors of different devices would share one address space).

    When ``C`` (complete) events are present, each is paired with the oldest unpaired request of
    the same device, sector and nsectors; the measured latency (C time - request time, µs) is
    ``Trace.source["latency_us"]`` (NaN when unpaired, e.g. ``Q`` events that were merged). To
    bound memory at most :attr:`max_pending` keys wait for their ``C``; beyond that the oldest is
    given up. Completions with a non-zero error are counted in ``completion_errors``.
    """

    name = "blkparse"
    time_field = "time"
    max_pending = 1 << 16
    EVENTS = ("D", "Q")
    #: blkparse merges per-CPU buffers: a file is not an ordered log, so load_trace sorts it
    #: unless told ``sort=False`` (the number of requests that moved is in source["reordered"])
    sort_by_default = True

    def __init__(self, path: str, event: str = "D", device: str | None = None) -> None:
        if event not in self.EVENTS:
            raise ValueError(f"event must be one of {list(self.EVENTS)} (the blkparse action "
                             f"that defines a request), got {event!r}")
        if device is not None and (not isinstance(device, str) or not _DEVICE.fullmatch(device.encode())):
            raise ValueError(f"device must be 'major,minor' as blkparse prints it (e.g. '8,0'), "
                             f"got {device!r}")
        self.path, self.event, self.device = path, event.encode(), device
        self.next_line = 1
        self.junk = 0                       # lines before the first event line (not events)
        self.first_junk_error: TraceFormatError | None = None
        self._junk_open = True
        self.count = 0
        self.paired = 0
        self.completion_errors = 0
        self.events: Counter[bytes] = Counter()
        self.devices: dict[str, None] = {}
        self._pending: dict[tuple[bytes, int, int], list[tuple[int, float]]] = {}
        self._requeued: Counter[tuple[bytes, int, int]] = Counter()
        self._done_index = array("q")     # request index and latency of paired completions
        self._done_latency = array("d")   # not yet handed out by extras()

    def empty_hint(self) -> str:
        """Why a file gave no request, when its events tell (for the zero-requests error)."""
        other = b"Q" if self.event == b"D" else b"D"
        if self.events.get(other):
            return (f"; it has {self.events[other]} {other.decode()} events: load_trace(..., "
                    f"event={other.decode()!r}) takes those as the requests")
        return ""

    def info(self) -> dict[str, Any]:
        events = {a.decode("utf-8", "replace"): n for a, n in self.events.items()}
        return {"event": self.event.decode(), "events": events, "devices": list(self.devices),
                "completions_paired": self.paired, "completion_errors": self.completion_errors}

    def extras(self, start: int, stop: int) -> dict[str, np.ndarray]:
        if not self.paired:
            return {}
        index = np.frombuffer(self._done_index, dtype=np.int64)
        value = np.frombuffer(self._done_latency, dtype=np.float64)
        latency = np.full(stop - start, np.nan)
        here = (index >= start) & (index < stop)
        latency[index[here] - start] = value[here]
        later = index >= stop
        self._done_index = array("q", index[later].tobytes())
        self._done_latency = array("d", value[later].tobytes())
        return {"latency_us": latency}

    def parse(self, data: bytes | memoryview) -> Block:
        block, self.next_line = parse_lines(data, self.next_line, self._handle)
        return block

    def _handle(self, line: bytes, lineno: int, out: Columns, dropped: Counter[str]) -> None:
        f = line.split()
        if not f or not _DEVICE.fullmatch(f[0]):
            if f and self._junk_open:  # before the first event: junk (a tar header, a preamble)
                self.junk += 1
                self.first_junk_error = self.first_junk_error or TraceFormatError(
                    f"not a blkparse event line: {_show(line)}", path=self.path, line=lineno)
            return  # blank lines, the per-CPU and total summaries at the end
        self._junk_open = False
        if len(f) < 7:  # every event line has these; fewer: a line cut short (a truncated file)
            raise TraceFormatError(
                f"expected an event line 'maj,min cpu seq time pid action RWBS ...', found "
                f"{len(f)} fields (is the line cut short?)", path=self.path, line=lineno,
                field=_EVENT_FIELDS[len(f)])
        action = f[5]
        self.events[action] += 1
        if self.device is not None and f[0].decode() != self.device:
            return
        if action == self.event or action in (b"C", b"R"):
            self._event(f, action, lineno, out, dropped)

    def _event(self, f: list[bytes], action: bytes, line: int, out: Columns,
               dropped: Counter[str]) -> None:
        def error(message: str, name: str) -> TraceFormatError:
            return TraceFormatError(message, path=self.path, line=line, field=name)

        time = tk.parse_decimal_scalar(f[3])
        if time is None:
            raise error(f"expected seconds such as 0.001368096, got {_show(f[3])}", "time")
        rwbs = f[6]
        kind = rwbs[1:2] if rwbs[:1] == b"F" and len(rwbs) > 1 else rwbs[:1]
        if kind not in (b"D", b"W", b"R", b"N"):
            raise error(f"unknown RWBS {_show(rwbs)}: expected [F](D|W|R|N)[F][A][S][M]", "RWBS")
        request = action == self.event
        if action == b"C" and f[-1].startswith(b"[") and f[-1] not in (b"[0]",):
            self.completion_errors += 1
        extent = self._extent(f, action, error)
        if kind == b"D" or kind == b"N" or extent is None or not extent[1]:
            if request:
                dropped["discard" if kind == b"D" else
                        "packet_command" if extent is None and kind != b"N" else "no_data"] += 1
            return
        sector, nsec = extent
        if (sector + nsec) * SECTOR >= MAX_BYTES:
            raise error(f"sector {sector} + {nsec} ends at or beyond 4 PiB (2**52 bytes), "
                        f"{_LIMIT_TEXT}", "sector")
        t_us = tk.to_us_scalar(time[0], time[1], 6)
        key = (f[0], sector, nsec)
        if action == b"R":
            if key in self._pending:
                self._requeued[key] += 1  # its next issue is a repeat, not a new request
            return
        if not request:  # a completion
            waiting = self._pending.get(key)
            if waiting:
                index, issued = waiting.pop(0)
                self._done_index.append(index)
                self._done_latency.append(t_us - issued)
                self.paired += 1
                if not waiting:
                    del self._pending[key]
            return
        if self._requeued.get(key):
            self._requeued[key] -= 1
            dropped["requeued"] += 1
            return
        self.devices.setdefault(f[0].decode())
        self._pending.setdefault(key, []).append((self.count, t_us))
        if len(self._pending) > self.max_pending:
            del self._pending[next(iter(self._pending))]
        self.count += 1
        for column, value in zip(out, (t_us, READ if kind == b"R" else WRITE, sector * SECTOR,
                                       nsec * SECTOR, line)):
            column.append(value)

    @staticmethod
    def _extent(f: list[bytes], action: bytes,
                error: Callable[[str, str], TraceFormatError]) -> tuple[int, int] | None:
        """(sector, nsectors) of an event with a position, (0, 0) of one without data, or None
        for a packet command (``bytes (cdb) [comm]``: no sector)."""
        rest = f[7:]
        if len(rest) >= 2 and rest[1] == b"+":
            sector = tk.parse_uint_scalar(rest[0])
            nsec = tk.parse_uint_scalar(rest[2]) if len(rest) > 2 else None
            if sector is None:
                raise error(f"expected a sector number, got {_show(rest[0])}", "sector")
            if nsec is None:
                got = _show(rest[2]) if len(rest) > 2 else "nothing (is the line cut short?)"
                raise error(f"expected a sector count after '+', got {got}", "nsectors")
            return sector, nsec
        if len(rest) >= 2 and rest[0][:1].isdigit() and rest[1][:1] in (b"[", b"("):
            value = tk.parse_uint_scalar(rest[0])
            if value is None:
                raise error(f"expected a number, got {_show(rest[0])}", "sector")
            # C/R without data print the sector alone; Q/D/I/B packet commands print bytes
            return (value, 0) if action in (b"C", b"R") else None
        if rest and rest[0][:1] in (b"[", b"("):
            return (0, 0)  # no data (``[comm]``, ``(elapsed) [comm]``, a packet ``(cdb) [error]``)
        raise error("expected 'sector + nsectors', a number then '[' or '(', or '[' or '(' "
                    "after RWBS", "sector")


# ============================================================================ fio iolog


class FioParser:
    """fio iolog, versions 2 and 3 (fio ``HOWTO``, "Trace file format"; fio ``iolog.c``).

    The first line is ``fio version 2 iolog`` or ``fio version 3 iolog``. Version 2 lines are
    ``filename action`` (file actions ``add``/``open``/``close``, ignored) or
    ``filename action offset length`` (bytes). Version 3 puts a timestamp first. ``read`` and
    ``write`` are requests; ``sync``, ``datasync`` and ``trim`` are dropped and counted.

    Times: version 3 timestamps are relative to the start of the run, in **microseconds** by
    default — fio writes them with ``utime_since_now()`` and replays them as microsecond delays
    (``time_unit`` overrides, e.g. ``"ms"``); version 3 ``wait`` lines are ignored like fio does
    (counted as dropped). Version 2 logs carry no times, so they are synthesised: the clock
    starts at 0, each request arrives at the clock and advances it by ``gap_us`` (default
    100 µs, an open-loop 10,000 IOPS); a ``wait`` line (``offset`` = µs relative to the
    previous wait, values below 100 ignored, as the HOWTO defines it) moves the clock forward to
    the accumulated wait time if it is behind. Offsets are per file as logged; the files seen
    are listed in ``Trace.source["files"]``.
    """

    name = "fio"

    def __init__(self, path: str, gap_us: float = 100.0, time_unit: str = "us") -> None:
        if not (isinstance(gap_us, (int, float)) and np.isfinite(gap_us) and gap_us >= 0):
            raise ValueError(f"gap_us must be a finite number >= 0, got {gap_us!r}")
        if time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {list(TIME_UNITS)}, got {time_unit!r}")
        self.path, self.gap_us, self.unit_exp = path, float(gap_us), TIME_UNITS[time_unit]
        self.next_line = 1
        self.version: int | None = None
        self.files: dict[str, None] = {}
        self._clock = 0.0
        self._wait_base = 0.0

    @property
    def time_field(self) -> str:
        return "timestamp" if self.version == 3 else "wait"

    def info(self) -> dict[str, Any]:
        return {"iolog_version": self.version, "files": list(self.files)}

    def extras(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return {}

    def parse(self, data: bytes | memoryview) -> Block:
        block, self.next_line = parse_lines(data, self.next_line, self._handle)
        return block

    def _handle(self, line: bytes, lineno: int, out: Columns, dropped: Counter[str]) -> None:
        if self.version is None:
            head = line.strip()
            if head not in (b"fio version 2 iolog", b"fio version 3 iolog"):
                raise FatalFormatError(
                    "not a fio iolog: the first line must be 'fio version 2 iolog' or "
                    f"'fio version 3 iolog', got {_show(head)}", path=self.path, line=lineno)
            self.version = int(head[12:13])
            return
        f = line.split()
        if f:
            self._line(f, lineno, out, dropped)

    def _line(self, f: list[bytes], line: int,
              out: tuple[list[float], list[int], list[int], list[int], list[int]],
              dropped: Counter[str]) -> None:
        def error(message: str, name: str | None) -> TraceFormatError:
            return TraceFormatError(message, path=self.path, line=line, field=name)

        v3 = self.version == 3
        t_us = 0.0
        if v3:
            if len(f) not in (3, 5):
                raise error(f"expected 3 or 5 fields (timestamp filename action [offset length])"
                            f", found {len(f)}", _missing(_FIO_V3_FIELDS, len(f)))
            ts = tk.parse_uint_scalar(f[0])
            if ts is None:
                raise error(f"expected an integer timestamp, got {_show(f[0])}", "timestamp")
            t_us = tk.to_us_scalar(ts, 0, self.unit_exp)
            f = f[1:]
        elif len(f) not in (2, 4):
            raise error(f"expected 2 or 4 fields (filename action [offset length]), found "
                        f"{len(f)}", _missing(_FIO_V3_FIELDS[1:], len(f)))
        action = f[1]
        if len(f) == 2:
            if action not in (b"add", b"open", b"close"):
                raise error(f"unknown file action {_show(action)}; expected add, open or close",
                            "action")
            return
        offset, length = tk.parse_uint_scalar(f[2]), tk.parse_uint_scalar(f[3])
        if action in (b"sync", b"datasync", b"trim") or (v3 and action == b"wait"):
            dropped[action.decode()] += 1
            return
        if offset is None:
            raise error(f"expected an unsigned integer, got {_show(f[2])}", "offset")
        if action == b"wait":
            if offset >= 100:
                self._wait_base += offset
                self._clock = max(self._clock, self._wait_base)
            return
        if action not in (b"read", b"write"):
            raise error(f"unknown action {_show(action)}; expected read, write, sync, datasync, "
                        "trim or wait", "action")
        if length is None or length == 0:
            raise error(f"expected a length in bytes > 0, got {_show(f[3])}", "length")
        if offset + length >= MAX_BYTES:
            raise error(f"offset {offset} + length {length} ends at or beyond 4 PiB (2**52 "
                        f"bytes), {_LIMIT_TEXT}", "offset")
        if not v3:
            t_us, self._clock = self._clock, self._clock + self.gap_us
        self.files.setdefault(f[0].decode("utf-8", "replace"))
        for column, value in zip(out, (t_us, READ if action == b"read" else WRITE, offset,
                                       length, line)):
            column.append(value)


_FIO_V3_FIELDS = ("timestamp", "filename", "action", "offset", "length")


def _missing(names: Sequence[str], n: int) -> str | None:
    """The first field missing from a line of ``n`` fields (None: too many fields)."""
    return names[n] if n < len(names) else None


def _show(token: bytes) -> str:
    return repr(token.decode("utf-8", "replace")[:40])


# ============================================================================ registry


#: Supported formats: name -> one-line description (columns and units).
FORMATS: dict[str, str] = {
    **{name: fmt.summary for name, fmt in DELIMITED.items()},
    "blkparse": "blkparse default text output: maj,min cpu seq time(s) pid action RWBS sector "
                "+ nsectors [comm]; D (issue) events are the requests (event='Q': the queued "
                "bios), C events give latency",
    "fio": "fio iolog v2 (no times: synthesised with gap_us) and v3 (timestamp in µs)",
    "csv": "generic delimited text with a column map (columns=, time_unit=, offset_unit=, ...)",
    "cache": "hss-gym columnar trace cache (hss_gym.workloads.cache)",
}

#: The options each format takes (keyword arguments of load_trace after the general ones).
FORMAT_OPTIONS: dict[str, frozenset[str]] = {
    "fio": frozenset({"gap_us", "time_unit"}),
    "blkparse": frozenset({"event", "device"}),
    "csv": frozenset({"columns", "delimiter", "header", "time_unit", "offset_unit", "size_unit",
                      "read_values", "write_values", "drop_values", "case_sensitive"}),
}
_OPTIONS = FORMAT_OPTIONS


def make_parser(name: str, path: str, first_line: bytes, options: Mapping[str, Any],
                engine: str = "auto") -> Parser:
    """A fresh parser for format ``name`` with the user's ``options`` (checked here)."""
    if name not in FORMATS or name == "cache":
        raise ValueError(f"unknown trace format {name!r}; supported: "
                         f"{', '.join(n for n in FORMATS if n != 'cache')}")
    unknown = set(options) - _OPTIONS.get(name, set())
    if unknown:
        allowed = ", ".join(sorted(_OPTIONS.get(name, ()))) or "none"
        raise TypeError(f"unknown option(s) {sorted(unknown)} for format {name!r} "
                        f"(accepted: {allowed})")
    if name in DELIMITED:
        return DelimitedParser(DELIMITED[name], path, engine)
    if name == "blkparse":
        return BlkparseParser(path, **options)
    if name == "fio":
        return FioParser(path, **options)
    opts = dict(options)
    if "columns" not in opts:
        raise TypeError("format 'csv' needs columns={'time': i, 'op': i, 'offset': i, "
                        "'size': i} (indices or header names)")
    if not isinstance(opts["columns"], Mapping):
        raise ValueError(f"columns must map time, op, offset and size to a field index or a "
                         f"header name, got {opts['columns']!r}")
    header_names = None
    if any(isinstance(c, str) for c in opts["columns"].values()):
        if opts.get("header") is False:
            raise ValueError("columns given by name need the header line (header is False)")
        delim = opts.get("delimiter", ",")
        line = first_line.rstrip(b"\r").decode("utf-8", "replace")
        header_names = line.split() if delim is None else [c.strip() for c in line.split(delim)]
        for col in opts["columns"].values():
            if isinstance(col, str) and col.strip().lower() not in (
                    n.lower() for n in header_names):
                raise TraceFormatError(f"column {col!r} is not in the header {header_names}",
                                       path=path, line=1, field=col)
    try:
        layout = csv_format(header_names=header_names, **opts)
    except ValueError as e:  # name the file whose layout it is (none when options are checked alone)
        raise TraceFormatError(str(e), path=path or None) from None
    return DelimitedParser(layout, path, engine)


_BLKPARSE_LINE = re.compile(rb"\s*[0-9]+,[0-9]+\s+[0-9]+\s+[0-9]+\s+[0-9]+\.[0-9]+\s+[0-9]+\s+"
                            rb"[A-Za-z]{1,2}\s")
_DETECT_LINES = 2000  # lines of the head (at most its 64 KiB) a delimited format must parse
_DETECT_ORDER = ("msr", "systor17", "alibaba", "tencent", "spc", "cloudphysics", "fiu",
                 "heimdall", "mqsim", "disksim")


def detect(head: bytes, path: str, engine: str = "auto") -> str:
    """The format of a file from its first decompressed bytes (and its name as a hint).

    Every delimited format parses the first lines (up to :data:`_DETECT_LINES`, 64 KiB); the
    candidates are those that parse most rows, need no header they lack, and whose values are
    plausible for their units (e.g. byte sizes that are multiples of 512). The one that parses
    the most rows wins; a file extension only breaks a tie. If two candidates remain tied (or
    the rows parse only as formats whose values are implausible), the file is *not* guessed:
    TraceFormatError names the candidates and asks for ``format=`` - a wrong guess would
    rescale offsets and times silently.
    """
    if head.startswith((b"fio version 2 iolog", b"fio version 3 iolog")):
        return "fio"
    head = head.rstrip(b"\0")  # NUL padding at the end of a small file (not read as a row)
    if not head.strip():  # not a format to detect: say so, not "could not detect the format"
        raise TraceFormatError("is empty: no requests to read" if not head else
                               f"holds no requests: its first {len(head):,} bytes are blank", path=path)
    # the first lines that are not blank: a junk line or two (a tar header) may come first
    first_lines = [line for line in head.split(b"\n", 200)[:200] if line.strip()][:10]
    if any(_BLKPARSE_LINE.match(line + b" ") for line in first_lines):
        return "blkparse"
    lines = head.split(b"\n", _DETECT_LINES)  # head: complete lines (or the whole file)
    sample = head if len(lines) <= _DETECT_LINES else b"\n".join(lines[:_DETECT_LINES]) + b"\n"
    suffixes = {s.lower() for s in Path(path).suffixes}
    first_rows = first_lines
    scores: dict[str, tuple[int, bool]] = {}
    implausible: list[str] = []
    for name in _DETECT_ORDER:
        fmt = DELIMITED[name]
        parser = DelimitedParser(fmt, path, engine, describe_errors=False)
        # cheap pre-check: one of the first lines (junk, a header, then rows) has the field count
        if not any(fmt.min_fields <= len(parser.fields(line)) <= parser.max_fields
                   for line in first_rows):
            continue
        block = parser.parse(sample)
        # most rows must parse (a few malformed rows are reported later, with their lines)
        if len(block) <= block.skipped or (fmt.detect_needs_header and not parser.saw_header):
            continue
        if fmt.plausible is not None and not fmt.plausible(block):
            implausible.append(name)
            continue
        scores[name] = (len(block) - block.skipped, bool(set(fmt.extensions) & suffixes))
    names = ", ".join(n for n in FORMATS if n != "cache")
    if not scores:
        if implausible:
            raise TraceFormatError(
                f"the first lines parse as {' or '.join(map(repr, implausible))} but their values "
                f"are implausible for {'that format' if len(implausible) == 1 else 'each'} "
                f"({'; '.join(_PLAUSIBLE[n] for n in implausible)}), so reading it as "
                f"{'that format' if len(implausible) == 1 else 'one of them'} would rescale "
                "its times or offsets: hss-gym does not guess. Pass the format whose units the "
                "file has (format=, or format='csv' with columns= and units)", path=path)
        raise TraceFormatError(
            f"could not detect the trace format from the first lines; pass format= (one of {names})",
            path=path)
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    if len(ranked) > 1 and scores[ranked[0]] == scores[ranked[1]]:
        tied = [n for n in ranked if scores[n] == scores[ranked[0]]]
        raise TraceFormatError(
            f"ambiguous trace format: the first {scores[ranked[0]][0]} rows parse equally well as "
            f"{' and '.join(map(repr, tied))}, whose units differ; pass format= (e.g. "
            f"format={tied[0]!r})", path=path)
    return ranked[0]
