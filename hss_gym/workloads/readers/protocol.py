"""What every trace parser is: the :class:`Parser` protocol, the :class:`Block` of requests it
returns, and what the parsers share (the op code of a dropped row, sector size, time units, the
line-by-line driver of the formats that are not delimited).

Every parser turns blocks of complete text lines into :class:`Block` s of requests in the units
of :class:`~hss_gym.workloads.trace.Trace` (arrival time in microseconds as written in the file,
byte offset, byte size, op ``READ`` = 0 / ``WRITE`` = 1). Parsers are stateful (line numbers,
headers, pairing of events) and are fed the blocks of one file in order. Rows that a format
defines as not being requests are *dropped* and counted per reason; rows that are malformed are
errors (or, with ``skip_bad``, *skipped* and counted). Nothing is lost silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hss_gym.workloads.trace import TraceFormatError

DROP = -1                      # op code of a row the format defines as "not a request"
#: Most malformed lines taken as junk before a file's first record (a tar header, a preamble);
#: more than this and they are malformed rows (the file is probably of another format).
MAX_JUNK_LINES = 100
LIMIT_TEXT = "the end of the address space hss-gym simulates"
SECTOR = 512

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


#: The columns a line-oriented parser fills: time (µs), op, offset, size, line number.
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



def show_token(token: bytes) -> str:
    """A token of a malformed line as an error message shows it (decoded, at most 40 characters)."""
    return repr(token.decode("utf-8", "replace")[:40])
