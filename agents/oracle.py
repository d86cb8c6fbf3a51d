"""Oracle: complete knowledge of the future and free migration — the lower bound of the leaderboard.

Harmonia (section 3.4) compares against an Oracle that "makes optimal data-placement and migration
decisions based on complete knowledge of future I/O access patterns" and migrates in idle time
"which does not add any latency overheads". Here:

* **free migration**: the Oracle moves pages with :meth:`hss_gym.hss.HSS.remap`, which changes the
  mapping without occupying any device (counted as migrations, and in write amplification);
* **placement**: before each request it sees every device's queue (the time its next server is
  free) and serves the request from the device that completes it first — estimated from the
  device's fixed service time, transfer time and, for an HDD, mean seek and half a rotation —
  moving the request's pages there for free. So it is never worse than an all-fast HSS by much and
  can beat it where one device saturates and spreading the load helps;
* **Belady eviction** (MIN): when the chosen device is bounded and full, the pages whose next use
  lies furthest in the future (from the trace, precomputed for every page access) are moved to the
  home device for free, so nothing is ever evicted on the critical path.

It reads the whole trace (``env.trace``), so it is a bound, not a policy a real system can run.
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Infos, Obs, Policy
from hss_gym.backends.sim import timing_params
from hss_gym.envs.parallel import HSSParallelEnv
from hss_gym.workloads.trace import PAGE_SIZE, Trace

NEVER = np.iinfo(np.int64).max


def next_uses(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """For every page access of ``trace`` (request by request, page by page): the index of the
    next request touching that page (``NEVER`` if none). Returns (offsets, next_use): the accesses
    of request ``i`` are ``next_use[offsets[i]:offsets[i + 1]]``."""
    p0 = trace.offset // PAGE_SIZE
    p1 = (trace.offset + np.maximum(trace.size, 1) - 1) // PAGE_SIZE
    counts = (p1 - p0 + 1).astype(np.int64)
    offsets = np.zeros(len(trace) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    req = np.repeat(np.arange(len(trace), dtype=np.int64), counts)
    pages = np.repeat(p0, counts) + (np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], counts))
    order = np.lexsort((req, pages))
    nxt = np.full(len(req), NEVER, dtype=np.int64)
    same = pages[order[1:]] == pages[order[:-1]]
    nxt[order[:-1][same]] = req[order[1:][same]]
    return offsets, nxt


class Oracle(Policy):
    """The clairvoyant lower bound; see the module docstring."""

    name = "oracle"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        hss = env.hss
        self.hss = hss
        offsets, next_use = next_uses(env.trace)
        # Python lists: the per-request code below reads a few entries at a time, which is
        # several times cheaper from a list than from a NumPy array.
        self.offsets, self.next_use = offsets.tolist(), next_use.tolist()
        n = hss.n_devices
        self.n, self.home = n, n - 1
        self.cap = list(hss.capacities)
        self.used = [0] * n
        self.where: dict[int, int] = {}
        self.nu: dict[int, int] = {}
        self.heaps: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.free_at = hss.backend.devices.free_at
        self._remap = hss.core.remap  # the core's method directly: it runs for most page accesses
        self.cost = []
        for d, prof in enumerate(hss.config.devices):
            p = timing_params(prof, self.cap[d])
            extra = (p.get("seek_min_us", 0.0) + p.get("seek_max_us", 0.0)) / 2 + p.get("rotation_us", 0.0) / 2
            self.cost.append(((p["read_us"] + extra, p["read_bw"]), (p["write_us"] + extra, p["write_bw"])))

    def _best_device(self, t: float, op: int, size: int, k: int) -> int:
        best, best_t = self.home, float("inf")
        for d in range(self.n):
            if d != self.home and k > self.cap[d]:
                continue
            fixed, bw = self.cost[d][op]
            done = max(t, self.free_at(d)) + fixed + size / bw
            if done < best_t:
                best, best_t = d, done
        return best

    def _make_room(self, d: int, k: int, current: range) -> None:
        """Belady: move the residents of ``d`` used furthest in the future home, for free."""
        heap, where, nu, used, home = self.heaps[d], self.where, self.nu, self.used, self.home
        cap, remap, pop = self.cap[d], self._remap, heapq.heappop
        while used[d] + k > cap:
            neg, page = pop(heap)
            if where.get(page) != d or nu.get(page) != -neg or page in current:
                continue  # stale entry (moved or re-used since), or needed by this request
            remap(page, home)
            where[page] = home
            used[d] -= 1
            used[home] += 1

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        env = self.env
        i = env.step_index
        _, op, offset, size = env.request
        lo, hi = self.offsets[i], self.offsets[i + 1]
        first = offset // PAGE_SIZE
        pages = range(first, first + hi - lo)
        d = self._best_device(env.issue_time_us, op, size, hi - lo)
        where, used, remap, nu = self.where, self.used, self._remap, self.nu
        if d != self.home:
            arriving = sum(1 for p in pages if where.get(p) != d)
            if used[d] + arriving > self.cap[d]:
                self._make_room(d, arriving, pages)
        nexts = self.next_use[lo:hi]
        for p in pages:
            src = where.get(p)
            if src != d:
                if src is not None:
                    remap(p, d)  # placed before: move it here for free
                    used[src] -= 1
                used[d] += 1
                where[p] = d
        nu.update(zip(pages, nexts))
        if d != self.home:
            heap, push = self.heaps[d], heapq.heappush
            for p, nxt in zip(pages, nexts):
                push(heap, (-nxt, p))
            if len(heap) > 4 * self.cap[d] + 4096:  # drop stale entries
                self.heaps[d] = [(-nu[p], p) for p, dev in where.items() if dev == d]
                heapq.heapify(self.heaps[d])
        return {"placement": d}
