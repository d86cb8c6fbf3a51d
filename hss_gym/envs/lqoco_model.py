"""The cache tier + storage tier simulator behind ``hss/LQoCo-v0`` (aggregated request batches).

Why batches: a control period is one second and the paper's workloads move 10 MB - 4 GB per
second, i.e. 10^3 - 10^6 requests per period; simulating them one by one cannot reach 10,000
periods/s. Each period is split into ``substeps`` slots; in a slot, every request class (read
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
from typing import Any


from hss_gym.backends.sim import DeviceProfile, load_profile, timing_params
from hss_gym.envs.lqoco_workloads import Mix

LAT_BINS_PER_DECADE = 20
_log10 = math.log10
LAT_BINS = 10 * LAT_BINS_PER_DECADE  # 1 us .. 10^10 us


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
    """What one control period did (bytes, seconds, microseconds)."""

    admitted: float = 0.0      # I_t: bytes admitted into the cache
    flush_cap: float = 0.0     # O_t: bytes the tier could flush (eq. 1 uses it)
    flushed: float = 0.0       # bytes actually destaged
    bypassed: float = 0.0
    reads: float = 0.0
    throughput: float = 0.0    # bytes completed (admitted + bypassed + reads)
    full_s: float = 0.0        # time with W >= W̄
    throttled: float = 0.0     # bytes the closed-loop host could not issue (queue full)
    gc_s: float = 0.0


class CacheSim:
    """Cache tier + storage tier state for one episode; :meth:`period` advances one period."""

    def __init__(self, cache: CacheSpec, tier: Tier, period_s: float, substeps: int,
                 bucket_s: float, bypass_us: float | None) -> None:
        _check_positive(cache, ("capacity_gb", "latency_us", "bandwidth_mbps", "block_us",
                                "parallelism", "w_bar"), "cache")
        if not 0 < cache.w_bar <= 1 or not 0 <= cache.read_hit <= 1 or not 0 < cache.sync_share <= 1:
            raise ValueError(f"cache options need w_bar in (0, 1], read_hit in [0, 1] and sync_share "
                             f"in (0, 1], got {cache.w_bar!r}, {cache.read_hit!r}, {cache.sync_share!r}")
        self.cache, self.tier = cache, tier
        self.C = cache.capacity_gb * 1e9
        self.period_us = period_s * 1e6
        self.k = int(substeps)
        self.dt = self.period_us / self.k
        self.bucket_s, self.bypass_us = bucket_s, bypass_us
        self.dirty = 0.0
        self.tokens = 0.0
        self.queue: list[list[float]] = []  # FIFO batches [bytes, first, last arrival (us)]
        self.q_head = 0
        self.hq = 0.0
        self.backlog = 0.0   # tier foreground work queued (us)
        self.debt = 0.0      # GC debt (tier us)
        self.gc_on = False
        self.slot = 0
        self.hist = [0.0] * LAT_BINS
        self.lat_sum = 0.0
        self.n_req = 0.0
        self.mix: Mix | None = None

    # ------------------------------------------------------------------ per-mix costs
    def set_mix(self, mix: Mix) -> None:
        """Precompute the per-byte costs of a request mix."""
        t, c = self.tier, self.cache
        self.mix = mix
        io = 0.5 * (mix.io + mix.io_max) if mix.io_max else float(mix.io)
        self.io = io
        self.rd_cost, self.rd_lat = t.io(False, io, sequential=mix.sequential)
        self.byp_cost, self.byp_lat = t.io(True, io, sequential=mix.sequential)
        self.flush_io = float(t.spec.flush_kb * 1024) if (mix.sequential or not t.hdd) else io
        self._flush_const = 0.0 if t.hdd else t.io(True, self.flush_io)[0]
        self.sync_io = float(mix.block)
        self.sync_cost, self.sync_lat = t.io(True, self.sync_io)
        per_byte = 1.0 / c.bandwidth_mbps + c.block_us / mix.block
        self.cache_cost = per_byte / c.parallelism
        self.cache_lat = c.latency_us + io * per_byte

    def flush_cost(self, dirty: float) -> float:
        """Tier time per flushed byte with ``dirty`` bytes waiting (HDD elevator distance)."""
        if self._flush_const:
            return self._flush_const
        t = self.tier
        per_disk = dirty / self.flush_io / t.n
        return t.io(True, self.flush_io, dist=1.0 / (per_disk + 1.0), sequential=False)[0]

    # ------------------------------------------------------------------ one period
    def period(self, rate_bps: float, read_bps: float, write_bps: float, host_queue_b: float,
               read_io: float | None = None, write_io: float | None = None) -> PeriodStats:
        """Advance one control period with token rate ``rate_bps`` (bytes/s, ``inf`` = no limit)
        and offered reads/writes (bytes/s)."""
        st = PeriodStats()
        dt, c, t = self.dt, self.cache, self.tier
        dt_s = dt * 1e-6
        C, w_cap = self.C, self.cache.w_bar * self.C
        rd_io = read_io or self.io
        wr_io = write_io or self.io
        hit = c.read_hit
        gc_extra = t.gc - 1.0
        gc_burst = t.spec.gc_burst_s * 1e6
        gc_share = t.spec.gc_share
        sync_share = c.sync_share
        unlimited = math.isinf(rate_bps)
        tok_add = rate_bps * dt_s
        tok_max = rate_bps * max(self.bucket_s, dt_s)
        queue = self.queue
        rec = self._rec
        for _ in range(self.k):
            slot = self.slot
            # arrivals (closed-loop host: no more than the host queue holds)
            w = write_bps * dt_s
            if w > 0:
                queue.append([w, slot * dt, (slot + 1) * dt])
                self.hq += w
            r = read_bps * dt_s
            # storage tier: foreground first (read misses); the host's readers are a closed loop
            # of their own: their bytes queued at the tier stay within the depth
            miss = r * (1.0 - hit)
            room = host_queue_b - self.backlog / self.rd_cost
            if miss > room and miss > 0:
                scale = max(room, 0.0) / miss
                st.throttled += r * (1.0 - scale)
                r *= scale
                miss *= scale
            if miss > 0:
                rec(self.backlog + self.rd_lat, miss / rd_io)
                self.backlog += miss * self.rd_cost
            served = self.backlog if self.backlog < dt else dt
            self.backlog -= served
            idle = dt - served
            if self.gc_on:
                g = min(self.debt, idle * gc_share)
                self.debt -= g
                idle -= g
                st.gc_s += g * 1e-6
                if self.debt <= 0:
                    self.gc_on = False
            full = self.dirty >= w_cap
            cost = self.flush_cost(self.dirty)
            if full:  # a share of the idle time destages synchronously for the waiting writes
                sync = idle * sync_share / self.sync_cost
                cap = idle * (1.0 - sync_share) / cost + sync
            else:
                cap = idle / cost
            # cache: read hits, then writes through the token bucket
            hits = r - miss
            cache_time = dt - hits * self.cache_cost
            if hits > 0:
                rec(self.cache_lat, hits / rd_io)
            if unlimited:
                tokens = math.inf
            else:
                tokens = min(self.tokens + tok_add, tok_max)
            room = sync if full else max(0.0, C - self.dirty) + cap
            adm = min(tokens, self.hq, max(0.0, cache_time) / self.cache_cost, room)
            if not unlimited:
                self.tokens = tokens - adm
            before = self.dirty
            self.dirty = max(0.0, before + adm - cap)
            flushed = before + adm - self.dirty
            if gc_extra > 0:
                self.debt += flushed * cost * gc_extra
                if self.debt > gc_burst:
                    self.gc_on = True
            lat = self.cache_lat + (wr_io * self.sync_cost * t.n + self.sync_lat if full else 0.0)
            # what stays queued after this slot's admissions; bypass and the closed-loop limit
            # take the newest writes out (thinning: they were spread over the slot), then the
            # admissions leave FIFO from the front
            left = self.hq - adm
            byp = 0.0
            if self.bypass_us is not None and left > 0:
                # the newest writes would wait left / rate; bypass those whose wait passes the
                # threshold, as long as the storage tier serves them sooner
                rate = adm / dt
                wait = left / rate if rate > 0 else math.inf
                keep = self.bypass_us * rate
                # (closed-loop host: the tier's queue counts against its outstanding bytes)
                byp = min(left - keep, max(0.0, (wait - self.backlog - self.byp_lat) / self.byp_cost),
                          max(0.0, host_queue_b - self.backlog / self.byp_cost))
                if byp > 0:
                    self._pop_back(byp, self.backlog + self.byp_lat, wr_io)
                    self.backlog += byp * self.byp_cost
                    left -= byp
                    if gc_extra > 0:
                        self.debt += byp * self.byp_cost * gc_extra
                else:
                    byp = 0.0
            limit = max(0.0, host_queue_b - (self.backlog / self.byp_cost if self.bypass_us is not None else 0.0))
            if left > limit:  # closed-loop host: what it cannot hold is never issued
                st.throttled += left - limit
                self._pop_back(left - limit, 0.0, 0.0)
            if adm > 0:
                self._pop_front(adm, slot, lat, wr_io)
            st.admitted += adm
            st.flush_cap += cap
            st.flushed += flushed
            st.bypassed += byp
            st.reads += r
            if full:
                st.full_s += dt_s
            self.slot = slot + 1
        st.throughput = st.admitted + st.bypassed + st.reads
        return st

    def _rec(self, lat_us: float, count: float) -> None:
        if count <= 0:
            return
        i = int(_log10(lat_us) * LAT_BINS_PER_DECADE) if lat_us > 1.0 else 0
        self.hist[i if i < LAT_BINS else LAT_BINS - 1] += count
        self.lat_sum += lat_us * count
        self.n_req += count

    def _pop_front(self, amount: float, slot: int, service_us: float, io: float) -> None:
        """Admit ``amount`` bytes FIFO in ``slot``. A batch's requests arrived evenly between its
        first and last arrival time; admissions are spread evenly over the slot; each admitted
        part waits (its mean departure - its mean arrival)."""
        q, dt = self.queue, self.dt
        self.hq -= amount
        h = self.q_head
        total, done, base = amount, 0.0, slot * dt
        while amount > 1e-9 and h < len(q):
            b = q[h]
            take = b[0] if b[0] < amount else amount
            span = (b[2] - b[1]) * take / b[0]
            wait = base + (done + 0.5 * take) / total * dt - (b[1] + 0.5 * span)
            self._rec((wait if wait > 0 else 0.0) + service_us, take / io)
            done += take
            b[0] -= take
            b[1] += span
            amount -= take
            if b[0] <= 1e-9:
                h += 1
        if h > 256:
            del q[:h]
            h = 0
        self.q_head = h
        if self.hq < 1e-6:
            self.hq = 0.0

    def _pop_back(self, amount: float, service_us: float, io: float) -> None:
        """Take ``amount`` bytes out of the newest batches, thinning them (their arrival span is
        kept): bypassed when issued (they wait ``service_us`` at the tier; ``io`` > 0 records
        them) or never issued (``io`` = 0)."""
        q = self.queue
        self.hq -= amount
        while amount > 1e-9 and len(q) > self.q_head:
            b = q[-1]
            take = b[0] if b[0] < amount else amount
            if io > 0:
                self._rec(service_us, take / io)
            b[0] -= take
            amount -= take
            if b[0] <= 1e-9:
                q.pop()
        if self.hq < 1e-6:
            self.hq = 0.0

    # ------------------------------------------------------------------ episode statistics
    def latency_quantile(self, q: float) -> float:
        """The ``q`` quantile of request latency (us), at histogram-bin resolution (upper edge)."""
        total = sum(self.hist)
        if total <= 0:
            return float("nan")
        need, acc = q * total, 0.0
        for i, n in enumerate(self.hist):
            acc += n
            if acc >= need:
                return 10 ** ((i + 1) / LAT_BINS_PER_DECADE)
        return 10 ** (LAT_BINS / LAT_BINS_PER_DECADE)

    @property
    def mean_latency_us(self) -> float:
        return self.lat_sum / self.n_req if self.n_req > 0 else float("nan")
