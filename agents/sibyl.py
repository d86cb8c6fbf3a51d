"""Sibyl (Singh et al., ISCA 2022): one C51 agent that places data; LRU eviction on the critical path.

The agent places every write and first touch on one of the N devices, observing Sibyl's six
features (request size, type, access interval, access count, remaining fast capacity, current
device; ``features="sibyl"``). When the chosen device is full, its least recently used pages are
evicted to the next slower device on the critical path (the environment's core does this); there
is no background migration (``migration=False``).

Reward (Sibyl section 5.2): the request's latency, inverted, with a penalty when the placement
forced evictions: ``r = L_ref / L_t`` and ``r = max(0, L_ref / L_t - eviction_penalty * k)`` when
``k`` pages were evicted (``infos["placement"]["evicted"]``). Sibyl charges ``0.001 x`` the
eviction latency; the evicted page count stands in for it here, since an eviction of ``k`` pages
costs ``k`` page copies.

Hyper-parameters (Sibyl's): network 6-20-30-(N x 51) with swish, gamma 0.9, epsilon 0.001, batch
128, experience buffer 1000, inference weights refreshed every 1000 requests. Deviations, each
measured in docs/learning-diagnostics.md: learning rate 3e-3 (Sibyl: 1e-4), an exploration warm-up
over the first 1000 decisions, a gradient step every 8 experiences, and per-page credit
(:mod:`hss_gym.agents.credit`) with an idle horizon of 50 requests; the same as Harmonia's
placement agent. The learner is :mod:`hss_gym.agents.c51`.

Policies: ``sibyl_paper`` is :class:`Sibyl` as described above. ``sibyl``, the reference, is
:func:`sibyl`: the same agent whose placements never evict on the critical path, with the
:class:`~hss_gym.agents.cleaner.Cleaner` keeping room on the fast device in idle time, one
exploratory choice per sequential run, and pages first touched by a read left on the home device
(as the reference Harmonia; docs/learning-diagnostics.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.c51 import C51Config
from hss_gym.agents.harmonia import REFERENCE, PlacementAgent

#: As Harmonia's placement agent (see PLACEMENT_DEFAULTS), with lr 3e-3 instead of Sibyl's 1e-4:
#: at 1e-4 the loss hardly fell within an episode, and at 1e-3 the agent stayed well behind the
#: best fixed policy on learn-phase and was slower on the synthetic workloads (measured in
#: docs/learning-diagnostics.md).
SIBYL_DEFAULTS = C51Config(hidden=(20, 30), gamma=0.9, lr=3e-3, epsilon=0.001, batch_size=128,
                           buffer_size=1000, v_min=0.0, v_max=10.0, explore_steps=1000, train_every=8)


class Sibyl(PlacementAgent):
    """Sibyl's placement agent; see the module docstring."""

    name = "sibyl"
    defaults = SIBYL_DEFAULTS
    env_options: ClassVar[dict[str, Any]] = {"features": "sibyl", "migration": False}

    def __init__(self, config: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True, eviction_penalty: float = 0.001, **options: Any) -> None:
        super().__init__(config, seed, train, **options)  # PlacementAgent's options
        if eviction_penalty < 0:
            raise ValueError(f"eviction_penalty must be >= 0, got {eviction_penalty}")
        self.eviction_penalty = eviction_penalty

    def _learn(self, next_obs: np.ndarray, reward: float, step: int, latency: float, evicted: int) -> None:
        if evicted:
            reward = max(0.0, reward - self.eviction_penalty * evicted)
        super()._learn(next_obs, reward, step, latency, evicted)


def sibyl(seed: int = 0, **kwargs: Any) -> Sibyl:
    """The reference Sibyl (policy ``sibyl``): placements of writes that never evict on the critical
    path and a cleaner keeping room on the fast device in idle time (:data:`hss_gym.agents.harmonia.REFERENCE`;
    docs/learning-diagnostics.md). ``sibyl_paper`` is the agent as published."""
    return Sibyl(seed=seed, **{**REFERENCE, **kwargs})


def sibyl_paper(seed: int = 0, **kwargs: Any) -> Sibyl:
    """Sibyl as published: LRU eviction on the critical path."""
    s = Sibyl(seed=seed, **kwargs)
    s.name = "sibyl_paper"
    return s
