"""A fast channel-level (fluid) model of a shared flash SSD, advanced in ticks (100 ms by default).

Why: a FleetIO step is a 2 s window of a 16-channel, ~1 GB/s SSD; simulating it transaction by
transaction costs ~10^5 events per window. This model works on per-tick byte flows instead, so a
window costs ~1 ms and RL training fits on 2 cores. It keeps what FleetIO's decisions act on:

* **Channels** of ``channel_MBps`` each (the paper's 64 MB/s). A tenant stripes its offered bytes
  evenly over the channels it may use (home + harvested); each channel is shared by weighted
  max-min fairness (weights 1/2/4 for priority low/medium/high, or the stride-scheduling
  tickets), unserved bytes of a tenant spill to its channels with spare capacity; what is still
  unserved waits in the tenant's host queue (bounded by ``max_backlog_s`` of its demand; the
  excess is dropped, i.e. the closed-loop application slows down).
* **Latency** per tenant and tick: flash array time (read / program) + bus transfer of its
  per-channel chunk + a non-preemptive priority M/G/1 wait on each channel it uses, with the
  load terms floored at ``min_slack`` (the bounded queue depth keeps queues finite) (so a
  latency-sensitive tenant sharing a channel with 64 KiB chunks of a bandwidth-intensive one
  waits for them unless its priority is higher) + GC stall + host-queue delay. Waits are taken as
  exponential, which gives P99 and the fraction of requests over the SLO in closed form.
* **Space and GC**: per channel free fraction; writes consume it, a channel below
  ``gc_threshold`` (lazy GC, 20%) runs GC, which takes ``gc_share`` of its bandwidth copying
  victim pages (valid fraction ``victim_valid``) until it is ``gc_hysteresis`` above the
  threshold. ``scale`` multiplies the channel capacity (1/16 by default: GC shows up within a
  short episode; it does not change the cost of a step).
* **Token buckets** (software isolation): optional per-tenant rate caps.

It is not the transaction-level flash model of SPEC §10 (``hss_gym.backends.flash``), which is
what the numbers should eventually be checked against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MB = 1_000_000
PRIORITY_WEIGHT = np.array([1.0, 2.0, 4.0])


@dataclass(frozen=True)
class FluidParams:
    """The device: Table 3's SSD (16 channels, 1 TB, 16 KiB pages, OP 20%, GC at 20% free)."""

    n_channels: int = 16
    channel_MBps: float = 64.0
    bus_MBps: float = 400.0  # channel bus transfer rate: what a waiting transaction waits for
    min_slack: float = 0.25  # floor of (1 - load) in the wait formula: queue depth 16 bounds queues
    capacity_GB: float = 1000.0
    page_kib: int = 16
    op_ratio: float = 0.2
    gc_threshold: float = 0.20
    gc_hysteresis: float = 0.02
    gc_share: float = 0.3
    victim_valid: float = 0.6
    read_us: float = 60.0
    program_us: float = 250.0  # per page, amortised over 4 chips x planes (TLC ~1 ms / 4)
    gc_stall_us: float = 300.0  # mean extra wait of a request landing on a chip busy with GC
    gc_op_us: float = 400.0  # one GC page copy (read + program, amortised) occupying the channel
    max_backlog_s: float = 0.2
    scale: float = 1.0 / 16
    initial_free: tuple[float, float] = (0.22, 0.32)

    def __post_init__(self) -> None:
        for f in ("n_channels", "channel_MBps", "capacity_GB", "scale", "gc_share", "page_kib"):
            if not getattr(self, f) > 0:
                raise ValueError(f"flash model: {f} must be > 0, got {getattr(self, f)}")
        if not 0 < self.gc_threshold < 1:
            raise ValueError(f"flash model: gc_threshold must be in (0, 1), got {self.gc_threshold}")

    @property
    def channel_Bps(self) -> float:
        return self.channel_MBps * MB

    @property
    def channel_bytes(self) -> float:
        return self.capacity_GB * 1e9 * self.scale / self.n_channels


@dataclass
class TickResult:
    """Per-tenant arrays of one tick (bytes, requests, latency model terms)."""

    read_bytes: np.ndarray
    write_bytes: np.ndarray
    requests: np.ndarray
    base_us: np.ndarray
    wait_us: np.ndarray
    qdelay_us: np.ndarray
    backlog: np.ndarray
    in_gc: np.ndarray
    channel_busy: np.ndarray  # (n_channels,) incl. GC
    gc_copied: np.ndarray  # (n_channels,) bytes copied by GC


class FluidSSD:
    """The shared SSD. Call :meth:`tick` once per tick with each tenant's offered load."""

    def __init__(self, params: FluidParams, n_tenants: int, rng: np.random.Generator,
                 tick_s: float = 0.05) -> None:
        self.p = params
        self.n = n_tenants
        self.tick_s = tick_s
        lo, hi = params.initial_free
        self.free = rng.uniform(lo, hi, params.n_channels)
        self.gc_on = self.free < params.gc_threshold
        self.backlog = np.zeros(n_tenants)  # bytes waiting in host queues
        self.host_writes = 0.0
        self.gc_writes = 0.0

    def tick(self, offered_r: np.ndarray, offered_w: np.ndarray, size: np.ndarray,
             usable: np.ndarray, share_w: np.ndarray, priority: np.ndarray,
             rate_cap: np.ndarray | None = None, extra_w: np.ndarray | None = None) -> TickResult:
        """Advance one tick. ``usable`` (n, C) bool; ``share_w`` bandwidth weights (n,);
        ``priority`` 0..2 (n,); ``rate_cap`` bytes/s token-bucket rate (n,) or None;
        ``extra_w`` (n,) bytes of background migration (gSB reclaim) to write on home channels."""
        p, dt, n = self.p, self.tick_s, self.n
        cap_full = p.channel_Bps * dt
        gc_frac = np.where(self.gc_on, p.gc_share, 0.0)
        cap = cap_full * (1 - gc_frac)

        off = (offered_r + offered_w) * dt
        rfrac = np.where(off > 0, offered_r * dt / np.maximum(off, 1e-9), 0.5)
        demand = off + self.backlog
        if rate_cap is not None:
            demand = np.minimum(demand, rate_cap * dt)
        k = usable.sum(axis=1).astype(np.float64)
        want = usable * (demand / np.maximum(k, 1))[:, None]
        if extra_w is not None:
            want = want + usable * (extra_w / np.maximum(k, 1))[:, None]
        w = usable * share_w[:, None]
        served = _waterfill(want, w, cap)
        # spill: a tenant's unserved bytes go to its channels with spare capacity
        left = want.sum(axis=1) - served.sum(axis=1)
        spare = cap - served.sum(axis=0)
        if (left > 1.0).any() and (spare > 1.0).any():
            room = usable * (spare > 1.0)[None, :]
            kk = room.sum(axis=1)
            want2 = room * (left / np.maximum(kk, 1))[:, None]
            served = served + _waterfill(want2, room * share_w[:, None], spare)
        got = served.sum(axis=1)
        got_user = np.minimum(got if extra_w is None else np.maximum(got - extra_w, 0.0), demand)
        mig = got - got_user  # background migration bytes served
        self.backlog = np.minimum(demand - got_user, (offered_r + offered_w) * p.max_backlog_s)

        # space and GC
        wfrac = 1 - rfrac
        wshare = np.where(got > 0, (got_user * wfrac + mig) / np.maximum(got, 1e-9), wfrac)
        written_c = (served * wshare[:, None]).sum(axis=0)
        cb = p.channel_bytes
        self.free -= written_c / cb
        copied = np.where(self.gc_on, cap_full * p.gc_share, 0.0)
        self.free += copied * (1 - p.victim_valid) / p.victim_valid / cb
        self.free = np.clip(self.free, 0.0, 1.0 - p.op_ratio)
        host_w = float((got_user * wfrac).sum())
        self.host_writes += host_w
        self.gc_writes += float(copied.sum())
        was_gc = self.gc_on.copy()
        self.gc_on = np.where(self.gc_on, self.free < p.gc_threshold + p.gc_hysteresis,
                              self.free < p.gc_threshold)

        # latency
        page = p.page_kib * 1024
        pages = np.maximum(size / page, 1.0)
        chunk = size / np.minimum(np.maximum(k, 1), pages)  # bytes per channel per request
        svc = chunk / (p.bus_MBps * MB)  # seconds of bus time per chunk
        base_us = (rfrac * p.read_us + wfrac * p.program_us) * np.ceil(chunk / page) + svc * 1e6
        rho = served / cap_full  # (n, C)
        lam = served / np.maximum(chunk, 1.0)[:, None] / dt  # chunks/s per channel
        resid = (lam * svc[:, None] ** 2).sum(axis=0) / 2 + gc_frac * p.gc_op_us * 1e-6 / 2
        prio = priority.astype(np.int64)
        hi = (prio[None, :] > prio[:, None]).astype(np.float64) @ rho  # load of higher classes
        geq = (prio[None, :] >= prio[:, None]).astype(np.float64) @ rho + gc_frac[None, :]
        slack = p.min_slack
        wait_c = resid[None, :] / np.maximum(1 - hi, slack) / np.maximum(1 - geq, slack)  # seconds
        use = served / np.maximum(got, 1e-9)[:, None]
        wait_us = (use * (wait_c * 1e6 + (was_gc * p.gc_stall_us * p.gc_share)[None, :])).sum(axis=1)
        reqs = got_user / np.maximum(size, 1.0)
        rate = np.maximum(got_user, 1.0) / dt
        qdelay_us = self.backlog / rate * 1e6
        busy = np.minimum(rho.sum(axis=0) + gc_frac, 1.0)
        return TickResult(got_user * rfrac, got_user * wfrac, reqs, base_us, wait_us, qdelay_us,
                          self.backlog.copy(), (usable & (was_gc | self.gc_on)[None, :]).any(axis=1),
                          busy, copied)

    @property
    def write_amplification(self) -> float:
        return (self.host_writes + self.gc_writes) / self.host_writes if self.host_writes else float("nan")


def _waterfill(want: np.ndarray, weight: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Weighted max-min share of each channel's ``cap`` (C,) among ``want`` (n, C)."""
    served = np.zeros_like(want)
    active = (want > 0) & (weight > 0)
    rem = cap.astype(np.float64).copy()
    need = want.copy()
    for _ in range(want.shape[0]):
        if not active.any():
            break
        wsum = (weight * active).sum(axis=0)
        share = np.where(active, rem[None, :] * weight / np.maximum(wsum, 1e-12)[None, :], 0.0)
        sat = active & (need <= share)
        if not sat.any():
            served += np.where(active, share, 0.0)
            break
        served += np.where(sat, need, 0.0)
        rem -= np.where(sat, need, 0.0).sum(axis=0)
        need = np.where(sat, 0.0, need)
        active &= ~sat
    return served
