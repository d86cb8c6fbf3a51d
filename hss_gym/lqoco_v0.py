"""Versioned entry point of the L-QoCo environment, PettingZoo style: ``from hss_gym import lqoco_v0``.

* ``lqoco_v0.env(**kwargs)`` — ``gymnasium.make("hss/LQoCo-v0", **kwargs)`` (order enforcing and
  the passive env checker on), the way to get the environment;
* ``lqoco_v0.raw_env`` — the unwrapped class :class:`hss_gym.envs.lqoco.LQoCoEnv`.

The module name carries the version: a change that alters episodes becomes ``lqoco_v1``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

from hss_gym.envs.lqoco import LQoCoEnv as raw_env

__all__ = ["env", "raw_env"]


def env(**kwargs: Any) -> gymnasium.Env:
    """The registered ``hss/LQoCo-v0`` environment; keyword arguments as ``LQoCoEnv``."""
    import hss_gym  # noqa: F401  (registers the id)

    return gymnasium.make("hss/LQoCo-v0", **kwargs)
