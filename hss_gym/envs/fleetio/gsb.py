"""FleetIO's ghost superblocks (gSB, §3.6) and admission control (§3.5): pure bookkeeping.

* :class:`GsbPool` — the gSB pool: one list per channel count (head insertion), best-fit
  harvesting (same ``n_chls``, then smaller, then larger; never the harvester's own gSBs),
  Make_Harvestable creating gSBs only on home channels with >= ``min_free`` (25%) free blocks and
  reclaiming the home's gSBs wider than the new request (unused ones at once, in-use ones lazily:
  :meth:`GsbPool.gc_ran` finishes them when GC runs on one of their channels).
* :class:`AdmissionControl` — groups actions into batches by submission time (50 ms), runs each
  batch's Make_Harvestable actions first, then its Harvest actions first-come-first-served, or,
  when they ask for more channels than the pool offers them, less-harvested vSSDs first; an
  optional provider ``policy(kind, vssd, n_chls) -> bool`` filters actions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class GhostSuperblock:
    """Figure 7's metadata, plus the lazy-reclaim flag."""

    gid: int
    home: int
    channels: tuple[int, ...]
    capacity_blocks: int
    harvester: int | None = None
    in_use: bool = False
    reclaiming: bool = False

    @property
    def n_chls(self) -> int:
        return len(self.channels)


class GsbPool:
    """The gSB pool of one SSD (see the module docstring)."""

    def __init__(self, home_channels: Sequence[Sequence[int]], n_channels: int, *,
                 superblock_blocks: int = 16, min_free: float = 0.25) -> None:
        self.n_channels = n_channels
        self.home_channels = [tuple(int(c) for c in h) for h in home_channels]
        self.superblock_blocks = superblock_blocks
        self.min_free = min_free
        self.gsbs: dict[int, GhostSuperblock] = {}
        self.lists: list[list[int]] = [[] for _ in range(n_channels + 1)]  # index n_chls: gids, head first
        self._next = 0

    # -- queries -----------------------------------------------------------------------------
    def harvested_by(self, v: int) -> list[GhostSuperblock]:
        return [g for g in self.gsbs.values() if g.in_use and g.harvester == v]

    def offered_by(self, v: int) -> list[GhostSuperblock]:
        return [g for g in self.gsbs.values() if g.home == v]

    def harvested_channels(self, v: int) -> int:
        return sum(g.n_chls for g in self.harvested_by(v))

    def available_for(self, v: int) -> int:
        """Channels in free (not in-use) gSBs that ``v`` may harvest."""
        return sum(self.gsbs[g].n_chls for lst in self.lists for g in lst if self.gsbs[g].home != v)

    def usable(self, n_vssd: int) -> np.ndarray:
        """(n_vssd, n_channels) bool: the channels each vSSD's I/O may use (home + harvested)."""
        m = np.zeros((n_vssd, self.n_channels), dtype=bool)
        for v, h in enumerate(self.home_channels):
            m[v, list(h)] = True
        for g in self.gsbs.values():
            if g.in_use and g.harvester is not None:
                m[g.harvester, list(g.channels)] = True
        return m

    # -- actions -----------------------------------------------------------------------------
    def make_harvestable(self, v: int, n_chls: int, free_frac: np.ndarray) -> GhostSuperblock | None:
        """Reclaim ``v``'s gSBs wider than ``n_chls``; then create one of up to ``n_chls`` channels.

        New gSBs only use home channels not already in one of ``v``'s gSBs and with at least
        ``min_free`` free blocks (most free first); with fewer such channels the gSB is narrower,
        with none it is refused (returns ``None``).
        """
        for g in list(self.offered_by(v)):
            if g.n_chls > n_chls:
                self._reclaim(g)
        if n_chls <= 0:
            return None
        taken = {c for g in self.offered_by(v) for c in g.channels}
        ok = [c for c in self.home_channels[v] if c not in taken and free_frac[c] >= self.min_free]
        if not ok:
            return None
        ok.sort(key=lambda c: (-free_frac[c], c))
        chans = tuple(sorted(ok[:n_chls]))
        g = GhostSuperblock(self._next, v, chans, len(chans) * self.superblock_blocks)
        self._next += 1
        self.gsbs[g.gid] = g
        self.lists[g.n_chls].insert(0, g.gid)
        return g

    def harvest(self, v: int, n_chls: int) -> GhostSuperblock | None:
        """Best-fit: the first gSB of ``n_chls`` channels, else of the largest smaller count, else
        of the smallest larger count; never one whose home is ``v``. ``None`` if there is none."""
        if n_chls <= 0:
            return None
        order = [n_chls] + list(range(n_chls - 1, 0, -1)) + list(range(n_chls + 1, self.n_channels + 1))
        for k in order:
            for gid in self.lists[k]:
                g = self.gsbs[gid]
                if g.home != v:
                    self.lists[k].remove(gid)
                    g.harvester, g.in_use = v, True
                    return g
        return None

    def _reclaim(self, g: GhostSuperblock) -> None:
        if g.in_use:
            g.reclaiming = True  # lazy: GC moves the harvester's data out (gc_ran)
        else:
            self.lists[g.n_chls].remove(g.gid)
            del self.gsbs[g.gid]

    def gc_ran(self, channel: int) -> list[GhostSuperblock]:
        """GC ran on ``channel``: destroy the reclaiming gSBs on it; returns them (on the device
        their harvester's data moves to its own blocks; the flash model does not simulate it)."""
        done = [g for g in self.gsbs.values() if g.reclaiming and channel in g.channels]
        for g in done:
            del self.gsbs[g.gid]
        return done


@dataclass(frozen=True)
class Action:
    """One agent's Harvest / Make_Harvestable request with its submission time (ms in window)."""

    vssd: int
    harvest: int
    make_harvestable: int
    time_ms: float = 0.0


class AdmissionControl:
    """Batches actions (``batch_ms``) and applies them to a :class:`GsbPool` (module docstring)."""

    def __init__(self, batch_ms: float = 50.0,
                 policy: Callable[[str, int, int], bool] | None = None) -> None:
        if batch_ms <= 0:
            raise ValueError(f"admission batch_ms must be > 0, got {batch_ms}")
        self.batch_ms = batch_ms
        self.policy = policy

    def _allowed(self, kind: str, v: int, n: int) -> bool:
        return self.policy is None or bool(self.policy(kind, v, n))

    def batches(self, actions: Sequence[Action]) -> list[list[Action]]:
        """Actions grouped by ``floor(time_ms / batch_ms)``, in time order (stable)."""
        out: dict[int, list[Action]] = {}
        for a in sorted(actions, key=lambda a: a.time_ms):
            out.setdefault(int(a.time_ms // self.batch_ms), []).append(a)
        return [out[k] for k in sorted(out)]

    def process(self, pool: GsbPool, actions: Sequence[Action], free_frac: np.ndarray) -> dict[str, int]:
        """Apply every batch; returns counts of created, harvested and refused actions."""
        stats = {"created": 0, "harvested": 0, "refused": 0, "filtered": 0}
        for batch in self.batches(actions):
            for a in batch:  # Make_Harvestable first: supply before demand
                if not self._allowed("make_harvestable", a.vssd, a.make_harvestable):
                    stats["filtered"] += 1
                    continue
                g = pool.make_harvestable(a.vssd, a.make_harvestable, free_frac)
                if g is not None:
                    stats["created"] += 1
                elif a.make_harvestable > 0:
                    stats["refused"] += 1
            want = [a for a in batch if a.harvest > 0]
            if sum(a.harvest for a in want) > pool.available_for(-1):  # demand exceeds supply
                # contention: less-harvested vSSDs first, FCFS among equals (stable sort)
                want.sort(key=lambda a: pool.harvested_channels(a.vssd))
            for a in want:
                if not self._allowed("harvest", a.vssd, a.harvest):
                    stats["filtered"] += 1
                    continue
                if pool.harvest(a.vssd, a.harvest) is not None:
                    stats["harvested"] += 1
                else:
                    stats["refused"] += 1
        return stats
