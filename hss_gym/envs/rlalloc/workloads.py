"""The I/O streams of RLAlloc (Li, Wu et al.): Table I's eight MSR Cambridge traces.

RLAlloc mixes eight MSR Cambridge traces, one per stream of a multi-streamed SSD. Table I gives,
per trace: volume (GB), number of I/Os, write percentage and mean inter-arrival interval (ms).
The real files are large and not redistributable here, so :func:`standin` generates a synthetic
stream matching those four numbers; :func:`stream_trace` uses a real MSR file through
:func:`hss_gym.workloads.load_trace` when the user has one.

Reading Table I. ``# I/O x interval`` is ~600 s for every row (the traces were cut to 10-minute
windows). ``volume / # I/O`` would give mean request sizes of 158 B (WEB_2) and 398 B (SRC1_1),
below one 512-byte sector, so the volume is the **written** volume: ``volume / (# I/O x write %)``
gives 6.4-23.7 KiB per write, typical MSR write sizes. The stand-ins therefore match: request count
(over the 600 s span), write fraction, mean interval, and written bytes. Read sizes are not in
Table I; a stand-in's reads have the same size distribution as its writes (an assumption).

Stand-in model (documented, not from the paper): gamma inter-arrival times with shape 0.5
(bursty, coefficient of variation 1.41) and Table I's mean; sizes ``512 B x (1 + geometric)`` with
the row's mean write size, capped at 1 MiB; offsets 4 KiB-aligned in the stream's own logical
region, 80% of writes to the hottest 20% of it (reads uniform).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from hss_gym.workloads.registry import load_trace
from hss_gym.workloads.trace import READ, WRITE, Trace

GB = 1e9  # Table I volumes are decimal GB (SSDsim convention); stated so tests can check it
SPAN_S = 600.0  # every Table I row spans ~600 s (count x interval)
SECTOR = 512
MAX_SIZE = 1 << 20
ALIGN = 4096
GAMMA_SHAPE = 0.5
HOT_FRACTION, HOT_SHARE = 0.2, 0.8


@dataclass(frozen=True)
class StreamSpec:
    """One row of RLAlloc Table I."""

    name: str
    volume_gb: float
    n_io: int
    write_frac: float
    interval_ms: float

    @property
    def mean_write_bytes(self) -> float:
        """Mean request size of the stand-in (the written volume over the number of writes)."""
        return self.volume_gb * GB / (self.n_io * self.write_frac)

    @property
    def span_us(self) -> float:
        """The trace's duration: count x mean interval."""
        return self.n_io * self.interval_ms * 1e3


TABLE_I: dict[str, StreamSpec] = {s.name: s for s in (
    StreamSpec("MDS_0", 7.72, 1_210_000, 0.8811, 0.4962),
    StreamSpec("PRN_1", 2.27, 1_120_000, 0.2466, 0.535),
    StreamSpec("PROJ_3", 2.75, 2_240_000, 0.0518, 0.2691),
    StreamSpec("RSRCH_0", 11.34, 1_430_000, 0.9068, 0.4217),
    StreamSpec("SRC1_1", 1.82, 4_570_000, 0.0474, 0.126),
    StreamSpec("STG_0", 15.82, 2_030_000, 0.8481, 0.2976),
    StreamSpec("TS_0", 11.89, 1_800_000, 0.8242, 0.3850),
    StreamSpec("WEB_2", 0.82, 5_180_000, 0.0075, 0.116),
)}
STREAMS = tuple(TABLE_I)  # the paper's order
#: The problem's workloads by name: ``table1`` (Table I's eight streams, one per trace) and
#: ``stg0-x<N>`` (N copies of STG_0, N = 2..20: the paper's sensitivity study, Fig. 9).
SWEEP = re.compile(r"^stg0-x(\d+)$")


def workload_options(workload: str | None) -> dict[str, Any]:
    """The ``hss/RLAlloc-v0`` arguments of the workload named ``workload`` (None: ``table1``, the
    env's default streams); ValueError names the valid ones."""
    m = SWEEP.match(workload) if isinstance(workload, str) else None
    if m and 2 <= int(m.group(1)) <= 20:
        return {"n_streams": int(m.group(1))}
    if workload is None or workload == "table1":
        return {}
    raise ValueError(f"unknown RLAlloc workload {workload!r}; valid: table1, stg0-x2 .. stg0-x20")


def spec(name: str) -> StreamSpec:
    """The Table I row ``name`` (case-insensitive, ``-`` or ``_``); ValueError lists the valid ones."""
    key = name.strip().upper().replace("-", "_")
    if key not in TABLE_I:
        raise ValueError(f"unknown RLAlloc stream {name!r}; valid names: {', '.join(STREAMS)}")
    return TABLE_I[key]


def standin(name: str, duration_us: float | None = None, seed: int = 0,
            region: tuple[int, int] = (0, 1 << 34), stream_id: int = 0) -> Trace:
    """A synthetic stand-in for Table I stream ``name``: requests arriving in ``[0, duration_us)``
    (default: the full 600 s span with Table I's request count), offsets in ``region``
    ``(base_bytes, size_bytes)``, stream column ``stream_id``. Deterministic in ``seed``."""
    s = spec(name)
    base, size = int(region[0]), int(region[1])
    if size < 16 * ALIGN:
        raise ValueError(f"region size {size} bytes for stream {s.name} is too small (< 64 KiB)")
    rng = np.random.default_rng([seed, STREAMS.index(s.name), 0x5EED])
    if duration_us is None:
        n = s.n_io
        gaps = rng.gamma(GAMMA_SHAPE, s.interval_ms * 1e3 / GAMMA_SHAPE, n)
        # scale the sample so the span is exact: mean interval then equals Table I's exactly
        gaps *= s.span_us / gaps.sum()
        t = np.cumsum(gaps) - gaps[0]
    else:
        mean_gap = s.interval_ms * 1e3
        n_est = int(duration_us / mean_gap * 1.2 + 64)
        t = np.cumsum(rng.gamma(GAMMA_SHAPE, mean_gap / GAMMA_SHAPE, n_est))
        while t[-1] < duration_us:  # rare: extend
            more = t[-1] + np.cumsum(rng.gamma(GAMMA_SHAPE, mean_gap / GAMMA_SHAPE, n_est))
            t = np.concatenate([t, more])
        t = t[t < duration_us]
        n = len(t)
    is_write = rng.random(n) < s.write_frac
    m = s.mean_write_bytes / SECTOR  # mean size in sectors; 1 + geometric(mean m - 1) has mean m
    sectors = 1 + rng.geometric(1.0 / (m - 1.0), n)
    nbytes = np.minimum(sectors.astype(np.int64) * SECTOR, MAX_SIZE)
    n_slots = size // ALIGN
    hot = rng.random(n) < HOT_SHARE
    slot = np.where(is_write & hot,
                    rng.integers(0, max(1, int(n_slots * HOT_FRACTION)), n),
                    rng.integers(0, n_slots, n))
    offset = base + slot.astype(np.int64) * ALIGN
    nbytes = np.minimum(nbytes, base + size - offset)
    op = np.where(is_write, WRITE, READ).astype(np.uint8)
    return Trace(time_us=t, op=op, offset=offset, size=nbytes,
                 stream=np.full(n, stream_id, dtype=np.uint16), name=f"standin-{s.name}",
                 source={"generator": "hss_gym.envs.rlalloc.workloads.standin", "stream": s.name,
                         "seed": seed, "duration_us": duration_us, "region": [base, size]})


def stream_trace(name_or_path: str | os.PathLike[str], duration_us: float, seed: int,
                 region: tuple[int, int], stream_id: int) -> Trace:
    """Stream ``stream_id``: a Table I name (synthetic stand-in) or a real trace file (MSR CSV or
    any format ``load_trace`` reads). A file's requests are re-based to start at 0, cut to
    ``duration_us``, and their offsets folded into ``region`` (4 KiB aligned)."""
    if isinstance(name_or_path, str) and name_or_path.strip().upper().replace("-", "_") in TABLE_I:
        return standin(name_or_path, duration_us, seed, region, stream_id)
    if not os.path.isfile(name_or_path):
        raise ValueError(f"stream {os.fspath(name_or_path)!r} is neither a Table I name "
                         f"({', '.join(STREAMS)}) nor an existing trace file")

    tr = load_trace(name_or_path)
    t = tr.time_us - (tr.time_us[0] if len(tr) else 0.0)
    keep = t < duration_us
    base, size = int(region[0]), int(region[1])
    off = base + (tr.offset[keep] // ALIGN % (size // ALIGN)) * ALIGN
    nbytes = np.minimum(tr.size[keep], base + size - off)
    return Trace(time_us=t[keep], op=tr.op[keep], offset=off, size=nbytes,
                 stream=np.full(int(keep.sum()), stream_id, dtype=np.uint16),
                 name=f"file-{os.path.basename(os.fspath(name_or_path))}",
                 source={**tr.source, "duration_us": duration_us, "region": [base, size]})
