"""Helpers the tests share for driving Gymnasium envs."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def random_observations(env: gym.Env, n: int) -> list[Any]:
    """Observations of an episode's first ``n`` steps (reset with seed 0), acting at random."""
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    out = []
    for _ in range(n):
        out.append(obs)
        obs, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc:
            break
    return out
