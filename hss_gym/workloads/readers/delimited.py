"""The delimited formats' engine: one request per line in fixed columns, declared as a
:class:`DelimitedFormat` and parsed by the vectorised tokenizer (``_tokenize``).

The formats themselves (MSR, SYSTOR'17, ..., and the generic ``csv``) are declared in
:mod:`hss_gym.workloads.readers.table`; this module is the machinery that reads any of them:
headers, junk before the first record (a tar header, comments), units and the error messages
that name the column and the value that failed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.readers.protocol import (DROP, LIMIT_TEXT, MAX_JUNK_LINES, Block,
                                                show_token)
from hss_gym.workloads.trace import MAX_BYTES, TraceFormatError

_WHITE = re.compile(rb"[ \t\r]+")  # the tokenizer's white space


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
            why = f"binary data (control bytes such as NUL): {show_token(line)}"
        elif line.lstrip(b" \t\r")[:1] == b"#":
            why = f"a comment: {show_token(line)}"
        else:
            lo, hi = self.fmt.min_fields, self.max_fields
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            why = (f"not a record ({len(self.fields(line))} fields, not {want}): "
                   f"{show_token(line)}")
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
            return f"{role} {shown_bytes} is at or beyond 4 PiB (2**52 bytes), {LIMIT_TEXT}"
        return f"the request (offset + size) ends at or beyond 4 PiB, {LIMIT_TEXT}"


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
