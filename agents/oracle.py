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

``first_reads="home"`` bounds the policies that do not prefetch: a read touching a page never seen
before is served from the home device, where that data is (as the reference agents and the rules
leave first touches), and only later accesses get the free moves. What the default Oracle gains
beyond it is what predicting first-touch reads could give (docs/learning-diagnostics.md).
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Infos, Obs, Policy, stay_action
from hss_gym.backends.sim import timing_params
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.workloads.trace import PAGE_SIZE, READ, Trace

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

    def __init__(self, first_reads: str = "place") -> None:
        if first_reads not in ("place", "home"):
            raise ValueError(f"first_reads must be 'place' or 'home', got {first_reads!r}")
        self.reads_home = first_reads == "home"

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
        where, used, remap, nu = self.where, self.used, self._remap, self.nu
        if self.reads_home and op == READ and any(p not in where for p in pages):
            d = self.home  # a first touch is read where its data is
        else:
            d = self._best_device(env.issue_time_us, op, size, hi - lo)
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


class PaidOracle(Policy):
    """A future-reading heuristic that pays for its moves: a reference, not a bound.

    The :class:`Oracle` migrates for free and places every page where its request completes
    first, so "% of Oracle" overstates what any policy could reach. This one knows the same
    future (each page's next use, from the trace) but acts as a policy must: through the
    environment's placements and its migration queue, every move a real read and write in the
    device model, and only on pages it has seen (a page is placed at its first access, never
    before). For two or more devices it manages device 0 (the fast one) against the home device:

    * **placement** (writes and first touches): the fast device when the request fits in its
      free space and its pages are used again sooner than the fast resident used furthest in the
      future (Belady), else the home device; so it never evicts on the critical path;
    * **promotion**: a request (read, or write it did not place fast) whose pages sit on a slower
      device and are used again sooner than
      that resident is moved to the fast device through the migration queue (idle-time moves),
      after the Belady victims' demotions, queued first so the promotion finds a free slot;
      only while the queue has room for both (a full queue would run moves at once).

    It is not a bound: the Belady choice ignores the move costs and the queue's limits, and real
    policies beat it (the reference agents do on the real traces, docs/learning-diagnostics.md).
    """

    name = "oracle_paid"

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        hss = env.hss
        self.hss, self.core = hss, hss.core
        offsets, next_use = next_uses(env.trace)
        self.offsets, self.next_use = offsets.tolist(), next_use.tolist()
        self.home = hss.n_devices - 1
        self.cap0, self.qcap = hss.capacities[0], hss.config.queue_size
        self.nu: dict[int, int] = {}
        self.heap: list[tuple[int, int]] = []  # (-next use, page) of pages placed or queued to device 0
        self.promotions = 0

    def _dev(self, page: int) -> int:
        m = self.core.page(page)
        return -1 if m is None else m["device"]

    def _victims(self, k: int, before: int, exclude: range) -> list[int] | None:
        """``k`` fast residents used later than ``before`` (furthest first), or None."""
        heap, nu, out, keep = self.heap, self.nu, [], []
        while heap and len(out) < k:
            neg, p = heapq.heappop(heap)
            if nu.get(p) != -neg or p in exclude or self._dev(p) != 0:
                continue  # stale: used or moved since
            if -neg <= before:
                keep.append((neg, p))
                break
            out.append(p)
            keep.append((neg, p))
        for item in keep:
            heapq.heappush(heap, item)
        return out if len(out) == k else None

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        env, core = self.env, self.core
        i = env.step_index
        lo, hi = self.offsets[i], self.offsets[i + 1]
        _, op, offset, size = env.request
        first = offset // PAGE_SIZE
        pages = range(first, first + hi - lo)
        nexts = self.next_use[lo:hi]
        soon = min(nexts)
        k = hi - lo
        used = self.hss.used_pages[0] if infos["placement"]["acting"] else 0
        place = self.home
        if infos["placement"]["acting"] and soon != NEVER and k <= self.cap0:
            if used + k <= self.cap0 and (used + k <= self.cap0 - k or self._victims(1, soon, pages) is not None
                                          or not self.heap):
                place = 0
        if place != 0 and soon != NEVER and k <= self.qcap // 2 and core.queue_length + 2 * k <= self.qcap:
            devs = [self._dev(p) for p in pages]
            if all(d > 0 for d in devs):
                victims = self._victims(k, soon, pages)
                if victims is not None:
                    for v in victims:
                        core.enqueue(v, self.home)
                    for p in pages:
                        core.enqueue(p, 0)
                    self.promotions += 1
                    place = 0
        self.nu.update(zip(pages, nexts))
        if place == 0:
            push = heapq.heappush
            for p, nxt in zip(pages, nexts):
                push(self.heap, (-nxt, p))
            if len(self.heap) > 4 * self.cap0 + 4096:  # drop stale entries
                self.heap = [(-self.nu[p], p) for p in {p for _, p in self.heap} if self._dev(p) == 0]
                heapq.heapify(self.heap)
        return {"placement": 0 if infos["placement"]["acting"] and place == 0 else self.home,
                "migration": stay_action(infos)}
