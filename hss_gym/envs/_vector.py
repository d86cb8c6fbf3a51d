"""What the native vector envs share (:mod:`hss_gym.envs.hss.vector`, :mod:`hss_gym.envs.lqoco.vector`):
their arguments checked, and each env's seed and the ``reset_mask`` option derived, as Gymnasium's
SyncVectorEnv does, so that a native vector env can give exactly what SyncVectorEnv gives."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def check_num_envs(num_envs: Any) -> int:
    """``num_envs`` as an int >= 1; a clear error otherwise."""
    if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    return int(num_envs)


def env_seeds(seed: "int | list[int | None] | None", n: int) -> list[int | None]:
    """Each env's seed, as SyncVectorEnv derives them."""
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"If seeds are passed as a list the length must match num_envs={n} but got "
                         f"length={len(seeds)}.")
    return seeds


def reset_mask(options: dict[str, Any] | None, n: int) -> tuple[np.ndarray | None, dict[str, Any] | None]:
    """``options["reset_mask"]`` checked as SyncVectorEnv checks it, and the options without it."""
    if options is None or "reset_mask" not in options:
        return None, options
    options = dict(options)
    mask = options.pop("reset_mask")
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (n,):
        raise ValueError(f"`options['reset_mask']` must have shape `({n},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not mask.any():
        raise ValueError(f"`options['reset_mask']` must contain a boolean array with at least one True value, "
                         f"got reset_mask={mask}")
    return mask, options


def reset_envs(seed: "int | list[int | None] | None", options: dict[str, Any] | None, n: int,
               reset_env: Callable[[int, "int | None", "dict[str, Any] | None"], None]) -> np.ndarray:
    """Reset the envs ``options["reset_mask"]`` names (all of the ``n`` without one), each with its
    seed, through ``reset_env(k, seed, options)``; returns the mask."""
    seeds = env_seeds(seed, n)
    mask, options = reset_mask(options, n)
    if mask is None:
        mask = np.ones(n, np.bool_)
    for k in np.flatnonzero(mask):
        reset_env(int(k), seeds[k], options)
    return mask
