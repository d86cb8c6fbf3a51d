"""The one request representation of hss-gym: a columnar block trace.

Every reader and generator produces a :class:`Trace`; the HSS core (``hss_gym.hss``) replays it.
Columns are contiguous NumPy arrays so the native core reads them without copies:

========  =========  ==========================================================
column    dtype      meaning
========  =========  ==========================================================
time_us   float64    arrival time in microseconds (non-decreasing)
op        uint8      ``READ`` (0) or ``WRITE`` (1)
offset    int64      byte offset in the flat logical address space (>= 0; offset + size
                     below ``MAX_BYTES`` = 4 PiB)
size      int64      request size in bytes (> 0)
stream    uint16     stream id (0 for a single-stream trace; a mix's component)
========  =========  ==========================================================

``source`` records provenance (a path and sha256, or a generator and its parameters) so that a
leaderboard result can name exactly which requests it was measured on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

READ = 0
WRITE = 1
PAGE_SIZE = 4096
#: Requests must end below this byte address (4 PiB): the HSS core's page numbers have 40 bits.
MAX_BYTES = 1 << 52

COLUMNS: dict[str, np.dtype] = {
    "time_us": np.dtype(np.float64),
    "op": np.dtype(np.uint8),
    "offset": np.dtype(np.int64),
    "size": np.dtype(np.int64),
    "stream": np.dtype(np.uint16),
}


class TraceFormatError(ValueError):
    """A trace file (or array) could not be read. Names the file, line and field where known."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field = path, line, field
        where = ", ".join(p for p in (
            f"file {path}" if path else "",
            f"line {line}" if line is not None else "",
            f"field {field!r}" if field else "") if p)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass
class Trace:
    """A block I/O trace in columnar form. See the module docstring for the columns."""

    time_us: np.ndarray
    op: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    stream: np.ndarray | None = None
    name: str = "trace"
    source: dict[str, Any] = field(default_factory=dict)
    _footprint: int | None = field(default=None, init=False, repr=False, compare=False)
    _streams: int | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.stream is None:
            self.stream = np.zeros(len(self.time_us), dtype=np.uint16)
        for col, dtype in COLUMNS.items():
            setattr(self, col, np.ascontiguousarray(getattr(self, col), dtype=dtype))
        n = len(self.time_us)
        for col in COLUMNS:
            if getattr(self, col).ndim != 1 or len(getattr(self, col)) != n:
                raise TraceFormatError(f"column {col!r} has shape {getattr(self, col).shape}, "
                                       f"expected ({n},)", path=self.source.get("path"), field=col)

    def __len__(self) -> int:
        return len(self.time_us)

    def validate(self) -> "Trace":
        """Check the invariants the HSS core relies on; raise TraceFormatError naming the field."""
        path = self.source.get("path")
        if len(self) == 0:
            raise TraceFormatError("trace has zero requests", path=path)
        checks = [
            ("size", self.size <= 0, "size must be > 0 bytes"),
            ("offset", self.offset < 0, "offset must be >= 0"),
            ("offset", self.offset >= MAX_BYTES - self.size,
             "a request must end below 4 PiB (offset + size < 2**52 bytes, the simulated address space)"),
            ("op", self.op > WRITE, "op must be 0 (read) or 1 (write)"),
            ("time_us", ~np.isfinite(self.time_us), "time must be finite"),
        ]
        for col, bad, msg in checks:
            if bad.any():
                i = int(np.argmax(bad))
                raise TraceFormatError(f"{msg}; request {i} has {getattr(self, col)[i]}",
                                       path=path, field=col)
        if len(self) > 1 and (np.diff(self.time_us) < 0).any():
            i = int(np.argmax(np.diff(self.time_us) < 0)) + 1
            raise TraceFormatError(f"arrival times must be non-decreasing; request {i} arrives "
                                   f"before request {i - 1}", path=path, field="time_us")
        return self

    def slice(self, start: int, stop: int) -> "Trace":
        """Requests ``[start, stop)`` as a new trace (views, no copy)."""
        return Trace(self.time_us[start:stop], self.op[start:stop], self.offset[start:stop],
                     self.size[start:stop], self.stream[start:stop], name=self.name,
                     source={**self.source, "window": [start, stop]})

    def page_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """First and last 4 KiB page (inclusive) of every request."""
        first = self.offset // PAGE_SIZE
        return first, (self.offset + self.size - 1) // PAGE_SIZE

    def footprint_pages(self) -> int:
        """Number of distinct 4 KiB pages the trace touches (computed once: a trace's columns are
        not meant to change after construction)."""
        if self._footprint is None:  # the length of the union of the requests' page ranges
            first, last = self.page_ranges()
            if len(first) == 0:
                self._footprint = 0
            else:  # sorted by first page, a range adds the pages beyond those the earlier ranges reach
                order = np.argsort(first, kind="stable")
                first, last = first[order], last[order]
                reach = np.concatenate(([first[0] - 1], np.maximum.accumulate(last)[:-1]))
                self._footprint = int(np.maximum(last - np.maximum(first, reach + 1) + 1, 0).sum())
        return self._footprint

    def n_streams(self) -> int:
        """Number of distinct streams (workloads of a mix; 1 for a single workload)."""
        if self._streams is None:
            self._streams = max(1, int(np.unique(self.stream).size))
        return self._streams

    def relative(self) -> "Trace":
        """The same trace with arrival times shifted to start at 0."""
        t0 = self.time_us[0] if len(self) else 0.0
        return Trace(self.time_us - t0, self.op, self.offset, self.size, self.stream,
                     name=self.name, source=self.source)

    @classmethod
    def from_arrays(cls, time_us: Any, op: Any, offset: Any, size: Any, stream: Any = None,
                    name: str = "array", **source: Any) -> "Trace":
        """Build and validate a trace from array-likes (a convenience for tests and users)."""
        return cls(np.asarray(time_us), np.asarray(op), np.asarray(offset), np.asarray(size),
                   None if stream is None else np.asarray(stream), name=name,
                   source={"kind": "arrays", **source}).validate()
