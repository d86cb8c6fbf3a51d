"""Fixed and heuristic policies, and the page-history helpers of the migration baselines.

* **Fast-Only** — every page on the fastest device, which is made large enough for the whole
  footprint (``fast_fraction=1``): the papers' ideal HSS and the normalisation reference.
* **Slow-Only** — every page on the slowest (home) device; no migration.
* **Random** — uniformly random placement and migration targets (seeded): the floor any learner
  must clear.
* **CDE** (Cold Data Eviction; Matsui, Sun and Takeuchi, "Design of Hybrid SSDs With Storage
  Class Memory and NAND Flash Memory", Proc. IEEE 2017; as used in Harmonia §3.3 and Sibyl) —
  placement only: hot requests (a page of the request was accessed at least ``hot_count`` times
  before) and small/random ones (smaller than ``seq_bytes``) go to the fast device; cold,
  large/sequential requests to the slow device. Cold data leaves the fast device by LRU eviction
  when it is full, which the HSS core performs on the critical path when a placement targets a
  full device. *Simplified*: hotness is the HSS's per-page access count of the request's first
  and last page, not the paper's SCM write-frequency table; randomness is the request size alone.
* **HPS** (Hot Page Selection; Meswani et al., "Heterogeneous Memory Architectures: A HW/SW
  Approach for Mixing Die-stacked and Off-package Memories", HPCA 2015; a Sibyl baseline) — a
  page is *hot* when its accesses in the current and the previous epoch (``epoch`` requests)
  exceed ``threshold``. Placement: requests whose first page is hot go to the fast device, the
  others to the slow one. Migration, on the environment scanner's candidate each step (queued,
  idle-time moves): a hot page on a slower device is promoted to the fast one; a page on the fast
  device with no access in the two epochs is demoted. In addition, at each epoch's end the
  ``epoch_promotions`` (64) hottest pages of the epoch that sit on a slower device are queued for
  promotion (``env.hss.enqueue``: Meswani's epoch-based hot-page migration; the scanner, which
  prefers long-idle pages, rarely offers hot ones). *Simplified*: epoch counters are Python
  dictionaries (two epochs kept); no page ranking beyond the per-epoch top list.
* **FastUntilFull** — the fixed placement of K-SVM and RNN-HSS (Harmonia §3.3: K-SVM "places
  incoming requests in the fast device until its capacity reaches 100%"), then the slowest
  device; a rewrite of data already on the fast device stays there (in-place, no eviction).

:class:`PageHistory` (per-page access counts over the last few fixed intervals, NumPy),
:func:`unique_rows` (most pages share their count history: the learned parts work on the distinct
rows), :func:`page_devices` and :func:`bulk_migrate` (critical-path migration of many pages through
``env.hss.move``) are shared by :mod:`hss_gym.agents.ksvm` and :mod:`hss_gym.agents.rnn_hss`;
they live here because this module imports neither torch nor scikit-learn.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Infos, Obs, Policy, stay_action
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.hss import PAGE_SHIFT


def resolve_device(env: HSSParallelEnv, device: int) -> int:
    """``device`` as an index of ``env``'s HSS (negative counts from the slowest)."""
    n = env.cfg.n_devices
    d = device if device >= 0 else n + device
    if not 0 <= d < n:
        raise ValueError(f"device {device} does not exist in a {n}-device HSS")
    return d


class FastOnly(Policy):
    """Everything on device 0, sized for and preloaded with the whole footprint (the ideal HSS)."""

    name = "fast_only"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"fast_fraction": 1.0, "preloaded": True, "migration": False}

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": 0}


class SlowOnly(Policy):
    """Everything on the slowest (home) device."""

    name = "slow_only"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.slow = env.cfg.n_devices - 1

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": self.slow}


class RandomPolicy(Policy):
    """Uniformly random placement and migration targets, seeded by the episode seed.

    Each step takes the next two draws of ``rng.integers(n_devices)``. They are drawn
    ``block`` steps at a time: NumPy's bounded integers consume the generator's 32-bit stream value
    by value, so one call of size ``2 * block`` gives exactly the draws of ``block`` calls of size 2
    (one call per step costs more than the rest of the policy)."""

    name = "random"
    block = 4096

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.rng = np.random.default_rng(seed)
        self.n = env.cfg.n_devices
        self._draws: list[int] = []
        self._next = 0

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        k = self._next
        if k >= len(self._draws):
            self._draws = self.rng.integers(self.n, size=2 * self.block).tolist()
            k = 0
        self._next = k + 2
        a, b = self._draws[k], self._draws[k + 1]
        return {"placement": a, "migration": b if infos["migration"]["acting"] else stay_action(infos)}


# ---------------------------------------------------------------------------------------------
class CDE(Policy):
    """Cold Data Eviction (Matsui et al., Proc. IEEE 2017): see the module docstring.

    ``seq_bytes``: requests at least this large are sequential (default 64 KiB);
    ``hot_count``: a page accessed at least this many times before is hot (default 2);
    ``slow_device``: where cold/sequential data goes (default -1, the home device).
    """

    name = "cde"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def __init__(self, seq_bytes: int = 64 * 1024, hot_count: int = 2, slow_device: int = -1) -> None:
        if seq_bytes < 1 or hot_count < 1:
            raise ValueError(f"seq_bytes and hot_count must be >= 1, got {seq_bytes}, {hot_count}")
        self.seq_bytes, self.hot_count, self.slow_device = int(seq_bytes), int(hot_count), slow_device

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.slow = resolve_device(env, self.slow_device)
        self._page = env.hss.page

    def is_hot(self, offset: int, size: int) -> bool:
        """True if the request's first or last page was accessed ``hot_count`` times before."""
        page = self._page
        for p in (offset >> PAGE_SHIFT, (offset + size - 1) >> PAGE_SHIFT):
            m = page(p)
            if m is not None and m["count"] >= self.hot_count:
                return True
        return False

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        if not infos["placement"]["acting"]:
            return {"placement": 0}
        _, _, offset, size = self.env.request
        if size < self.seq_bytes or self.is_hot(offset, size):
            return {"placement": 0}
        return {"placement": self.slow}


class HPS(Policy):
    """Hot Page Selection (Meswani et al., HPCA 2015): see the module docstring.

    ``threshold``: a page is hot when its accesses in the current and previous epoch exceed it
    (default 1: at least two accesses); ``epoch``: epoch length in requests (default 1000);
    ``slow_device``: where cold pages go (default -1, the home device); ``epoch_promotions``:
    hot pages queued for promotion at each epoch's end (default 64; 0 disables).
    """

    name = "hps"

    def __init__(self, threshold: int = 1, epoch: int = 1000, slow_device: int = -1,
                 epoch_promotions: int = 64) -> None:
        if threshold < 0 or epoch < 1 or epoch_promotions < 0:
            raise ValueError(f"threshold and epoch_promotions must be >= 0 and epoch >= 1, got "
                             f"{threshold}, {epoch_promotions}, {epoch}")
        self.threshold, self.epoch, self.slow_device = int(threshold), int(epoch), slow_device
        self.epoch_promotions = int(epoch_promotions)

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.slow = resolve_device(env, self.slow_device)
        self.cur: dict[int, int] = {}
        self.prev: dict[int, int] = {}
        self._next_epoch = self.epoch
        self.promotions = self.demotions = 0

    def _epoch_end(self) -> None:
        """Queue the promotion of the epoch's hottest pages that sit on a slower device."""
        if not self.epoch_promotions:
            return
        hot = [(c, p) for p, c in self.cur.items() if c > self.threshold]
        hot.sort(reverse=True)
        page, enqueue, n = self.env.hss.page, self.env.hss.enqueue, 0
        for _, p in hot:
            if n >= self.epoch_promotions:
                break
            m = page(p)
            if m is not None and m["device"] > 0 and not m["queued"] and enqueue(p, 0):
                n += 1
        self.promotions += n

    def accesses(self, page: int) -> int:
        """Accesses of ``page`` in the current and the previous epoch."""
        return self.cur.get(page, 0) + self.prev.get(page, 0)

    def is_hot(self, page: int) -> bool:
        return self.accesses(page) > self.threshold

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        env = self.env
        if env.step_index >= self._next_epoch:
            self._epoch_end()
            self.prev, self.cur = self.cur, {}
            self._next_epoch = env.step_index + self.epoch
        _, _, offset, size = env.request
        p0, p1 = offset >> PAGE_SHIFT, (offset + size - 1) >> PAGE_SHIFT
        place = 0 if self.is_hot(p0) else self.slow
        mi = infos["migration"]
        move = stay_action(infos)
        if mi["acting"]:
            page, dev = mi["page"], mi["device"]
            n = self.accesses(page)
            if dev > 0 and n > self.threshold:
                move = 0
                self.promotions += 1
            elif dev == 0 and n == 0 and self.slow != 0:
                move = self.slow
                self.demotions += 1
        cur = self.cur
        for p in range(p0, p1 + 1):  # this request's accesses count once it has been decided
            cur[p] = cur.get(p, 0) + 1
        return {"placement": place, "migration": move}


class FastUntilFull(Policy):
    """Fixed placement of K-SVM and RNN-HSS: the fast device until it is full, then the slowest.

    Free space comes from ``hss.counters()``, refreshed when the running estimate says the request
    does not fit (at most every ``refresh`` steps), so this placement never causes an eviction. A
    write whose first and last pages are already on the fast device stays there.
    """

    name = "fast_until_full"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def __init__(self, slow_device: int = -1, refresh: int = 32) -> None:
        self.slow_device, self.refresh = slow_device, max(1, int(refresh))

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.slow = resolve_device(env, self.slow_device)
        self.cap0 = env.hss.capacities[0]
        self._free = -1
        self._checked = -self.refresh
        self._page = env.hss.page

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        if not infos["placement"]["acting"]:
            return {"placement": 0}
        _, _, offset, size = self.env.request
        p0, p1 = offset >> PAGE_SHIFT, (offset + size - 1) >> PAGE_SHIFT
        n = p1 - p0 + 1
        if n > self._free:
            i = self.env.step_index
            if i - self._checked >= self.refresh:
                self._checked = i
                self._free = self.cap0 - self.env.hss.counters()["used_pages"][0]
        if n <= self._free:
            self._free -= n
            return {"placement": 0}
        a = self._page(p0)
        if a is not None and a["device"] == 0:
            b = self._page(p1)
            if b is not None and b["device"] == 0:
                return {"placement": 0}  # in-place update of fast-resident data
        return {"placement": self.slow}


# ---------------------------------------------------------------------------------------------
# Shared by the interval-based migration baselines (K-SVM, RNN-HSS).
def _unique_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values of ``a`` and their counts (sort-based: faster than ``np.unique``'s
    hashing for these arrays)."""
    a = np.sort(a)
    if len(a) == 0:
        return a, np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1])))
    return a[starts], np.diff(np.append(starts, len(a)))


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of the 2-D float32 array ``a`` (bit patterns compared) and, for each row
    of ``a``, the index of its distinct row: ``rows[inverse]`` is ``a``. A lexicographic sort of
    the rows' 32-bit words: several times faster than ``np.unique(a, axis=0)``."""
    words = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    order = np.lexsort(words.T[::-1])
    ranked = words[order]
    new = np.ones(len(a), dtype=bool)
    np.any(ranked[1:] != ranked[:-1], axis=1, out=new[1:])
    inverse = np.empty(len(a), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return a[order[new]], inverse


class PageHistory:
    """Per-page access counts over the last ``n_intervals`` fixed intervals (NumPy).

    :meth:`record` notes a request's page range (two list appends); :meth:`roll` closes the
    interval: counts the recorded pages, shifts every tracked page's history by one interval
    (column -1 is the newest), drops pages without an access in the window and keeps at most
    ``max_pages`` (by recency-weighted activity).
    """

    def __init__(self, n_intervals: int, max_pages: int = 32768) -> None:
        if n_intervals < 1 or max_pages < 1:
            raise ValueError(f"n_intervals and max_pages must be >= 1, got {n_intervals}, {max_pages}")
        self.n_intervals, self.max_pages = int(n_intervals), int(max_pages)
        self.reset()

    def reset(self) -> None:
        self.pages = np.empty(0, dtype=np.int64)
        self.counts = np.zeros((0, self.n_intervals), dtype=np.float32)
        self.intervals = 0
        self._starts: list[int] = []
        self._lens: list[int] = []

    def record(self, offset: int, size: int) -> None:
        p0 = offset >> PAGE_SHIFT
        self._starts.append(p0)
        self._lens.append(((offset + size - 1) >> PAGE_SHIFT) - p0 + 1)

    def roll(self) -> None:
        if self._starts:
            starts = np.asarray(self._starts, dtype=np.int64)
            lens = np.asarray(self._lens, dtype=np.int64)
            first = np.cumsum(lens) - lens
            pages = np.repeat(starts - first, lens) + np.arange(int(lens.sum()), dtype=np.int64)
            new, cnt = _unique_counts(pages)
        else:
            new, cnt = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        self._starts, self._lens = [], []
        allp = _unique_counts(np.concatenate([self.pages, new]))[0]
        counts = np.zeros((len(allp), self.n_intervals), dtype=np.float32)
        if len(self.pages) and self.n_intervals > 1:
            counts[np.searchsorted(allp, self.pages), :-1] = self.counts[:, 1:]
        counts[np.searchsorted(allp, new), -1] = cnt
        keep = counts.any(axis=1)
        allp, counts = allp[keep], counts[keep]
        if len(allp) > self.max_pages:
            w = 2.0 ** np.arange(self.n_intervals, dtype=np.float32)  # newer intervals weigh more
            score = np.log1p(counts) @ w
            top = np.sort(np.argpartition(-score, self.max_pages - 1)[:self.max_pages])
            allp, counts = allp[top], counts[top]
        self.pages, self.counts = allp, counts
        self.intervals += 1


def page_devices(env: HSSParallelEnv, pages: np.ndarray) -> np.ndarray:
    """Current device of each page (-1 for a page not placed), in one call to the core."""
    return env.hss.devices(pages)


def fit_capacity(target: np.ndarray, score: np.ndarray, capacities: "list[int] | tuple[int, ...]") -> np.ndarray:
    """``target`` with each bounded device's share cut to its capacity (hottest ``score`` first);
    the overflow moves down to the next slower device."""
    target = target.copy()
    for d in range(len(capacities) - 1):
        idx = np.flatnonzero(target == d)
        if len(idx) > capacities[d]:
            order = idx[np.argsort(-score[idx], kind="stable")]
            target[order[int(capacities[d]):]] = d + 1
    return target


def bulk_migrate(env: HSSParallelEnv, pages: np.ndarray, current: np.ndarray, target: np.ndarray,
                 score: np.ndarray, max_moves: int | None = None, demote_cold: bool = True) -> int:
    """Move pages to their ``target`` devices now, on the critical path (``env.hss.move`` at the
    current request's arrival time), as K-SVM and RNN-HSS migrate at their fixed intervals.

    Promotions (target faster than current) go hottest first (``score``), into free space, into
    space freed by demoting the coldest pages whose target is slower, or else into space the core
    frees by evicting the target's LRU page (untracked pages); ``max_moves`` bounds the moves,
    evictions included (``None``: unbounded). With ``demote_cold`` the budget left over demotes
    the other cold pages too. Demotions run first, then promotions, each in page order
    (sequential runs on HDDs). Returns the number of pages this call moved (not evictions).
    """
    n_dev = env.cfg.n_devices
    budget = 2 * len(pages) if max_moves is None else int(max_moves)
    if budget <= 0 or n_dev < 2 or len(pages) == 0:
        return 0
    placed = current >= 0
    promo = np.flatnonzero(placed & (target < current))
    demo = np.flatnonzero(placed & (target > current))
    if len(promo) == 0 and not (demote_cold and len(demo)):
        return 0
    promo = promo[np.argsort(-score[promo], kind="stable")]
    demo = demo[np.argsort(score[demo], kind="stable")]
    caps = env.hss.capacities
    used = env.hss.counters()["used_pages"]
    free = [float(caps[d] - used[d]) for d in range(n_dev - 1)] + [float("inf")]
    demo_src = current[demo]
    demo_from = {int(d): demo[demo_src == d].tolist() for d in np.unique(demo_src)}  # coldest first
    pos = {d: 0 for d in demo_from}
    moves_d: list[int] = []
    moves_p: list[int] = []
    taken: set[int] = set()
    for j, d, src in zip(promo.tolist(), target[promo].tolist(), current[promo].tolist()):
        if budget < 1:
            break
        if free[d] < 1:
            # Make room: demote the coldest tracked page leaving d, or else let the core evict
            # d's LRU page (untracked pages, not accessed for the whole window, live there too).
            if budget < 2:
                break
            q = demo_from.get(d, [])
            if pos.get(d, 0) < len(q):
                k = q[pos[d]]
                pos[d] += 1
                taken.add(k)
                moves_d.append(k)
                free[int(target[k])] -= 1
            else:
                free[min(d + 1, n_dev - 1)] -= 1
            budget -= 1
            free[d] += 1
        moves_p.append(j)
        budget -= 1
        free[d] -= 1
        free[src] += 1
    if demote_cold:
        for j in demo.tolist():
            if budget < 1:
                break
            if j not in taken:
                moves_d.append(j)
                budget -= 1
    t = env.issue_time_us
    move = env.hss.move
    for group in (moves_d, moves_p):
        idx = np.asarray(group, dtype=np.int64)
        idx = idx[np.argsort(pages[idx], kind="stable")]  # page order (a stable sort, as before)
        for page, dev in zip(pages[idx].tolist(), target[idx].tolist()):
            move(page, dev, t)
    return len(moves_d) + len(moves_p)


class PeriodicMigration(Policy):
    """The migration half shared by K-SVM and RNN-HSS: every ``interval`` requests, choose a
    device for each tracked page (:meth:`migrate`, the learned part) and move the pages whose
    device changes at once, on the critical path. The env's per-step migration agent is
    answered with "stay". ``max_moves`` bounds the pages moved per interval (``None``:
    unbounded); ``demote_cold`` lets spare budget demote pages classified cold."""

    agents = ("migration",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def __init__(self, interval: int, history: PageHistory, max_moves: int | None,
                 demote_cold: bool, seed: int) -> None:
        if interval < 1:
            raise ValueError(f"interval must be >= 1, got {interval}")
        self.interval, self.history = int(interval), history
        self.max_moves, self.demote_cold, self.seed = max_moves, demote_cold, int(seed)

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.history.reset()
        self._next = self.interval
        self._rng = np.random.default_rng([self.seed, 0 if seed is None else int(seed)])
        self.moved = 0            # pages moved so far this episode
        self.migration_steps: list[int] = []  # steps at which a bulk migration ran

    def migrate(self) -> int:
        """Choose targets for the tracked pages and :meth:`apply` them; returns pages moved."""
        raise NotImplementedError

    def apply(self, target: np.ndarray, score: np.ndarray) -> int:
        """Fit ``target`` devices to capacity (highest ``score`` first) and move pages now."""
        env, pages = self.env, self.history.pages
        target = fit_capacity(target, score, env.hss.capacities)
        moved = bulk_migrate(env, pages, page_devices(env, pages), target, score, self.max_moves,
                             self.demote_cold)
        self.moved += moved
        self.migration_steps.append(env.step_index)
        return moved

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        env = self.env
        if env.step_index >= self._next:
            self._next = env.step_index + self.interval
            self.history.roll()
            self.migrate()
        _, _, offset, size = env.request
        self.history.record(offset, size)
        return {"migration": stay_action(infos)}
