"""The fio iolog formats (versions 2 and 3): a line-oriented parser whose version 2 times are
synthesised from a fixed gap, since that version logs none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.readers.protocol import (LIMIT_TEXT, TIME_UNITS, Block, Columns, FatalFormatError,
                                                parse_lines, show_token)
from hss_gym.workloads.trace import MAX_BYTES, READ, WRITE, TraceFormatError


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
                    f"'fio version 3 iolog', got {show_token(head)}", path=self.path, line=lineno)
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
                raise error(f"expected an integer timestamp, got {show_token(f[0])}", "timestamp")
            t_us = tk.to_us_scalar(ts, 0, self.unit_exp)
            f = f[1:]
        elif len(f) not in (2, 4):
            raise error(f"expected 2 or 4 fields (filename action [offset length]), found "
                        f"{len(f)}", _missing(_FIO_V3_FIELDS[1:], len(f)))
        action = f[1]
        if len(f) == 2:
            if action not in (b"add", b"open", b"close"):
                raise error(f"unknown file action {show_token(action)}; expected add, open or close",
                            "action")
            return
        offset, length = tk.parse_uint_scalar(f[2]), tk.parse_uint_scalar(f[3])
        if action in (b"sync", b"datasync", b"trim") or (v3 and action == b"wait"):
            dropped[action.decode()] += 1
            return
        if offset is None:
            raise error(f"expected an unsigned integer, got {show_token(f[2])}", "offset")
        if action == b"wait":
            if offset >= 100:
                self._wait_base += offset
                self._clock = max(self._clock, self._wait_base)
            return
        if action not in (b"read", b"write"):
            raise error(f"unknown action {show_token(action)}; expected read, write, sync, datasync, "
                        "trim or wait", "action")
        if length is None or length == 0:
            raise error(f"expected a length in bytes > 0, got {show_token(f[3])}", "length")
        if offset + length >= MAX_BYTES:
            raise error(f"offset {offset} + length {length} ends at or beyond 4 PiB (2**52 "
                        f"bytes), {LIMIT_TEXT}", "offset")
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

