"""Vectorised tokenizer for delimited trace text: lines -> fields -> integers.

Trace files are large (hundreds of millions of lines), so a per-line Python loop is far too slow.
:func:`tokenize` splits a block of complete text lines into fields and converts the fields a
format needs, returning one row per line. Two engines implement the same rules:

* the optional C accelerator ``hss_gym.workloads._fastparse`` (used when it is built), and
* a pure NumPy implementation (always available; several times slower than the C one).

The test suite checks that both engines agree on random input. The rules:

Lines
    A line ends at ``\\n`` (or at the end of the block). A line holding only spaces, tabs and
    ``\\r`` is *blank* (:data:`ERR_BLANK`) and is not a record. (So CRLF files read like LF.)
Fields
    With a delimiter byte (e.g. ``,``) a line with ``k`` delimiters has ``k + 1`` fields, each
    stripped of surrounding spaces, tabs and ``\\r``; empty fields are allowed. Without one
    (``delim=None``) fields are maximal runs of bytes other than space, tab and ``\\r``. A line
    whose field count is outside ``[min_fields, max_fields]`` is :data:`ERR_NFIELDS`.
Kinds (one letter per field index; fields past the string are not read)
    ``x``  not read;
    ``u``  unsigned decimal integer: 1-19 ASCII digits, at most ``2**63 - 1``;
    ``d``  decimal number ``digits[.digits]`` (at least one digit, no sign, no exponent). The value
           is returned as an integer mantissa and a count of fraction digits, so no rounding
           happens here. Up to 19 significant digits are kept; more integer digits are an error
           (too large), more fraction digits are ignored (they lie far below float64 precision),
           as are fraction digits past the 24th;
    ``k``  key: the field (at most 8 bytes, possibly empty) packed little-endian into a uint64
           (:func:`pack_key`) is looked up in the column's table of keys; the result is the int8
           value the table maps it to, or :data:`KEY_MISSING` when it is absent or longer than
           8 bytes (not an error here: the caller decides, e.g. "unknown op code");
    ``K``  key, ASCII letters folded to lower case before packing.
Errors
    Fields are converted in index order; the index of the first field that fails is stored in the
    row's error code, later fields are not converted. :data:`ERR_OK` marks a row that parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

import numpy as np

ERR_OK = -1
ERR_BLANK = -2
ERR_NFIELDS = -3
KEY_MISSING = -128

MAX_SIG_DIGITS = 19
MAX_FRAC_DIGITS = 24
_INT64_MAX = np.uint64(2**63 - 1)
_PAD = 64  # the NumPy engine converts tokens up to this long vectorised (longer: scalar path)

ACCELERATOR: ModuleType | None
try:
    from hss_gym.workloads import _fastparse as ACCELERATOR
except ImportError:  # the C extension is optional; the NumPy engine gives identical results
    ACCELERATOR = None

_SPACE = np.zeros(256, dtype=bool)
_SPACE[[ord(" "), ord("\t"), ord("\r")]] = True
_DECIMAL = re.compile(rb"([0-9]*)\.?([0-9]*)")

#: float64 powers of ten, each the correctly rounded value of the exact integer.
POW10 = np.array([float(10**k) for k in range(64)])


@dataclass
class Table:
    """Result of :func:`tokenize`: one row per line of the block."""

    n: int
    err: np.ndarray                     # int8: ERR_OK, ERR_BLANK, ERR_NFIELDS or a field index
    vals: list[np.ndarray | None]       # per field index: int64 (u), uint64 mantissas (d) or
                                        # int8 values from the key table (k, K)
    fracs: list[np.ndarray | None]      # per field index: int8 fraction-digit counts (d only)


class KeyTable:
    """The table of a ``k``/``K`` field: packed key (:func:`pack_key`) -> int8 value."""

    def __init__(self, mapping: Mapping[int, int]) -> None:
        if len(mapping) > 127:
            raise ValueError("a key table holds at most 127 keys")
        self.keys = np.array(list(mapping), dtype=np.uint64)
        self.values = np.array(list(mapping.values()), dtype=np.int8)


def tokenize(data: bytes | memoryview, delim: bytes | None, min_fields: int, max_fields: int,
             kinds: str, tables: Mapping[int, KeyTable] | None = None, *,
             engine: str = "auto") -> Table:
    """Split ``data`` (complete lines) into fields and convert them (see the module docstring).

    ``tables`` maps the index of each ``k``/``K`` field to its :class:`KeyTable`. ``engine``
    is ``"auto"`` (C if built, else NumPy), ``"c"`` or ``"numpy"``.
    """
    tables = tables or {}
    if len(kinds) > min_fields or min_fields > max_fields or delim == b"\n" or any(
            (k in "kK") != (i in tables) for i, k in enumerate(kinds)):
        raise ValueError(f"inconsistent tokenizer arguments {kinds!r} {min_fields} {max_fields}")
    arrays = {i: (t.keys, t.values) for i, t in tables.items()}
    if engine == "auto":
        engine = "c" if ACCELERATOR is not None else "numpy"
    if engine == "c":
        if ACCELERATOR is None:
            raise RuntimeError("the C tokenizer hss_gym.workloads._fastparse is not built")
        return _tokenize_c(data, delim, min_fields, max_fields, kinds, arrays)
    if engine == "numpy":
        return _tokenize_numpy(data, delim, min_fields, max_fields, kinds, arrays)
    raise ValueError(f"unknown tokenizer engine {engine!r}")


def count_lines(data: bytes | memoryview) -> int:
    """Number of lines in ``data`` (a final line without ``\\n`` counts)."""
    if ACCELERATOR is not None:
        return int(ACCELERATOR.count_lines(data))
    buf = np.frombuffer(data, dtype=np.uint8)
    return int(np.count_nonzero(buf == 10)) + int(len(buf) > 0 and buf[-1] != 10)


def _tokenize_c(data: bytes | memoryview, delim: bytes | None, min_fields: int,
                max_fields: int, kinds: str,
                tables: dict[int, tuple[np.ndarray, np.ndarray]]) -> Table:
    assert ACCELERATOR is not None
    n = count_lines(data)
    err = np.empty(n, dtype=np.int8)
    dtypes = {"u": np.int64, "d": np.uint64, "k": np.int8, "K": np.int8}
    vals = [None if k == "x" else np.empty(n, dtype=dtypes[k]) for k in kinds]
    fracs = [np.empty(n, dtype=np.int8) if k == "d" else None for k in kinds]
    keys = tuple(tables[i][0] if i in tables else None for i in range(len(kinds)))
    values = tuple(tables[i][1] if i in tables else None for i in range(len(kinds)))
    got = ACCELERATOR.tokenize(data, -1 if delim is None else delim[0], min_fields, max_fields,
                               kinds, err, tuple(vals), tuple(fracs), keys, values)
    assert got == n
    return Table(n, err, vals, fracs)


# ---------------------------------------------------------------------------- NumPy engine


def _tokenize_numpy(data: bytes | memoryview, delim: bytes | None, min_fields: int,
                    max_fields: int, kinds: str,
                    tables: dict[int, tuple[np.ndarray, np.ndarray]]) -> Table:
    buf = np.frombuffer(data, dtype=np.uint8)
    padded = _Padded(buf)
    if delim is None:
        tok_s, tok_e, count, first = _split_whitespace(buf)
        blank = count == 0
    else:
        tok_s, tok_e, count, first = _split_delimited(buf, delim[0])
        if _SPACE[delim[0]]:  # tab- or space-delimited: a blank line may have many fields
            line_s = tok_s[first]
            line_e = tok_e[first + count - 1]
            text = np.flatnonzero(~_SPACE[buf] & (buf != 10))
            blank = np.searchsorted(text, line_s) == np.searchsorted(text, line_e)
        else:
            blank = (count == 1) & (tok_s[first] == tok_e[first])
    n = len(count)
    err = np.full(n, ERR_OK, dtype=np.int8)
    err[(count < min_fields) | (count > max_fields)] = ERR_NFIELDS
    err[blank] = ERR_BLANK
    vals: list[np.ndarray | None] = [None] * len(kinds)
    fracs: list[np.ndarray | None] = [None] * len(kinds)
    for c, kind in enumerate(kinds):
        if kind == "x":
            continue
        out = np.zeros(n, dtype={"u": np.int64, "d": np.uint64}.get(kind, np.int8))
        rows = np.flatnonzero(err == ERR_OK)
        s, e = tok_s[first[rows] + c], tok_e[first[rows] + c]
        if kind == "u":
            out[rows], bad = _parse_uint(padded, s, e)
            err[rows[bad]] = c
        elif kind == "d":
            out[rows], fr, bad = _parse_decimal(padded, s, e)
            fracs[c] = np.zeros(n, dtype=np.int8)
            fracs[c][rows] = fr
            err[rows[bad]] = c
        else:
            out[rows] = _lookup_keys(padded, s, e, kind == "K", *tables[c])
        vals[c] = out
    return Table(n, err, vals, fracs)


def _line_ends(buf: np.ndarray, is_sep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the separators flagged in ``is_sep`` plus every line end (a final line
    without ``\\n`` ends at ``len(buf)``), in order, and which of them are line ends."""
    is_nl = buf == 10
    pos = np.flatnonzero(is_sep | is_nl)
    if len(buf) and buf[-1] != 10:
        pos = np.append(pos, len(buf))
    nl = np.ones(len(pos), dtype=bool)
    inside = pos < len(buf)
    nl[inside] = is_nl[pos[inside]]
    return pos, nl


def _split_whitespace(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fields as runs of bytes other than space, tab, CR; returns token starts and ends, and
    per line the field count and the index of its first token."""
    is_tok = ~_SPACE[buf] & (buf != 10)
    edges = np.diff(is_tok.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = edges == 1
    tok_s = np.flatnonzero(starts)
    tok_e = np.flatnonzero(edges == -1)
    pos, nl = _line_ends(buf, starts[:-1])  # events: token starts and line ends
    nl_at = np.flatnonzero(nl)
    count = np.diff(nl_at, prepend=-1) - 1
    first = np.cumsum(count) - count
    return tok_s, tok_e, count, first


def _split_delimited(buf: np.ndarray,
                     delim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fields between delimiters, stripped of white space; returns token starts and ends, and
    per line the field count and the index of its first token."""
    tok_e, nl = _line_ends(buf, buf == delim)
    tok_s = np.empty_like(tok_e)
    tok_s[:1] = 0
    tok_s[1:] = tok_e[:-1] + 1
    nl_at = np.flatnonzero(nl)
    count = np.diff(nl_at, prepend=-1)
    first = nl_at - count + 1
    for step, edge in ((1, tok_s), (-1, tok_e)):  # strip (rarely loops more than once)
        while True:
            m = tok_s < tok_e
            m[m] = _SPACE[buf[edge[m] - (step == -1)]]
            if not m.any():
                break
            edge += step * m
    return tok_s, tok_e, count, first


class _Padded:
    """A block with zero padding on both sides, read as unaligned little-endian 64-bit words, so
    that tokens of at most :data:`_PAD` bytes are cut out with a few 1-D gathers."""

    def __init__(self, buf: np.ndarray) -> None:
        self.buf = buf
        self.pad = np.zeros(len(buf) + 2 * _PAD, dtype=np.uint8)
        self.pad[_PAD:_PAD + len(buf)] = buf
        self.words = np.ndarray((len(self.pad) - 7,), dtype="<u8", buffer=self.pad,
                                strides=(1,))  # the 8 bytes starting at every position

    def gather(self, s: np.ndarray, e: np.ndarray, width: int,
               right: bool) -> tuple[np.ndarray, np.ndarray]:
        """Tokens ``[s, e)`` as an (n, width) byte matrix, left- or right-aligned and
        zero-padded, and the mask of the positions inside the token."""
        n_words = -(-width // 8)
        lengths = np.arange(width + 1)[:, None]
        cols = np.arange(8 * n_words)
        inside = (cols >= width - lengths) if right else (cols < lengths)
        inside &= cols < width
        # per token length, the byte mask (0xff inside) as 64-bit words: 1-D gathers of words
        # are much faster than gathering rows of a matrix
        masks = (inside * np.uint8(255)).astype(np.uint8).view("<u8")
        length = np.minimum(e - s, width)
        start = (e - width if right else s) + _PAD
        words = np.empty((len(s), n_words), dtype="<u8")
        valid_words = np.empty((len(s), n_words), dtype="<u8")
        for j in range(n_words):
            words[:, j] = self.words[start + 8 * j]
            valid_words[:, j] = masks[length, j]
        words &= valid_words
        return words.view(np.uint8)[:, :width], valid_words.view(np.uint8)[:, :width] != 0


def _parse_uint(buf: _Padded, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``u`` rule for tokens ``[s, e)``: values and a mask of invalid tokens."""
    length = e - s
    bad = (length < 1) | (length > 19)
    width = int(length[~bad].max()) if (~bad).any() else 0
    mat, valid = buf.gather(s, np.where(bad, s, e), width, right=True)
    digits = mat - np.uint8(48)
    bad |= (valid & (digits > 9)).any(axis=1)
    digits[~valid] = 0
    acc = np.zeros(len(s), dtype=np.uint64)
    for j in range(width):
        acc *= np.uint64(10)
        acc += digits[:, j]
    bad |= acc > _INT64_MAX
    return acc.astype(np.int64), bad


def _lookup_keys(buf: _Padded, s: np.ndarray, e: np.ndarray, fold: bool, table: np.ndarray,
                 values: np.ndarray) -> np.ndarray:
    """The value of each token's packed key in ``table``, KEY_MISSING if absent or too long."""
    long = (e - s) > 8
    mat, _ = buf.gather(s, np.where(long, s, e), 8, right=False)
    if fold:
        upper = (mat >= 65) & (mat <= 90)
        mat = np.where(upper, mat + np.uint8(32), mat).astype(np.uint8)
    keys = np.ascontiguousarray(mat).view("<u8").reshape(-1).astype(np.uint64)
    if not len(table):
        return np.full(len(s), KEY_MISSING, dtype=np.int8)
    order = np.argsort(table, kind="stable")
    pos = np.minimum(np.searchsorted(table[order], keys), len(table) - 1)
    found = (table[order][pos] == keys) & ~long
    return np.where(found, values[order[pos]], KEY_MISSING).astype(np.int8)


def _parse_decimal(buf: _Padded, s: np.ndarray,
                   e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``d`` rule for tokens ``[s, e)``: mantissas, fraction digits, invalid mask."""
    n = len(s)
    length = e - s
    acc = np.zeros(n, dtype=np.uint64)
    frac = np.zeros(n, dtype=np.int8)
    bad = np.zeros(n, dtype=bool)
    # common case, up to 20 characters: at most 19 digits, so the mantissa is all the digits
    short = length <= MAX_SIG_DIGITS + 1
    rows = np.flatnonzero(short)
    width = int(length[rows].max()) if len(rows) else 0
    mat, valid = buf.gather(s[rows], e[rows], width, right=False)
    is_dot = valid & (mat == 46)
    digit = mat - np.uint8(48)
    is_dig = valid & (digit <= 9)
    n_dig = is_dig.sum(axis=1)
    n_dot = is_dot.sum(axis=1)
    wrong = (valid & ~is_dot & ~is_dig).any(axis=1) | (n_dot > 1) | (n_dig == 0)
    a = np.zeros(len(rows), dtype=np.uint64)
    for j in range(width):
        a = np.where(is_dig[:, j], a * np.uint64(10) + digit[:, j], a)
    dot_at = np.argmax(is_dot, axis=1) if width else np.zeros(len(rows), dtype=np.int64)
    dot_at = np.where(n_dot > 0, dot_at, length[rows])
    acc[rows], frac[rows], bad[rows] = a, length[rows] - dot_at - (n_dot > 0), wrong
    # 20 digits or longer tokens: the general rules (limits on digits apply)
    digits_all = np.zeros(n, dtype=np.int64)
    digits_all[rows] = n_dig
    general = np.flatnonzero(~short | (digits_all > MAX_SIG_DIGITS))
    if len(general):
        acc[general], frac[general], bad[general] = _parse_decimal_general(buf, s[general],
                                                                           e[general])
    return acc, frac, bad


def _parse_decimal_general(buf: _Padded, s: np.ndarray,
                           e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``d`` rules with the digit limits, for tokens with more than 19 digits."""
    n = len(s)
    length = e - s
    long = length > _PAD
    width = int(length[~long].max()) if (~long).any() else 0
    mat, valid = buf.gather(s, np.where(long, s, e), width, right=False)
    is_dot = valid & (mat == 46)
    digit = mat - np.uint8(48)
    is_dig = valid & (digit <= 9)
    bad = ((valid & ~is_dot & ~is_dig).any(axis=1) | (is_dot.sum(axis=1) > 1)
           | ~is_dig.any(axis=1))
    in_frac = np.cumsum(is_dot, axis=1) > 0
    frac_dig = is_dig & in_frac
    ignored = frac_dig & (np.cumsum(frac_dig, axis=1) > MAX_FRAC_DIGITS)
    live = is_dig & ~ignored
    started = np.cumsum(live & (digit > 0), axis=1) > 0
    sig = np.cumsum(live & started, axis=1)
    bad |= (live & ~in_frac & (sig > MAX_SIG_DIGITS)).any(axis=1)
    use = live & (sig <= MAX_SIG_DIGITS)
    digit = np.where(use, digit, 0).astype(np.uint64)
    acc = np.zeros(n, dtype=np.uint64)
    for j in range(width):
        acc = np.where(use[:, j], acc * np.uint64(10) + digit[:, j], acc)
    frac = (use & in_frac).sum(axis=1).astype(np.int8)
    for i in np.flatnonzero(long):  # absurdly long tokens: the exact scalar rules
        parsed = parse_decimal_scalar(buf.buf[s[i]:e[i]].tobytes())
        bad[i] = parsed is None
        acc[i], frac[i] = parsed if parsed is not None else (0, 0)
    return acc, frac, bad


# ---------------------------------------------------------------------------- scalar helpers


def parse_uint_scalar(token: bytes) -> int | None:
    """The ``u`` rule for one token: its value, or None if it is not valid."""
    if not 1 <= len(token) <= 19 or not token.isdigit():
        return None
    value = int(token)
    return value if value <= 2**63 - 1 else None


def parse_decimal_scalar(token: bytes) -> tuple[int, int] | None:
    """The ``d`` rule for one token: ``(mantissa, fraction digits)``, or None if not valid."""
    match = _DECIMAL.fullmatch(token)
    if match is None or not (match[1] or match[2]):
        return None
    int_part, frac_part = match[1], match[2]
    if len(frac_part) <= MAX_FRAC_DIGITS and len((int_part + frac_part).lstrip(b"0")) <= 19:
        return int(int_part + frac_part or b"0"), len(frac_part)  # the common, exact case
    acc = sig = frac = 0
    for i, ch in enumerate(int_part + frac_part):
        in_frac = i >= len(int_part)
        d = ch - 48
        if in_frac and frac >= MAX_FRAC_DIGITS:
            continue
        if acc == 0 and d == 0:
            frac += in_frac
            continue
        if sig == MAX_SIG_DIGITS:
            if not in_frac:
                return None
            continue
        acc, sig, frac = acc * 10 + d, sig + 1, frac + in_frac
    return acc, frac


def to_us(mantissa: np.ndarray, frac: np.ndarray, unit_exp: int, *,
          inplace: bool = False) -> np.ndarray:
    """Microseconds from decimal mantissas: ``mantissa * 10**(unit_exp - frac)`` in float64.

    One multiplication or division by an exact power of ten, so the result is the correctly
    rounded value whenever the mantissa is below 2**53 (15 significant digits), and within one
    unit in the last place otherwise. ``inplace`` reuses the (uint64) mantissa array's memory.
    """
    if inplace and mantissa.dtype == np.uint64 and mantissa.flags.c_contiguous:
        out = mantissa.view(np.float64)
        np.copyto(out, mantissa, casting="unsafe")  # exact overlap: NumPy handles it
    else:
        out = mantissa.astype(np.float64)
    if not len(frac):
        return out
    f0 = int(frac[0])
    if (frac == f0).all():
        k = unit_exp - f0
        if k > 0:
            out *= POW10[k]
        elif k < 0:
            out /= POW10[-k]
        return out
    exp = unit_exp - frac.astype(np.int64)
    return np.where(exp >= 0, out * POW10[np.clip(exp, 0, None)],
                    out / POW10[np.clip(-exp, 0, None)])


def to_us_scalar(mantissa: int, frac: int, unit_exp: int) -> float:
    """:func:`to_us` for one value (the same float64 operations)."""
    k = unit_exp - frac
    m = float(np.float64(np.uint64(mantissa)))
    return float(m * POW10[k]) if k >= 0 else float(m / POW10[-k])


def pack_key(token: bytes, fold: bool) -> int:
    """The ``k``/``K`` packing of one token (at most 8 bytes) as a Python int."""
    if fold:
        token = token.lower()
    return int.from_bytes(token.ljust(8, b"\0"), "little")
