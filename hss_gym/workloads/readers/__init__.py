"""Streaming readers for real block I/O traces.

hss-gym replays published block traces (MSR Cambridge, SYSTOR'17, Alibaba, Tencent CBS, FIU,
blkparse, fio iologs, MQSim/DiskSim, SPC/UMass, CloudPhysics, ...). They come as large text
files, often gzip- or zstd-compressed, each with its own columns and units. This package turns
any of them into the one request representation, :class:`~hss_gym.workloads.trace.Trace`:

* :func:`load_trace` reads a whole file into a validated ``Trace``;
* :func:`iter_chunks` streams it as ``Trace`` chunks in bounded memory (identical requests);
* :func:`convert` parses it once into the columnar cache (:mod:`hss_gym.workloads.cache`);
* :func:`detect_format` tells the format (content sniffing, file extension as a tie-break);
* :data:`FORMATS` lists the formats with their columns and units (see ``table.py``).

Units are converted exactly: times become microseconds as written in the file (not shifted to
start at 0; use ``Trace.relative()``), sectors become bytes. Decimal times are parsed as exact
integers and scaled by a single power of ten, so ``time_us`` is the correctly rounded float64 of
the file's value whenever it has at most 15 significant digits (within 1 ulp otherwise). MSR
filetimes (~1.3e17 ticks of 100 ns, which float64 would resolve only to 2 µs) are the exception:
they count from the first request, subtracted as integers first (``source["time_origin"]``).

Real files come with junk before the first record (a tar header, comments) and NUL padding at the
end: both are skipped and counted (``source["junk_lines"]``, ``source["nul_padding"]``, a
:class:`JunkWarning`); a malformed row anywhere else is an error. blkparse output (per-CPU
buffers merged) is sorted by time by default (``source["reordered"]``).

Errors are :class:`~hss_gym.workloads.trace.TraceFormatError` s naming the file, the 1-based
line and the field. ``skip_bad=True`` skips malformed rows instead; their number is reported in
``trace.source["skipped"]`` and by a :class:`SkippedRowsWarning`. Rows a format defines as
non-requests (e.g. blkparse ``N`` events) are counted in ``trace.source["dropped"]``.

The hot path is a vectorised tokenizer with an optional C accelerator
(``hss_gym.workloads._fastparse``); both give identical results. Parsed traces can be stored in
the columnar cache of :mod:`hss_gym.workloads.cache`, which :func:`load_trace` reads
transparently.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hss_gym.workloads import cache as _cache
from hss_gym.workloads.readers._io import LongLineError, TraceFile, open_trace
from hss_gym.workloads.readers.delimited import header_text
from hss_gym.workloads.readers.detect import detect
from hss_gym.workloads.readers.protocol import Block, Parser
from hss_gym.workloads.readers.table import FORMAT_OPTIONS, FORMATS, make_parser
from hss_gym.workloads.trace import Trace, TraceFormatError

__all__ = ["FORMATS", "FORMAT_OPTIONS", "JunkWarning", "LOAD_OPTIONS", "SkippedRowsWarning",
           "TraceMemoryError", "check_options", "convert", "detect_format", "iter_chunks",
           "load_trace"]

#: The keyword options of :func:`load_trace` every format takes (the others: FORMAT_OPTIONS).
LOAD_OPTIONS = ("format", "skip_bad", "limit", "sort", "name", "block_bytes")

_COMPRESSION_SUFFIXES = {".gz", ".gzip", ".zst", ".zstd"}


class SkippedRowsWarning(UserWarning):
    """Issued when ``skip_bad=True`` skipped malformed rows (the count is in the message)."""


class TraceMemoryError(MemoryError):
    """Memory ran out while reading a trace file; the message names the file and what to do.

    A MemoryError still (callers that catch MemoryError keep working), but never a bare one: the
    command line prints the message instead of a traceback.
    """

    def __init__(self, path: str | Path, limit: int | None, count: int) -> None:
        self.path, self.limit, self.count = str(path), limit, count
        asked = f"limit={limit}" if limit is not None else "no limit"
        example = f", e.g. N={count // 2}" if count >= 2 else ""
        super().__init__(f"file {path}: out of memory after reading {count} request(s) ({asked}); "
                         f"read fewer (load_trace(..., limit=N), hss-gym --n N{example}) or free "
                         "memory")


class JunkWarning(UserWarning):
    """Issued when a file had junk lines before its first record or NUL padding at its end.

    Real files come that way (a trace cut out of a tar archive starts with the archive's header
    and ends with its zero padding). They are read without ``skip_bad``, but never silently: the
    counts are in the message and in ``Trace.source["junk_lines"]`` / ``["nul_padding"]``.
    """


def detect_format(path: str | Path) -> str:
    """The format name of a trace file: ``"cache"`` or one of :data:`FORMATS`.

    Looks at the content (first 64 KiB after decompression); the file extension only breaks
    ties between formats whose first lines are indistinguishable.
    """
    path = Path(path)
    if _cache.is_cache(path):
        return "cache"
    with TraceFile(path) as tf:
        return detect(tf.head, str(path))


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


_GENERAL_CHECKS = (
    ("skip_bad", lambda v: isinstance(v, bool), "true or false"),
    ("sort", lambda v: v is None or isinstance(v, bool), "true, false or null (the format's "
     "default: blkparse sorted, the others not)"),
    ("name", lambda v: v is None or (isinstance(v, str) and bool(v)), "a non-empty string"),
    ("block_bytes", _positive_int, "a positive integer"),
    ("limit", lambda v: v is None or _positive_int(v), "a positive integer or null"),
)


def check_options(options: Mapping[str, Any]) -> None:
    """Check :func:`load_trace` keyword options (``format`` included) without reading a file.

    For options written down before any file is read (a benchmark suite's JSON): every name
    must be one ``load_trace`` takes, every value of the right kind, and the format options
    must belong to the format (without ``format``, to one format detection can choose: the
    ``csv`` layout options need ``format="csv"``). Raises ValueError naming the option. A csv
    ``columns`` map by header name is checked when the file is read (the header is in it).
    """
    opts = dict(options)
    fmt = opts.pop("format", None)
    if fmt is not None and (not isinstance(fmt, str) or fmt not in FORMATS):
        raise ValueError(f"option 'format': unknown trace format {fmt!r}; supported: "
                         f"{', '.join(FORMATS)}")
    for key, ok, want in _GENERAL_CHECKS:
        if key in opts and not ok(value := opts.pop(key)):
            raise ValueError(f"option {key!r} must be {want}, got {value!r}")
    if fmt == "cache":
        if opts:
            raise ValueError(f"option(s) {sorted(opts)} do not apply to a trace cache (read as "
                             "stored)")
        return
    if not opts:
        return
    if fmt is None:
        candidates = [n for n, names in FORMAT_OPTIONS.items() if n != "csv" and set(opts) <= names]
        if not candidates:
            known = set().union(*FORMAT_OPTIONS.values()) | set(LOAD_OPTIONS)
            unknown = sorted(set(opts) - known)
            if unknown:
                raise ValueError(f"unknown option(s) {unknown}; load_trace takes "
                                 f"{', '.join(LOAD_OPTIONS)} and the format options "
                                 + "; ".join(f"{n}: {', '.join(sorted(v))}"
                                             for n, v in FORMAT_OPTIONS.items()))
            raise ValueError(f"option(s) {sorted(opts)} need \"format\": no one format that "
                             "detection chooses takes them all (" + "; ".join(
                                 f"{n}: {', '.join(sorted(v))}" for n, v in FORMAT_OPTIONS.items())
                             + "); a csv layout needs format 'csv'")
    else:
        candidates = [fmt]
    errors = []
    for name in candidates:
        try:
            make_parser(name, "", _header_for(opts), opts)  # no file: errors name none
            return
        except (TypeError, ValueError) as e:
            errors.append(str(e) if len(candidates) == 1 else f"as {name}: {e}")
    raise ValueError("; ".join(errors))


def _header_for(options: Mapping[str, Any]) -> bytes:
    """A header line holding the csv column names of ``options`` (to check them file-free)."""
    columns = options.get("columns")
    if not isinstance(columns, Mapping):
        return b""
    names = [c for c in columns.values() if isinstance(c, str)]
    delim = options.get("delimiter", ",")
    sep = " " if delim is None or not isinstance(delim, str) else delim
    return sep.join(names).encode()


def load_trace(path: str | Path, format: str | None = None, *, skip_bad: bool = False,
               limit: int | None = None, sort: bool | None = None, name: str | None = None,
               block_bytes: int = 1 << 24, **options: Any) -> Trace:
    """Read a whole trace file into a validated :class:`Trace`.

    Parameters
    ----------
    path:
        A trace file, possibly gzip- or zstd-compressed (recognised by magic bytes), or a
        trace cache written by :func:`hss_gym.workloads.cache.save_cache`.
    format:
        One of :data:`FORMATS`; detected from the content when omitted.
    skip_bad:
        Skip malformed rows (counted in ``source["skipped"]``, with a
        :class:`SkippedRowsWarning`) instead of raising :class:`TraceFormatError`.
    limit:
        Stop after this many requests (the head of a long trace): the rows past them are not
        read, so a malformed one there is no error.
    sort:
        Stable-sort requests by arrival time; the number of requests that moved is
        ``source["reordered"]``. ``None`` (default) sorts blkparse output (merged per-CPU
        buffers: not an ordered log) and nothing else: there a time that goes backwards is an
        error naming its line (as with ``sort=False``).
    name:
        ``Trace.name``; defaults to the file name without extensions.
    block_bytes:
        Decompressed text parsed per step (memory use; results do not depend on it).
    options:
        Format options: ``fio``: ``gap_us``, ``time_unit``; ``blkparse``: ``event`` ("D",
        default, or "Q": which action is a request), ``device`` ("maj,min"); ``csv``: see
        :func:`hss_gym.workloads.readers.table.csv_format`.

    Returns
    -------
    Trace
        ``source`` holds ``kind="file"``, ``path``, ``format``, ``sha256`` (of the raw file
        bytes), ``compression``, ``skipped``, ``dropped`` (reason -> count), ``junk_lines``
        (malformed lines before the first record, at most ``MAX_JUNK_LINES``: a tar header or
        preamble; a :class:`JunkWarning` says how many), ``nul_padding`` (NUL bytes at the end),
        ``sorted`` and ``reordered``, the ``options`` and format details (e.g. blkparse
        ``latency_us``: per-request measured latency, NaN where no completion event was found;
        MSR ``time_origin``: the first request's Timestamp, which times are relative to).
    """
    path = Path(path)
    _check_limit(limit)
    if _cache.is_cache(path):
        _cache_only(path, format, options)
        trace = _cache.load_cache(path)
        if limit is not None and limit < len(trace):
            trace = trace.slice(0, limit)
        return _renamed(trace, name)
    if sort not in (None, True, False):
        raise ValueError(f"sort must be True, False or None (the format's default), got {sort!r}")
    reader: _Reader | None = None
    try:
        with TraceFile(path, block_bytes) as tf:
            parser = _parser(tf, format, options)
            if sort is None:
                sort = bool(getattr(parser, "sort_by_default", False))
            reader = _Reader(tf, parser, skip_bad, check_order=not sort, limit=limit)
            blocks = list(reader.blocks())
            if not reader.count:
                raise reader.empty_error()
            columns = _columns(blocks)
            extras = parser.extras(0, reader.count)
            source = reader.source(tf.sha256(), options)
        source["sorted"] = sort
        if sort:
            t = columns[0]
            # requests that arrive before one on an earlier line: those the sort moves
            source["reordered"] = int(np.count_nonzero(t[1:] < np.maximum.accumulate(t)[:-1]))
            if source["reordered"]:
                order = np.argsort(t, kind="stable")
                columns = [c[order] for c in columns]
                extras = {k: v[order] for k, v in extras.items()}
        reader.warn()
        return _cache.validated(Trace(*columns, name=name or _stem(path),
                                      source={**source, **extras}))
    except MemoryError:
        raise TraceMemoryError(path, limit, reader.count if reader is not None else 0) from None


def iter_chunks(path: str | Path, format: str | None = None, chunk_size: int = 1_000_000, *,
                skip_bad: bool = False, limit: int | None = None, name: str | None = None,
                hash_file: bool = True, block_bytes: int = 1 << 24,
                **options: Any) -> Iterator[Trace]:
    """Stream a trace file as validated :class:`Trace` chunks of ``chunk_size`` requests.

    Memory stays bounded by ``block_bytes`` of text plus one chunk, whatever the file size.
    Concatenating the chunks gives exactly the requests of :func:`load_trace` (same options).
    Each chunk's ``source`` has the file provenance plus ``chunk`` (0-based), ``first_request``
    (index in the whole trace), and the ``skipped`` / ``dropped`` counts so far. The file's
    ``sha256`` needs one extra read of the raw file before the first chunk; ``hash_file=False``
    skips it (``sha256`` is then None). Arrival times must be non-decreasing across the file
    (sorting needs the whole trace: use :func:`load_trace`, which sorts blkparse output by
    default and any file with ``sort=True``). For blkparse,
    ``latency_us`` holds the completions seen by the time the chunk is emitted.
    """
    path = Path(path)
    _check_limit(limit)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if _cache.is_cache(path):
        _cache_only(path, format, options)
        trace = _cache.load_cache(path)
        stop = len(trace) if limit is None else min(limit, len(trace))
        for k, start in enumerate(range(0, stop, chunk_size)):
            chunk = trace.slice(start, min(start + chunk_size, stop))
            chunk.source.update(chunk=k, first_request=start)
            yield _renamed(chunk, name)
        return
    sha256 = _hash_file(path) if hash_file else None
    with TraceFile(path, block_bytes) as tf:
        parser = _parser(tf, format, options)
        reader = _Reader(tf, parser, skip_bad, check_order=True, limit=limit)
        pending: list[Block] = []
        held = emitted = 0
        trace_name = name or _stem(path)

        def emit() -> Trace:
            nonlocal pending, held, emitted
            columns, pending = _take(pending, min(chunk_size, held))
            n = len(columns[0])
            source = {**reader.source(sha256, options), "sorted": False,
                      "chunk": emitted // chunk_size,
                      "first_request": emitted, **parser.extras(emitted, emitted + n)}
            held, emitted = held - n, emitted + n
            return _cache.validated(Trace(*columns, name=trace_name, source=source))

        try:
            for block in reader.blocks():
                pending.append(block)
                held += len(block)
                while held >= chunk_size:
                    yield emit()
            while held:
                yield emit()
        except MemoryError:
            raise TraceMemoryError(path, limit, reader.count) from None
        if not reader.count:
            raise reader.empty_error()
        reader.warn()


# ================================================================================= internals


class _Reader:
    """Runs a parser over a file's blocks: errors, skips, drops, ordering and the limit."""

    def __init__(self, tf: TraceFile, parser: Parser, skip_bad: bool, check_order: bool,
                 limit: int | None) -> None:
        self.tf, self.parser = tf, parser
        self.skip_bad, self.check_order, self.limit = skip_bad, check_order, limit
        self.count = 0
        self.skipped = 0
        self.first_error: TraceFormatError | None = None
        self.dropped: Counter[str] = Counter()
        self._last_time = -np.inf
        self._last_line = 0

    def blocks(self) -> Iterator[Block]:
        for data in self._text():
            parsed = block = self.parser.parse(data)
            done = self.limit is not None and self.count + len(block) >= self.limit
            if done:  # the rows past the limit are not read: a malformed one there is no error
                block = parsed.slice(0, self.limit - self.count)  # type: ignore[operator]
            error = parsed.first_error
            if error is not None and done and (not len(block) or (error.line or 0) > block.line(len(block) - 1)):
                error = None
            if error is not None:
                if not self.skip_bad:
                    raise error
                self.first_error = self.first_error or error
                self.skipped += parsed.skipped
            self.dropped.update(parsed.dropped)
            if self.check_order:
                self._check_order(block)
            self.count += len(block)
            if len(block):
                yield block
            if done:
                return
        # lines held as junk that no record followed are malformed rows, not a preamble
        unresolved = getattr(self.parser, "unresolved_junk", None)
        n, error = unresolved() if unresolved is not None else (0, None)
        if n:
            if not self.skip_bad and error is not None:
                raise error
            self.skipped += n
            self.first_error = self.first_error or error

    def _text(self) -> Iterator[bytes | memoryview]:
        """The file's blocks of lines; a line too long to be a record is named by its number
        (every line before it was parsed)."""
        blocks = self.tf.blocks()
        while True:
            try:
                data = next(blocks)
            except StopIteration:
                return
            except LongLineError as exc:
                raise LongLineError(exc.message, path=str(self.tf.path),
                                    line=self.parser.next_line) from None
            yield data

    def _check_order(self, block: Block) -> None:
        t = block.time_us
        if not len(t):
            return
        if t[0] >= self._last_time and (t[1:] >= t[:-1]).all():
            self._last_time, self._last_line = t[-1], block.line(len(t) - 1)
            return
        if t[0] < self._last_time:
            i, prev_t, prev_line = 0, self._last_time, self._last_line
        else:
            i = int(np.argmax(t[1:] < t[:-1])) + 1
            prev_t, prev_line = t[i - 1], block.line(i - 1)
        raise TraceFormatError(
            f"arrival time goes backwards: {float(t[i])!r} us is before {float(prev_t)!r} us of the previous "
            f"request (line {prev_line}); load_trace(..., sort=True) sorts the requests",
            path=str(self.tf.path), line=block.line(i), field=self.parser.time_field)

    def source(self, sha256: str | None, options: dict[str, Any]) -> dict[str, Any]:
        source: dict[str, Any] = {
            "kind": "file", "path": str(self.tf.path), "format": self.parser.name,
            "sha256": sha256, "compression": self.tf.compression, "skipped": self.skipped,
            "dropped": dict(self.dropped), "junk_lines": getattr(self.parser, "junk", 0),
            "nul_padding": self.tf.nul_padding, **self.parser.info()}
        if options:
            source["options"] = {k: list(v) if isinstance(v, tuple) else v
                                 for k, v in options.items()}
        if self.limit is not None:
            source["limit"] = self.limit
        return source

    def empty_error(self) -> TraceFormatError:
        details = [f"{n} dropped: {reason}" for reason, n in self.dropped.items()]
        if self.skipped:
            details.append(f"{self.skipped} malformed rows skipped")
        if getattr(self.parser, "junk", 0):
            details.append(f"{self.parser.junk} junk lines before any record")  # type: ignore[attr-defined]
        if self.tf.nul_padding:
            details.append(f"{self.tf.nul_padding} NUL padding bytes")
        extra = f" ({'; '.join(details)})" if details else ""
        hint = getattr(self.parser, "empty_hint", lambda: "")()
        return TraceFormatError(f"zero requests{extra}{hint}", path=str(self.tf.path))

    def warn(self) -> None:
        if self.skipped:
            warnings.warn(f"{self.tf.path}: skipped {self.skipped} malformed row(s); the first: "
                          f"{self.first_error}", SkippedRowsWarning, stacklevel=3)
        junk = getattr(self.parser, "junk", 0)
        parts = []
        if junk:
            first = getattr(self.parser, "first_junk_error", None)
            parts.append(f"{junk} junk line(s) before the first record"
                         + (f" (the first: {first})" if first is not None else ""))
        if self.tf.nul_padding:
            parts.append(f"{self.tf.nul_padding} NUL padding byte(s) at the end")
        if parts:
            warnings.warn(f"{self.tf.path}: skipped {' and '.join(parts)}; counted in "
                          "trace.source['junk_lines'] / ['nul_padding']", JunkWarning,
                          stacklevel=3)


def _parser(tf: TraceFile, format: str | None, options: dict[str, Any]) -> Parser:
    if format == "cache":
        raise TraceFormatError("not an hss-gym trace cache", path=str(tf.path))
    name = format or detect(tf.head, str(tf.path))
    return make_parser(name, str(tf.path), header_text(tf.head), options)


def _take(blocks: list[Block], n: int) -> tuple[list[np.ndarray], list[Block]]:
    """The first ``n`` requests of ``blocks`` as columns, and the blocks left over."""
    taken: list[Block] = []
    rest = list(blocks)
    while n:
        block = rest.pop(0)
        m = min(n, len(block))
        taken.append(block.slice(0, m))
        if m < len(block):
            rest.insert(0, block.slice(m, len(block)))
        n -= m
    return _columns(taken), rest


def _columns(blocks: list[Block]) -> list[np.ndarray]:
    names = ("time_us", "op", "offset", "size")
    if len(blocks) == 1:
        return [getattr(blocks[0], c) for c in names]
    return [np.concatenate([getattr(b, c) for b in blocks]) for c in names]


def _hash_file(path: Path) -> str:
    sha = hashlib.sha256()
    with open_trace(path) as fh:
        while chunk := fh.read(1 << 22):
            sha.update(chunk)
    return sha.hexdigest()


def _stem(path: Path) -> str:
    name = path.name
    for suffix in reversed(path.suffixes):
        if suffix.lower() not in _COMPRESSION_SUFFIXES:
            return name[: -len(suffix)] if len(suffix) < len(name) else name
        name = name[: -len(suffix)]
    return name


def _renamed(trace: Trace, name: str | None) -> Trace:
    if name is not None:
        trace.name = name
    return trace


def _cache_only(path: Path, format: str | None, options: dict[str, Any]) -> None:
    if format not in (None, "cache") or options:
        raise TraceFormatError(f"is an hss-gym trace cache, read as stored: format={format!r} "
                               f"and options {sorted(options)} do not apply", path=str(path))


def _check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")


def convert(src: str | Path, dst: str | Path, format: str | None = None, *, force: bool = False,
            **options: Any) -> Trace:
    """Parse the trace file ``src`` (see ``load_trace``) and save it as a cache at ``dst``.

    Never destroys a file it was not asked to: ``dst`` naming ``src`` itself (also through a
    symbolic or hard link) is refused, and an existing ``dst`` is replaced only with ``force``.
    The cache is written through a temporary file renamed into place, so a failure leaves no
    partial ``dst``."""
    if os.path.lexists(dst) and os.path.exists(src):
        same = os.path.realpath(src) == os.path.realpath(dst) or (
            os.path.exists(dst) and os.path.samefile(src, dst))
        if same:
            raise ValueError(f"convert: SRC {src} and DST {dst} are the same file; give another DST "
                             f"(the source would be replaced by the cache)")
        if not force:
            raise FileExistsError(f"convert: DST {dst} already exists; pass --force (force=True) to replace it")
    trace = load_trace(src, format, **options)
    _cache.save_cache(trace, dst)
    return trace
