"""The cache tier + storage tier simulator behind ``hss/LQoCo-v0`` (aggregated request batches).

Why batches: a control period is one second and the paper's workloads move 10 MB - 4 GB per
second, i.e. 10^3 - 10^6 requests per period; simulating them one by one cannot reach 10,000
periods/s. The per-slot queues run in C (``backends/lqoco/lqoco_sim.c``, module ``hss_gym.backends._lqoco``);
this module computes the per-mix costs from the device profiles and describes the model. Each period is split into ``substeps`` slots; in a slot, every request class (read
hits, read misses, admitted writes, bypassed writes) is one *batch* with a request count and one
latency, computed from the queues it meets. Latency statistics are request-weighted over batches
(log-binned histogram, 20 bins per decade), so the p99.9 is that of the simulated requests at
batch resolution.

Storage tier (``n`` devices of an hss-gym profile, ``backends/profiles/*.json``): the per-I/O
costs are those of the project's device model (``backends/sim.timing_params``: fixed service on
``servers`` + transfer at the datasheet bandwidth, HDD seek ``min + (max-min) sqrt(d/span)`` +
rotational delay, SSD GC factor ``1 + (max-1) x^2`` above the utilisation threshold), applied to
batches:

* the tier's time is spent first on foreground work (read misses, bypassed writes: a FIFO device
  backlog), then on GC when a burst is due, and the rest flushes dirty data: that is O_t;
* background flush writes large aggregated stripes (SSD, ``flush_kb``) or, on HDD, dirty I/Os in
  elevator order: the seek distance shrinks as span / (dirty I/Os per disk), so an HDD flushes
  faster when more is dirty;
* SSD GC: every byte written leaves ``(factor - 1)`` x its write time as GC debt; when the debt
  passes ``gc_burst_s`` of tier time GC runs, taking ``gc_share`` of the tier's idle time until
  the debt is paid: the flush bandwidth dips in bursts with the datasheet's long-run average;
* cache full (W >= W̄, Definition 1): writes can only enter as dirty blocks are destaged
  synchronously, one cache block per I/O at the device's small-I/O cost (no aggregation, HDD
  seeks), on ``sync_share`` of the tier's idle time (the rest keeps flushing in the background):
  admitted bandwidth collapses to that, and each admitted write waits for its destage.

Host: two closed loops (writer and reader threads), each with at most ``host_queue_b`` bytes
outstanding (writes: host queue, plus the tier queue in bypass mode; reads: the tier queue); what
they cannot hold is not issued. Cache tier: a device with latency, bandwidth and a per-block
processing cost; writes enter
through the token bucket at the controlled rate I_t (bucket depth ``bucket_s`` x I_t); writes
beyond it wait FIFO in the host queue, or go to the storage tier when their expected wait passes
``bypass_us`` (bypass mode). Reads hit the cache with probability ``read_hit``, else go to the
storage tier. Watermark: ``dirty <- max(0, dirty + admitted - O)`` per slot (eq. 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from hss_gym.backends import _lqoco
from hss_gym.backends.sim import DeviceProfile, load_profile, timing_params


class RequestMix(Protocol):
    """What the simulator reads of a workload's request mix (``hss_gym.envs.lqoco.workloads.Mix``,
    Table 4's columns): cache block and request sizes in bytes (``io_max`` > 0: sizes uniform in
    [io, io_max]) and whether the requests are sequential."""

    block: int
    io: int
    io_max: int
    sequential: bool


@dataclass(frozen=True)
class CacheSpec:
    """The caching tier: capacity, service and the overload threshold W̄."""

    capacity_gb: float
    latency_us: float
    bandwidth_mbps: float
    block_us: float        # processing cost per cache block (index, copy, metadata)
    parallelism: int = 4   # cache requests served at once (cores / queues)
    w_bar: float = 0.9     # overload threshold on the watermark
    read_hit: float = 0.6  # read hit ratio
    sync_share: float = 0.5  # when full: share of the tier's idle time spent on synchronous destage


@dataclass(frozen=True)
class TierSpec:
    """The storage tier: ``n`` devices of ``profile``."""

    profile: str = "M"
    n: int = 8
    utilisation: float = 0.85     # SSD: fill level that sets the GC factor
    flush_kb: int = 1024          # aggregated flush stripe (SSD; HDD sequential runs)
    gc_burst_s: float = 2.0       # GC debt (tier seconds) that starts a GC burst
    gc_share: float = 0.5         # share of the tier's idle time a GC burst takes


CONFIGS: dict[str, dict[str, Any]] = {
    # the paper's OceanStor: DRAM cache in front of an SSD pool (GC)
    "oceanstor": {"cache": CacheSpec(16, 2.0, 10000, 0.2, 8), "tier": TierSpec("M", 8, 0.85)},
    # the paper's Linux server: an SSD (Optane-class) cache in front of HDDs (seeks)
    "linux": {"cache": CacheSpec(1, 10.0, 2000, 0.5, 4), "tier": TierSpec("L", 8, 0.0, 1024)},
}


def _check_positive(obj: Any, fields: tuple[str, ...], what: str) -> None:
    for f in fields:
        v = getattr(obj, f)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{what} option {f!r} must be a finite number > 0, got {v!r}")


class Tier:
    """Per-byte costs (tier microseconds per byte, all ``n`` devices working) of the device model."""

    def __init__(self, spec: TierSpec) -> None:
        _check_positive(spec, ("n", "flush_kb", "gc_burst_s", "gc_share"), "tier")
        if not 0 <= spec.utilisation < 1:
            raise ValueError(f"tier option 'utilisation' must be in [0, 1), got {spec.utilisation!r}")
        if spec.gc_share >= 1:
            raise ValueError(f"tier option 'gc_share' must be < 1, got {spec.gc_share!r}")
        self.spec = spec
        self.profile: DeviceProfile = load_profile(spec.profile)
        p = timing_params(self.profile, self.profile.capacity_pages)
        self.hdd = self.profile.kind == "hdd"
        self.n = int(spec.n)
        self.rbw, self.wbw = p["read_bw"], p["write_bw"]
        self.servers = p["servers"]
        self.read_us, self.write_us = p["read_us"], p["write_us"]
        self.seek_min, self.seek_max = p.get("seek_min_us", 0.0), p.get("seek_max_us", 0.0)
        self.half_rot = 0.5 * p.get("rotation_us", 0.0)
        self.gc = 1.0
        if self.profile.gc and spec.utilisation > self.profile.gc["threshold"]:
            thr, mx = self.profile.gc["threshold"], self.profile.gc["max_factor"]
            x = (spec.utilisation - thr) / (1 - thr)
            self.gc = 1.0 + (mx - 1.0) * x * x
        self.span = float(self.profile.capacity_gb) * 1e9

    def io(self, write: bool, size: float, dist: float = 1.0, sequential: bool = False) -> tuple[float, float]:
        """(tier time per byte, latency of one I/O) for I/Os of ``size`` bytes; HDD seeks over
        ``dist`` of the span (1 = random)."""
        bw = self.wbw if write else self.rbw
        xfer = size / bw
        if self.hdd:
            pos = 0.0 if sequential else (self.seek_min + (self.seek_max - self.seek_min)
                                          * math.sqrt(min(1.0, dist)) + self.half_rot)
            lat = pos + xfer
            return lat / size / self.n, lat
        fixed = self.write_us if write else self.read_us
        return max(fixed / self.servers, xfer) / size / self.n, fixed + xfer


@dataclass
class PeriodStats:
    """What one control period did (bytes, seconds)."""

    admitted: float      # I_t: bytes admitted into the cache
    flush_cap: float     # O_t: bytes the tier could flush (eq. 1 uses it)
    flushed: float       # bytes actually destaged
    bypassed: float
    reads: float
    throughput: float    # bytes completed (admitted + bypassed + reads)
    full_s: float        # time with W >= W̄
    throttled: float     # bytes the closed-loop host could not issue
    gc_s: float          # tier time spent on GC bursts


class CacheSim:
    """Cache tier + storage tier state for one episode; :meth:`period` advances one period.

    The per-mix costs are computed here from the device profiles; the per-slot queues run in C
    (``backends/lqoco/lqoco_sim.c``, the arithmetic described in this module's docstring)."""

    def __init__(self, cache: CacheSpec, tier: Tier, period_s: float, substeps: int,
                 bucket_s: float, bypass_us: float | None) -> None:
        _check_positive(cache, ("capacity_gb", "latency_us", "bandwidth_mbps", "block_us",
                                "parallelism", "w_bar"), "cache")
        if not 0 < cache.w_bar <= 1 or not 0 <= cache.read_hit <= 1 or not 0 < cache.sync_share <= 1:
            raise ValueError(f"cache options need w_bar in (0, 1], read_hit in [0, 1] and sync_share "
                             f"in (0, 1], got {cache.w_bar!r}, {cache.read_hit!r}, {cache.sync_share!r}")
        self.cache, self.tier = cache, tier
        self.C = cache.capacity_gb * 1e9
        self.dt = period_s * 1e6 / int(substeps)
        self._sim = _lqoco.Sim(self.C, cache.w_bar * self.C, self.dt, int(substeps), bucket_s,
                               None if bypass_us is None else float(bypass_us), cache.read_hit,
                               cache.sync_share, tier.gc - 1.0, tier.spec.gc_burst_s * 1e6,
                               tier.spec.gc_share)

    # ------------------------------------------------------------------ per-mix costs
    def set_mix(self, mix: RequestMix) -> None:
        """Compute the per-byte costs of a request mix and hand them to the simulator; they stay
        in :attr:`mix_args` (``_lqoco.Sim.set_mix``'s arguments)."""
        t, c = self.tier, self.cache
        io = 0.5 * (mix.io + mix.io_max) if mix.io_max else float(mix.io)
        self.io = io
        self.rd_cost, rd_lat = t.io(False, io, sequential=mix.sequential)
        byp_cost, byp_lat = t.io(True, io, sequential=mix.sequential)
        flush_io = float(t.spec.flush_kb * 1024) if (mix.sequential or not t.hdd) else io
        flush_const = 0.0 if t.hdd else t.io(True, flush_io)[0]
        sync_cost, sync_lat = t.io(True, float(mix.block))
        per_byte = 1.0 / c.bandwidth_mbps + c.block_us / mix.block
        self.mix_args = (io, self.rd_cost, rd_lat, byp_cost, byp_lat, sync_cost, sync_lat,
                         per_byte / c.parallelism, c.latency_us + io * per_byte, flush_io,
                         flush_const, t.seek_min, t.seek_max, t.half_rot, t.wbw, t.n)
        self._sim.set_mix(*self.mix_args)

    def flush_cost(self, dirty: float) -> float:
        """Tier time per flushed byte with ``dirty`` bytes waiting (HDD elevator distance)."""
        return self._sim.flush_cost(dirty)

    def period(self, rate_bps: float, read_bps: float, write_bps: float, host_queue_b: float,
               read_io: float | None = None, write_io: float | None = None) -> PeriodStats:
        """Advance one control period with token rate ``rate_bps`` (bytes/s, ``inf`` = no limit),
        offered reads/writes (bytes/s) and a host that holds at most ``host_queue_b`` bytes."""
        return PeriodStats(*self._sim.period(rate_bps, read_bps, write_bps, host_queue_b,
                                             read_io or self.io, write_io or self.io))

    @property
    def core(self) -> Any:
        """The C simulator (``_lqoco.Sim``), for the env's C logic (``_lqoco.Env``) to step."""
        return self._sim

    @property
    def dirty(self) -> float:
        return self._sim.dirty

    @property
    def hist(self) -> list[float]:
        """Requests per latency bin (20 per decade from 1 us)."""
        return self._sim.hist

    def latency_quantile(self, q: float) -> float:
        """The ``q`` quantile of request latency (us), at histogram-bin resolution (upper edge)."""
        return self._sim.quantile(q)

    @property
    def mean_latency_us(self) -> float:
        n = self._sim.n_req
        return self._sim.lat_sum / n if n > 0 else float("nan")
