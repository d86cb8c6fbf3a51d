"""Feed a :class:`~hss_gym.workloads.trace.Trace` (any trace the readers load, or a generator's) to
a :class:`FlashSSD`, with a mapping from the trace's stream/tenant column to the SSD's streams.
Any object with a trace's columns will do (:class:`TraceColumns`): the device models sit below
the workloads and do not import them.

Readers put a trace's tenant (volume, device, stream id) in ``Trace.stream``; ``submit_trace`` maps
it through ``streams`` (a dict or a sequence indexed by the trace's stream id; identity by default)
and checks every address against the device's logical capacity (``fit="error"``) or folds it into
it (``fit="wrap"``: the page-aligned offset modulo the capacity, for traces of larger volumes).
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence

import numpy as np

from hss_gym.backends.base import WRITE
from hss_gym.backends.flash.ssd import FlashSSD


class TraceColumns(Protocol):
    """What :func:`submit_trace` reads of a trace (:class:`hss_gym.workloads.trace.Trace` has it):
    per-request arrival (µs), stream/tenant id, byte offset, byte size and op (0 read, 1 write)."""

    name: str
    time_us: np.ndarray
    stream: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    op: np.ndarray

    def __len__(self) -> int: ...


def stream_map(trace: TraceColumns, streams: "Mapping[int, int] | Sequence[int] | None", n_streams: int) -> np.ndarray:
    """The SSD stream of every request of ``trace`` (int32), validated."""
    src = trace.stream.astype(np.int64)
    if streams is None:
        out = src
    else:
        ids = np.unique(src)
        if isinstance(streams, Mapping):
            missing = [int(i) for i in ids if int(i) not in streams]
            if missing:
                raise ValueError(f"trace {trace.name!r}: stream id(s) {missing[:5]} have no entry in the stream map")
            lut = np.zeros(int(ids.max()) + 1 if len(ids) else 1, dtype=np.int64)
            for k, v in streams.items():
                if 0 <= int(k) < len(lut):
                    lut[int(k)] = int(v)
        else:
            lut = np.asarray(list(streams), dtype=np.int64)
            if len(ids) and ids.max() >= len(lut):
                raise ValueError(f"trace {trace.name!r}: stream id {int(ids.max())} is past the stream map "
                                 f"(length {len(lut)})")
        out = lut[src] if len(src) else src
    bad = (out < 0) | (out >= n_streams)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"trace {trace.name!r}: request {i} maps to SSD stream {int(out[i])}, which does not "
                         f"exist (n_streams={n_streams})")
    return out.astype(np.int32)


def submit_trace(ssd: FlashSSD, trace: TraceColumns, streams: "Mapping[int, int] | Sequence[int] | None" = None,
                 time_offset_us: float = 0.0, fit: str = "error") -> int:
    """Submit every request of ``trace`` to ``ssd`` (arrival = ``time_us + time_offset_us``).
    Returns the number of requests submitted."""
    if fit not in ("error", "wrap"):
        raise ValueError(f"fit must be 'error' or 'wrap' (got {fit!r})")
    st = stream_map(trace, streams, ssd.n_streams)
    cap = ssd.profile.logical_bytes
    off = trace.offset.astype(np.int64)
    size = trace.size.astype(np.int64)
    if fit == "wrap":
        ps = ssd.profile.page_size
        size = np.minimum(size, cap)
        off = (off // ps * ps) % cap + off % ps
        over = off + size > cap
        off = np.where(over, cap - size, off)
    else:
        past = off + size > cap
        if past.any():
            i = int(np.argmax(past))
            raise ValueError(f"trace {trace.name!r}: request {i} (offset {int(off[i])}, size {int(size[i])}) is past "
                             f"the device's logical capacity of {cap} bytes (profile {ssd.profile.name!r}); "
                             "use fit='wrap' to fold addresses into it")
    ssd.submit(trace.time_us + time_offset_us, st, off, size, trace.op == WRITE)
    return len(trace)
