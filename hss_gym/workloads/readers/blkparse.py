"""The ``blkparse`` text format (blktrace's default output): a line-oriented parser that takes
the issue (or queue) events as requests and pairs completions with them for latency."""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.readers.protocol import (LIMIT_TEXT, SECTOR, Block, Columns,
                                                parse_lines, show_token)
from hss_gym.workloads.trace import MAX_BYTES, READ, WRITE, TraceFormatError

_DEVICE = re.compile(rb"[0-9]+,[0-9]+")
_EVENT_FIELDS = ("device", "cpu", "sequence", "time", "pid", "action", "RWBS")

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
                    f"not a blkparse event line: {show_token(line)}", path=self.path, line=lineno)
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
            raise error(f"expected seconds such as 0.001368096, got {show_token(f[3])}", "time")
        rwbs = f[6]
        kind = rwbs[1:2] if rwbs[:1] == b"F" and len(rwbs) > 1 else rwbs[:1]
        if kind not in (b"D", b"W", b"R", b"N"):
            raise error(f"unknown RWBS {show_token(rwbs)}: expected [F](D|W|R|N)[F][A][S][M]", "RWBS")
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
                        f"{LIMIT_TEXT}", "sector")
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
                raise error(f"expected a sector number, got {show_token(rest[0])}", "sector")
            if nsec is None:
                got = show_token(rest[2]) if len(rest) > 2 else "nothing (is the line cut short?)"
                raise error(f"expected a sector count after '+', got {got}", "nsectors")
            return sector, nsec
        if len(rest) >= 2 and rest[0][:1].isdigit() and rest[1][:1] in (b"[", b"("):
            value = tk.parse_uint_scalar(rest[0])
            if value is None:
                raise error(f"expected a number, got {show_token(rest[0])}", "sector")
            # C/R without data print the sector alone; Q/D/I/B packet commands print bytes
            return (value, 0) if action in (b"C", b"R") else None
        if rest and rest[0][:1] in (b"[", b"("):
            return (0, 0)  # no data (``[comm]``, ``(elapsed) [comm]``, a packet ``(cdb) [error]``)
        raise error("expected 'sector + nsectors', a number then '[' or '(', or '[' or '(' "
                    "after RWBS", "sector")

