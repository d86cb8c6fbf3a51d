"""Fixed and heuristic policies: Fast-Only, Slow-Only, Random.

* **Fast-Only** — every page on the fastest device, which is made large enough for the whole
  footprint (``fast_fraction=1``): the papers' ideal HSS and the normalisation reference.
* **Slow-Only** — every page on the slowest (home) device; no migration.
* **Random** — uniformly random placement and migration targets (seeded): the floor any learner
  must clear.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Infos, Obs, Policy, stay_action
from hss_gym.envs.parallel import HSSParallelEnv


class FastOnly(Policy):
    """Everything on device 0, sized for the whole footprint (the ideal HSS)."""

    name = "fast_only"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"fast_fraction": 1.0, "migration": False}

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
    """Uniformly random placement and migration targets, seeded by the episode seed."""

    name = "random"

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.rng = np.random.default_rng(seed)
        self.n = env.cfg.n_devices

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        a, b = self.rng.integers(self.n, size=2).tolist()
        return {"placement": a, "migration": b if infos["migration"]["acting"] else stay_action(infos)}
