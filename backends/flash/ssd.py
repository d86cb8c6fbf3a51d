"""``FlashSSD``: one simulated SSD (the C core in flash.c) driven in windows from Python, and the
``WindowStats`` it reports per window (SPEC section 10; the API contract in docs/flash-model.md).

The core keeps cumulative counters and a log of every completed request's latency; a window's
statistics are the difference of two snapshots plus percentiles over the log entries of the window,
so one ``run_until`` call per window is all the Python work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hss_gym.backends import _flash
from hss_gym.backends.flash.loader import load_profile
from hss_gym.backends.flash.profile import FlashProfile

# Column order of the per-stream counters filled by the core (module.c, Sim_counters).
STREAM_FIELDS = ("completed", "reads", "writes", "read_bytes", "write_bytes", "read_tx", "write_tx",
                 "lat_sum_us", "slo_violations", "qdelay_sum_us", "issued", "conflicts", "gc_runs",
                 "gc_moved_pages")
_F = {name: i for i, name in enumerate(STREAM_FIELDS)}
# profile cache_mode -> the core's FL_CACHE_WRITE (1) | FL_CACHE_READ (2)
_CACHE_BITS = {"off": 0, "write": 1, "read": 2, "write_read": 3}
CACHE_FIELDS = ("read_hits", "read_partial_hits", "write_pages", "writebacks", "evictions", "waits")


@dataclass(frozen=True)
class WindowStats:
    """Statistics of one window (or of the whole run, from :meth:`FlashSSD.totals`). Per-stream
    arrays have shape (n_streams,), per-channel (n_channels,), per-unit (n_units,)."""

    duration_us: float
    completed: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    read_bytes: np.ndarray
    write_bytes: np.ndarray
    read_tx: np.ndarray
    write_tx: np.ndarray
    lat_mean_us: np.ndarray
    lat_p99_us: np.ndarray
    lat_p999_us: np.ndarray
    slo_violations: np.ndarray
    queue_delay_us: np.ndarray
    backlog: np.ndarray
    conflicts: np.ndarray
    gc_runs: np.ndarray
    gc_moved_pages: np.ndarray
    in_gc: np.ndarray
    channel_busy: np.ndarray
    unit_busy: np.ndarray
    unit_valid_frac: np.ndarray
    unit_free_blocks: np.ndarray
    write_amplification: float
    gc_runs_total: int

    @property
    def iops(self) -> np.ndarray:
        """Completed requests per second, per stream."""
        return self.completed / (self.duration_us * 1e-6) if self.duration_us > 0 else np.zeros_like(self.completed, dtype=float)

    @property
    def bandwidth_Bps(self) -> np.ndarray:
        """Bytes of completed requests per second, per stream."""
        b = (self.read_bytes + self.write_bytes).astype(float)
        return b / (self.duration_us * 1e-6) if self.duration_us > 0 else np.zeros_like(b)


@dataclass
class _Snapshot:
    t_us: float
    streams: np.ndarray      # (n_streams, len(STREAM_FIELDS))
    channel_busy_ns: np.ndarray
    unit_busy_ns: np.ndarray
    unit_gc_ops: np.ndarray
    flash_programs: int
    gc_runs: int
    lat_n: int


def _stream_quantiles(lat: np.ndarray, st: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-stream mean, p99 and p99.9 of latencies (NaN for streams without any): NumPy's default
    linear interpolation (as np.percentile) between the two order statistics around each quantile,
    found by a stable grouping by stream and a partial sort (np.partition) of each stream's values
    (the same numbers as a full sort, in less time; docs/fleetio.md)."""
    cnt = np.bincount(st, minlength=n)[:n].astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(st, weights=lat, minlength=n)[:n] / cnt
    x = lat[np.argsort(st, kind="stable")]
    start = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    qs = (0.99, 0.999)
    out = np.full((len(qs), n), np.nan)
    for s in np.flatnonzero(cnt):
        c = int(cnt[s])
        pos = [(c - 1) * q for q in qs]
        lo = [int(math.floor(p)) for p in pos]
        hi = [min(k + 1, c - 1) for k in lo]
        part = np.partition(x[start[s]:start[s] + c], sorted(set(lo + hi)))
        for j in range(len(qs)):
            out[j, s] = part[lo[j]] + (part[hi[j]] - part[lo[j]]) * (pos[j] - lo[j])
    return np.where(cnt > 0, mean, np.nan), out[0], out[1]


_LAYOUTS = {"linear": 0, "mqsim": 1}


def _per_stream(value: "int | float | Sequence[float] | None", n: int, name: str, cast: type) -> list:
    if value is None:
        return [None] * n
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [cast(value)] * n
    vals = list(value)  # type: ignore[arg-type]
    if len(vals) != n:
        raise ValueError(f"{name}: expected one value per stream ({n}), got {len(vals)}")
    return [None if v is None else cast(v) for v in vals]


class FlashSSD:
    """A simulated SSD with ``n_streams`` host submission queues (tenants or streams).

    See the module docstring of ``hss_gym.backends.flash`` for the API; times are microseconds,
    addresses bytes in the device's flat logical space. ``map_unwritten_reads=True`` is MQSim's
    behaviour for a read of a never-written page: it gets a page of the stream's active block
    (no program), so later partial writes of it read it back; by default such a read costs a read
    at its CWDP location and maps nothing (the device does not fill up with read-only addresses).

    ``precondition`` fills the device before the first request: a fraction of the logical pages
    chosen at random, or an array of the logical page numbers that hold data (MQSim's way: the
    pages the workload will touch first, then others up to its occupancy). ``precondition_layout``
    says how those pages fill blocks: ``"linear"`` (valid counts spread linearly from GC victims'
    to full blocks, the GC threshold plus a block per stream left free) or ``"mqsim"`` (MQSim's
    FTL::Perform_precondition: each stream its own blocks, counts from the mean-field steady state
    of greedy GC, and as many free blocks as MQSim's rounding leaves; for comparisons with MQSim).

    ``stream_units`` (one unit list per stream) sets every stream's units before preconditioning;
    ``stream_ranges`` (one ``(start_byte, end_byte)`` or None per stream) gives each stream's
    logical range, whose preconditioned pages are then laid out on that stream's units (a tenant's
    old data on its own channels); pages outside every range are striped over all units.
    """

    def __init__(self, profile: "FlashProfile | str", n_streams: int = 1, queue_depth: "int | Sequence[int]" = 16,
                 seed: int = 0, precondition: "float | Sequence[int] | np.ndarray | None" = 0.7,
                 slo_us: "float | Sequence[float] | None" = None,
                 map_unwritten_reads: bool = False, stream_units: "Sequence[Sequence[int]] | None" = None,
                 stream_ranges: "Sequence[tuple[int, int] | None] | None" = None,
                 precondition_layout: str = "linear"):
        self.profile = load_profile(profile) if not isinstance(profile, FlashProfile) else profile
        if precondition_layout not in _LAYOUTS:
            raise ValueError(f"precondition_layout must be one of {sorted(_LAYOUTS)} (got {precondition_layout!r})")
        if isinstance(n_streams, bool) or not isinstance(n_streams, int) or not 1 <= n_streams <= 64:
            raise ValueError(f"n_streams must be an integer in 1..64 (got {n_streams!r})")
        self.n_streams = n_streams
        qds = _per_stream(queue_depth, n_streams, "queue_depth", int)
        for q in qds:
            if q is None or q < 1:
                raise ValueError(f"queue_depth must be >= 1 per stream (got {queue_depth!r})")
        self.queue_depth = np.asarray(qds, dtype=np.int64)
        p = self.profile
        self._sim = _flash.Sim(p.n_channels, p.chips_per_channel, p.dies_per_chip, p.planes_per_die,
                               p.blocks_per_plane, p.pages_per_block, p.page_size, p.op_ratio, p.gc_threshold,
                               int(round(p.read_us * 1000)), int(round(p.program_us * 1000)),
                               int(round(p.erase_us * 1000)), p.channel_mtps, p.channel_width_bytes, qds,
                               int(seed) & (2**64 - 1), bool(map_unwritten_reads),
                               susp_program=p.program_suspension, susp_erase=p.erase_suspension,
                               susp_program_ns=int(round(p.suspend_program_us * 1000)),
                               susp_erase_ns=int(round(p.suspend_erase_us * 1000)),
                               susp_program_read_min_ns=int(round(p.suspend_program_for_read_min_us * 1000)),
                               susp_erase_read_min_ns=int(round(p.suspend_erase_for_read_min_us * 1000)),
                               susp_erase_write_min_ns=int(round(p.suspend_erase_for_write_min_us * 1000)),
                               cache_mode=_CACHE_BITS[p.cache_mode], cache_partitioned=p.cache_sharing == "equal",
                               cache_bytes=p.cache_capacity_bytes, dram_row_bytes=p.cache_dram_row_bytes,
                               dram_burst_bytes=p.cache_dram_burst_bytes, dram_mtps=float(p.cache_dram_mtps),
                               dram_trcd_ns=int(round(p.cache_dram_trcd_ns)), dram_tcl_ns=int(round(p.cache_dram_tcl_ns)),
                               dram_trp_ns=int(round(p.cache_dram_trp_ns)))
        self._units_cache: dict[int, np.ndarray] = {}
        self._member: np.ndarray | None = None
        if stream_units is not None:
            if len(stream_units) != n_streams:
                raise ValueError(f"stream_units: expected one unit list per stream ({n_streams}), got {len(stream_units)}")
            for st, us in enumerate(stream_units):
                self.set_units(st, us)
        lo, hi, owner = self._ranges(stream_ranges)
        if precondition is not None:
            fraction, bitmap = self._precondition_pages(precondition)
            self._sim.precondition(fraction, bitmap, _LAYOUTS[precondition_layout], lo, hi, owner)
        elif len(lo):
            raise ValueError("stream_ranges only place preconditioned data: give precondition=<fraction>")
        self._slo = np.full(n_streams, np.inf)
        for s, v in enumerate(_per_stream(slo_us, n_streams, "slo_us", float)):
            if v is not None:
                self.set_slo(s, v)
        self._unit_pages = p.dies_per_chip * p.planes_per_die * p.blocks_per_plane * p.pages_per_block
        self._zero = self._snapshot(zero=True)
        self._prev = self._zero

    def _precondition_pages(self, precondition: "float | Sequence[int] | np.ndarray") -> tuple[float, "np.ndarray | None"]:
        """(fraction, None) for a fraction of random pages, or (fraction, bitmap) for the given
        logical page numbers (checked: integers within the logical space)."""
        if np.ndim(precondition) == 0:
            return float(precondition), None  # type: ignore[arg-type]
        pages = np.asarray(precondition)
        n = int(self._sim.logical_pages())
        if pages.ndim != 1 or (pages.size and pages.dtype.kind not in "iu"):
            raise ValueError(f"precondition: a fraction or a 1-D array of logical page numbers (got shape "
                             f"{pages.shape}, dtype {pages.dtype})")
        if pages.size and (int(pages.min()) < 0 or int(pages.max()) >= n):
            raise ValueError(f"precondition: page numbers must be in 0..{n - 1} (got {int(pages.min())}.."
                             f"{int(pages.max())})")
        mask = np.zeros(n, dtype=bool)
        mask[pages] = True
        return float(mask.sum()) / n, np.packbits(mask, bitorder="little")

    def _ranges(self, ranges: "Sequence[tuple[int, int] | None] | None") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Streams' byte ranges as sorted page ranges (lo, hi, stream) for the core."""
        rows = []
        if ranges is not None:
            if len(ranges) != self.n_streams:
                raise ValueError(f"stream_ranges: expected one (start_byte, end_byte) or None per stream "
                                 f"({self.n_streams}), got {len(ranges)}")
            ps, cap = self.profile.page_size, self.profile.logical_bytes
            for st, r in enumerate(ranges):
                if r is None:
                    continue
                a, b = int(r[0]), int(r[1])
                if not 0 <= a < b <= cap:
                    raise ValueError(f"stream_ranges[{st}] = ({a}, {b}): need 0 <= start < end <= the logical "
                                     f"capacity {cap} bytes")
                if -(-b // ps) > -(-a // ps):  # the pages whose first byte is in [a, b)
                    rows.append((-(-a // ps), -(-b // ps), st))
            rows.sort()
            for (a0, b0, s0), (a1, b1, s1) in zip(rows, rows[1:]):
                if a1 < b0:
                    raise ValueError(f"stream_ranges of streams {s0} and {s1} overlap (pages {a1}..{b0})")
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        return (np.ascontiguousarray(arr[:, 0]), np.ascontiguousarray(arr[:, 1]),
                np.ascontiguousarray(arr[:, 2], dtype=np.int32))

    # control ---------------------------------------------------------------------------------
    def _check_stream(self, stream: int) -> int:
        if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or not 0 <= stream < self.n_streams:
            raise ValueError(f"stream {stream!r} does not exist (n_streams={self.n_streams})")
        return int(stream)

    def set_units(self, stream: int, units: Sequence[int]) -> None:
        """The (channel, chip) units where this stream's new writes go (striped in CWDP order)."""
        s = self._check_stream(stream)
        arr = np.asarray(list(units), dtype=np.int64)
        bad = arr[(arr < 0) | (arr >= self.profile.n_units)]
        if len(bad):
            raise ValueError(f"unit {int(bad[0])} does not exist (n_units={self.profile.n_units}: "
                             f"{self.profile.n_channels} channels x {self.profile.chips_per_channel} chips)")
        self._sim.set_units(s, np.ascontiguousarray(arr, dtype=np.int32))
        self._units_cache.pop(s, None)
        self._member = None

    def units(self, stream: int) -> np.ndarray:
        s = self._check_stream(stream)
        if s not in self._units_cache:
            self._units_cache[s] = np.sort(np.asarray(self._sim.units(s), dtype=np.int32))
        return self._units_cache[s].copy()

    def set_priority(self, stream: int, level: int) -> None:
        """0 low, 1 medium (default), 2 high: chips serve higher classes first."""
        self._sim.set_priority(self._check_stream(stream), int(level))

    def set_slo(self, stream: int, us: float) -> None:
        s = self._check_stream(stream)
        self._sim.set_slo(s, float(us))
        self._slo[s] = float(us)

    def submit(self, time_us, stream, offset, size, is_write) -> None:
        """Append requests (arrays of equal length); see the API contract."""
        t = np.ascontiguousarray(time_us, dtype=np.float64)
        n = len(t)
        st = np.ascontiguousarray(np.broadcast_to(stream, (n,)), dtype=np.int32)
        off = np.ascontiguousarray(offset, dtype=np.int64)
        sz = np.ascontiguousarray(size, dtype=np.int64)
        w = np.ascontiguousarray(is_write, dtype=np.bool_)
        for name, a in (("offset", off), ("size", sz), ("is_write", w)):
            if a.shape != (n,):
                raise ValueError(f"submit: {name} has shape {a.shape}, expected ({n},) like time_us")
        self._sim.submit(t, st, off, sz, w)

    # simulation ------------------------------------------------------------------------------
    @property
    def now_us(self) -> float:
        return self._sim.now_us()

    def run_until(self, t_us: float) -> WindowStats:
        """Simulate up to t_us; the statistics of the window (previous t, t_us]."""
        if not t_us >= self.now_us:
            raise ValueError(f"run_until({t_us}): time cannot go back (now {self.now_us} us)")
        self._sim.run_until(float(t_us))
        snap = self._snapshot()
        ws = self._window(self._prev, snap)
        self._prev = snap
        return ws

    def totals(self) -> WindowStats:
        """Cumulative statistics since construction."""
        return self._window(self._zero, self._snapshot())

    def write_amplification(self) -> float:
        """Cumulative write amplification since construction (flash programs / host page writes,
        NaN before any host write): ``totals().write_amplification`` without its latency statistics."""
        b = self._snapshot()
        host_tx = (b.streams[:, _F["write_tx"]] - self._zero.streams[:, _F["write_tx"]]).sum()
        return float((b.flash_programs - self._zero.flash_programs) / host_tx) if host_tx > 0 else math.nan

    def suspensions(self) -> tuple[int, int]:
        """Program and erase suspensions issued since construction (0, 0 with suspension off)."""
        ps, es = self._sim.suspends()
        return int(ps), int(es)

    def cache_stats(self) -> dict[str, int]:
        """DRAM data cache counters since construction (all 0 with the cache off): page reads served
        wholly (``read_hits``) or partly (``read_partial_hits``) from DRAM, pages of writes absorbed
        (``write_pages``), eager write-backs of first-written pages (``writebacks``), write-backs of
        dirty pages evicted (``evictions``), write requests that waited for write-back room (``waits``)."""
        return dict(zip(CACHE_FIELDS, (int(v) for v in self._sim.cache_counters())))

    def latencies(self, stream: int | None = None) -> np.ndarray:
        """Every completed request's latency (us, from its arrival), in completion order."""
        lat, st = self._log(0, self._sim.latency_count())
        return lat if stream is None else lat[st == self._check_stream(stream)]

    def device_latencies(self, stream: int | None = None) -> np.ndarray:
        """Every completed request's device latency (us, from its admission into the device: the
        latency without the host-queue wait; MQSim's Device_Response_Time), in completion order."""
        lat, st = self._log(0, self._sim.latency_count(), device=True)
        return lat if stream is None else lat[st == self._check_stream(stream)]

    def mapping_bytes(self) -> int:
        """Bytes of the mapping state (l2p, packed reverse map, per-block metadata)."""
        return self._sim.mapping_bytes()

    def close(self) -> None:
        self._sim.close()

    def __enter__(self) -> "FlashSSD":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # internals -------------------------------------------------------------------------------
    def _membership(self) -> np.ndarray:
        """(n_streams, n_units) bool: the units each stream currently writes to."""
        if self._member is None:
            m = np.zeros((self.n_streams, self.profile.n_units), dtype=bool)
            for s in range(self.n_streams):
                m[s, self.units(s)] = True
            self._member = m
        return self._member

    def _log(self, start: int, stop: int, device: bool = False) -> tuple[np.ndarray, np.ndarray]:
        lat = np.empty(stop - start, dtype=np.float64)
        st = np.empty(stop - start, dtype=np.uint16)
        self._sim.latencies(start, lat, st, device)
        return lat, st

    def _snapshot(self, zero: bool = False) -> _Snapshot:
        p = self.profile
        streams = np.zeros((self.n_streams, len(STREAM_FIELDS)))
        ch = np.zeros(p.n_channels)
        ub = np.zeros(p.n_units)
        self._valid = np.zeros(p.n_units, dtype=np.int64)
        self._free = np.zeros(p.n_units, dtype=np.int64)
        gcops = np.zeros(p.n_units, dtype=np.int64)
        self._gc_active = np.zeros(p.n_units, dtype=np.bool_)
        _, fp, gr, _, backlog = self._sim.counters(streams, ch, ub, self._valid, self._free, gcops, self._gc_active)
        self._backlog = np.asarray(backlog, dtype=np.int64)
        if zero:
            return _Snapshot(0.0, np.zeros_like(streams), np.zeros_like(ch), np.zeros_like(ub),
                             np.zeros_like(gcops), 0, 0, 0)
        return _Snapshot(self.now_us, streams, ch, ub, gcops, fp, gr, self._sim.latency_count())

    def _window(self, a: _Snapshot, b: _Snapshot) -> WindowStats:
        d = b.streams - a.streams
        dur = b.t_us - a.t_us
        n = self.n_streams
        lat, st = self._log(a.lat_n, b.lat_n)
        mean, p99, p999 = _stream_quantiles(lat, st, n)
        issued = d[:, _F["issued"]]
        with np.errstate(invalid="ignore", divide="ignore"):
            qdelay = np.where(issued > 0, d[:, _F["qdelay_sum_us"]] / np.maximum(issued, 1), np.nan)
        dgc = b.unit_gc_ops - a.unit_gc_ops
        unit_gc = (dgc > 0) | self._gc_active
        in_gc = (self._membership() & unit_gc[None, :]).any(axis=1)
        host_tx = d[:, _F["write_tx"]].sum()
        programs = b.flash_programs - a.flash_programs
        wa = programs / host_tx if host_tx > 0 else math.nan
        ns = dur * 1000.0
        as_int = lambda k: d[:, _F[k]].astype(np.int64)  # noqa: E731
        return WindowStats(
            duration_us=dur,
            completed=as_int("completed"), reads=as_int("reads"), writes=as_int("writes"),
            read_bytes=as_int("read_bytes"), write_bytes=as_int("write_bytes"),
            read_tx=as_int("read_tx"), write_tx=as_int("write_tx"),
            lat_mean_us=mean, lat_p99_us=p99, lat_p999_us=p999,
            slo_violations=as_int("slo_violations"), queue_delay_us=qdelay,
            backlog=self._backlog.copy(), conflicts=as_int("conflicts"),
            gc_runs=as_int("gc_runs"), gc_moved_pages=as_int("gc_moved_pages"), in_gc=in_gc,
            channel_busy=(b.channel_busy_ns - a.channel_busy_ns) / ns if ns > 0 else np.zeros_like(b.channel_busy_ns),
            unit_busy=(b.unit_busy_ns - a.unit_busy_ns) / ns if ns > 0 else np.zeros_like(b.unit_busy_ns),
            unit_valid_frac=self._valid / self._unit_pages,
            unit_free_blocks=self._free.copy(),
            write_amplification=float(wa),
            gc_runs_total=int(b.gc_runs - a.gc_runs),
        )
