"""The strongest simple rules built from the reference agents' parts: what learning must beat.

``fit_first`` is the reference placement agent (:class:`hss_gym.agents.harmonia.PlacementAgent`
with ``evict=False``, the :class:`~hss_gym.agents.cleaner.Cleaner` and ``first_reads="home"``)
with its network replaced by a constant: every write goes to the fastest device it fits on (never
evicting on the critical path), a page first touched by a read stays on its home device, and the
cleaner keeps room on the faster devices in idle time. Nothing is learned and nothing migrates.
A learned agent that does not beat it has learned nothing that pays (docs/learning-diagnostics.md).

``fit_first_reuse`` is ``fit_first`` with the reference agents' learned victim order
(``victims="reuse"``: its cleanings take first the pages the HSS learned are not read again), and
``fit_first_reuse_ra`` adds their readahead (a sequential stream re-reading data at home has its
next pages promoted to the fast device in idle time, while the promoted pages are read there). It has no network: it is the rule the
reference agents' networks must beat, with every other part of theirs, learned or not, up to
0.9.0. ``fit_first_ref`` is the rule with every part of the reference agents but their networks,
whatever version: since 0.10.0 also their handling of long write streams on a disk-homed HSS
(:mod:`hss_gym.agents.streams`), since 0.13.0 their write bypass on an SSD-homed one
(:mod:`hss_gym.agents.bypass`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Policy
from hss_gym.agents.harmonia import REFERENCE, PlacementAgent
from hss_gym.envs.hss.env import HSSParallelEnv


class FitFirst(PlacementAgent):
    """Writes to the fastest device they fit on; first-touch reads home; the reference cleaner."""

    name = "fit_first"
    learns = False
    env_options: ClassVar[dict[str, Any]] = {"features": "sibyl", "migration": False}

    def __init__(self, seed: int = 0, clean: float = REFERENCE["clean"], victims: str = "lru", readahead: int = 0,
                 streams: bool = False, bypass: bool = False) -> None:
        super().__init__(seed=seed, train=False, evict=False, clean=clean, first_reads="home", victims=victims,
                         readahead=readahead, streams=streams, bypass=bypass)
        self.name = ("fit_first_ref" if streams else
                     "fit_first" + ("" if victims == "lru" else f"_{victims}") + ("_ra" if readahead else ""))

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        Policy.reset(self, env, seed)  # no network to build
        self._setup(env)

    def _choose(self, obs: np.ndarray) -> int:
        return 0  # the fastest device; the room check moves it down to where it fits

    @property
    def _exploring(self) -> bool:
        return False

    @property
    def loss_curve(self) -> list[tuple[int, float]]:
        return []


def fit_first_reuse(seed: int = 0) -> FitFirst:
    """``fit_first`` with the reference agents' learned victim order (``victims="reuse"``)."""
    return FitFirst(seed=seed, victims="reuse")


def fit_first_reuse_ra(seed: int = 0) -> FitFirst:
    """``fit_first_reuse`` with the reference agents' readahead (``REFERENCE["readahead"]`` pages)."""
    return FitFirst(seed=seed, victims="reuse", readahead=REFERENCE["readahead"])


def fit_first_ref(seed: int = 0) -> FitFirst:
    """``fit_first`` with every part of the reference agents but their networks (:data:`REFERENCE`):
    the learned victim order, the readahead, the long write streams' rules and the write bypass."""
    return FitFirst(seed=seed, victims=REFERENCE["victims"], readahead=REFERENCE["readahead"],
                    streams=REFERENCE["streams"], bypass=REFERENCE["bypass"])
