"""FleetIO's SSD: the transaction-level flash SSD model, one FlashSSD stream per vSSD.

Each window, every tenant's offered load per tick becomes requests (Poisson counts, its mean
size rounded to 16 KiB pages, read/write by its byte mix, uniform page-aligned offsets in the
tenant's own 1/N of the logical space), submitted open-loop to
:class:`hss_gym.backends.flash.FlashSSD` (profile ``fleetio``, queue depth 16 per vSSD, Table 3).
A vSSD's usable channels (home + harvested gSBs) are its stream's units (all chips of those
channels) for new writes; Set_Priority is the stream's priority class; software isolation's
token bucket caps the bytes a tenant issues per window (stride scheduling is not modelled: chips
serve their queues FIFO within a priority class). A tenant whose host
backlog exceeds ``max_backlog`` requests submits only what the device completed for it in the
last window (the application waits instead of queueing without bound).

Simplifications (see ``docs/fleetio.md``): the flash model's preconditioning stripes old data
over all units, so reads of preconditioned data are not channel-isolated (hence
``precondition=None`` by default: the device starts empty and GC appears only once it fills);
gSB reclaim finishes when a stream using the gSB's channels ran GC in the window, and the
migration of the harvester's data is not simulated as extra writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from hss_gym.backends.flash import FlashSSD

if TYPE_CHECKING:
    from hss_gym.backends.flash import FlashProfile

MB = 1_000_000


class FlashBackend:
    """The flash model behind :class:`hss_gym.envs.fleetio.FleetIOEnv` (module docstring), on the
    env's ``profile`` (read once by the env, shared by all its episodes' models)."""

    def __init__(self, n: int, rng: np.random.Generator, *, profile: "FlashProfile", precondition: float | None,
                 slo_us: np.ndarray | None, max_backlog: int = 256) -> None:

        self.prof = profile
        self.n, self.rng, self.max_backlog = n, rng, max_backlog
        self.ssd = FlashSSD(self.prof, n_streams=n, queue_depth=16, seed=int(rng.integers(2 ** 31)),
                            precondition=precondition)
        if slo_us is not None:
            for i, s in enumerate(slo_us):
                self.ssd.set_slo(i, float(s))
        self.page = self.prof.page_size
        self.region = (self.prof.logical_bytes // n) // self.page * self.page
        self.W = self.prof.chips_per_channel
        self.unit_blocks = self.prof.dies_per_chip * self.prof.planes_per_die * self.prof.blocks_per_plane
        self._units: list[tuple[int, ...] | None] = [None] * n
        self._last = np.zeros(n)
        self._backlog = np.zeros(n)
        self.free = np.ones(self.prof.n_channels)
        self._lat_start = [0] * n

    @property
    def write_amplification(self) -> float:
        """The device's write amplification since construction."""
        return self.ssd.write_amplification()

    def mark_episode_start(self) -> None:
        self._lat_start = [len(self.ssd.latencies(i)) for i in range(self.n)]

    def episode_latencies(self, i: int) -> np.ndarray:
        return self.ssd.latencies(i)[self._lat_start[i]:]

    def run_window(self, rd: np.ndarray, wr: np.ndarray, sz: np.ndarray, tick_s: float,
                   usable: np.ndarray, priority: np.ndarray,
                   rate_cap: np.ndarray | None = None) -> dict[str, Any]:
        n, T = rd.shape
        for i in range(n):
            units = tuple(int(c) * self.W + k for c in np.flatnonzero(usable[i]) for k in range(self.W))
            if units != self._units[i]:
                self.ssd.set_units(i, units)
                self._units[i] = units
            self.ssd.set_priority(i, int(priority[i]))
        t0 = self.ssd.now_us
        cols: list[list[np.ndarray]] = [[], [], [], [], []]
        for i in range(n):
            pages = np.maximum(1, np.round(sz[i] / self.page)).astype(np.int64)
            cnt = self.rng.poisson((rd[i] + wr[i]) * tick_s / (pages * self.page))
            if self._backlog[i] > self.max_backlog:  # closed-loop cap: what the device served
                allow = int(self._last[i])
                keep = np.zeros(cnt.sum(), bool)
                keep[self.rng.permutation(cnt.sum())[:allow]] = True
            else:
                keep = np.ones(cnt.sum(), bool)
            k = np.repeat(np.arange(T), cnt)
            m = len(k)
            if rate_cap is not None:  # token bucket: bytes beyond the window's tokens are not issued
                keep &= np.cumsum(pages[k] * self.page) <= rate_cap[i] * T * tick_s
            t = t0 + (k + self.rng.random(m)) * tick_s * 1e6
            size = pages[k] * self.page
            wfrac = np.where(rd[i] + wr[i] > 0, wr[i] / np.maximum(rd[i] + wr[i], 1e-9), 0.0)
            is_w = self.rng.random(m) < wfrac[k]
            slots = np.maximum(self.region - size, self.page) // self.page
            off = i * self.region + self.rng.integers(0, slots) * self.page
            for c, v in zip(cols, (t, np.full(m, i, np.int32), off.astype(np.int64), size.astype(np.int64), is_w)):
                c.append(v[keep])
        t = np.concatenate(cols[0])
        order = np.argsort(t, kind="stable")
        self.ssd.submit(t[order], np.concatenate(cols[1])[order], np.concatenate(cols[2])[order],
                        np.concatenate(cols[3])[order], np.concatenate(cols[4])[order])
        ws = self.ssd.run_until(t0 + T * tick_s * 1e6)
        self._last = ws.completed.astype(np.float64)
        self._backlog = ws.backlog.astype(np.float64)
        self.free = (ws.unit_free_blocks.reshape(self.prof.n_channels, self.W).mean(axis=1) / self.unit_blocks)
        dur = ws.duration_us * 1e-6
        comp = ws.completed.astype(np.float64)
        gc_channels = np.flatnonzero((usable & (ws.gc_runs > 0)[:, None]).any(axis=0))
        return {"bw": (ws.read_bytes + ws.write_bytes) / dur, "reqs": comp,
                "mean_lat": np.nan_to_num(ws.lat_mean_us), "p99": np.nan_to_num(ws.lat_p99_us),
                "slo_vio": np.where(comp > 0, ws.slo_violations / np.maximum(comp, 1), 0.0),
                "qdelay": np.nan_to_num(ws.queue_delay_us), "rbytes": ws.read_bytes.astype(np.float64),
                "in_gc": np.asarray(ws.in_gc, bool), "gc_channels": gc_channels,
                "write_bytes": ws.write_bytes.astype(np.float64), "dur": dur}
