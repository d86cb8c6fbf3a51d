"""Versioned entry point of the RLAlloc environment (``hss/RLAlloc-v0``), PettingZoo style:

>>> from hss_gym import rlalloc_v0
>>> env = rlalloc_v0.env(n_streams=8)      # same as gymnasium.make("hss/RLAlloc-v0", ...) unwrapped

A new version (``rlalloc_v1``) will be added, not this one changed, when the dynamics change.
"""
from __future__ import annotations

from typing import Any

from hss_gym.envs.rlalloc import RLAllocEnv

__all__ = ["RLAllocEnv", "env"]


def env(**kwargs: Any) -> RLAllocEnv:
    """A new :class:`~hss_gym.envs.rlalloc.RLAllocEnv`; see its module docstring for the options."""
    return RLAllocEnv(**kwargs)
