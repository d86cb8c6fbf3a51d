"""The native vector env of ``hss/LQoCo-v0``: N L-QoCo envs stepped in one C call, over shared
NumPy arrays.

:class:`LQoCoVectorEnv` is what ``gym.make_vec("hss/LQoCo-v0", num_envs=N,
vectorization_mode="vector_entry_point", ...)`` returns (also without ``vectorization_mode``: a
registered ``vector_entry_point`` is the default).

Why: one L-QoCo period is under 2 us of C (the simulator, ``backends/lqoco/lqoco_sim.c``), and a
Python step around it took several times that, so SyncVectorEnv, which calls each env's Python
``step`` in turn, cannot go faster than the single env. The env's per-period logic runs in C
(``backends/lqoco/lqoco_env.c``); here one call steps every env with it and writes the
observations, rewards, episode ends and infos into arrays shared with C.

Semantics, as SyncVectorEnv's over the same envs (tested bit for bit, across autoresets):

* Gymnasium's next-step autoreset (``metadata["autoreset_mode"]``): the step after an env's
  episode ended resets it (its action is ignored; reward 0, not terminated or truncated);
* ``reset(seed=s)`` resets env ``i`` with seed ``s + i``; a list gives each env its seed; None
  leaves the seeding to each env; ``options`` go to every env (``options["reset_mask"]`` resets
  only some, as SyncVectorEnv does);
* an episode start is the single env's own Python ``reset()``, and its steps are the single env's
  C steps (``_lqoco.Env``): the same episodes;
* infos: the single env's numbers, one array per key with its ``"_key"`` mask, as SyncVectorEnv
  gives them: ``t``, ``W``, ``P``, ``B_use``, ``btlbw_mbps``, ``rate_mbps``, ``nominal_mbps`` and
  ``state`` at every step and reset, and the period's measurements (``admitted_mbps``,
  ``flush_mbps``, ``flushed_mbps``, ``bypassed_mbps``, ``throughput_mbps``, ``full_s``, ``gc_s``,
  ``throttled_mb``) at every step, masked off (and 0) for the envs the step reset, absent when it
  reset them all. Not the strings ``levels``, ``category`` and ``workload``: ``state`` gives the
  first two (:func:`hss_gym.envs.lqoco.env.decode_state`, :func:`~hss_gym.envs.lqoco.env.category`).

The arrays returned are the shared ones, rewritten by the next step or reset: copy what you keep
(``copy=True`` returns copies, as SyncVectorEnv does by default). No ``render_mode``, and the five
discrete actions only (``step_rate`` is the single env's). The sub-envs (``envs``) read their
episode from the C env, so their ``metrics()``, ``history()`` and ``phase_marks()`` are those of
the episode being stepped; do not step them (nor copy them: a copy replays what the env itself
was called with, and refuses when that is not the episode).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hss_gym.backends import _lqoco
from hss_gym.envs._vector import check_num_envs, reset_envs
from hss_gym.envs.lqoco.env import ACTION_NAMES, RESET_INFO, STEP_INFO, LQoCoEnv


def _check_actions(actions: Any, n: int) -> np.ndarray:
    """``actions`` as an integer array of n actions in 0..4; a clear error otherwise."""
    a = np.asarray(actions)
    if a.shape != (n,) or a.dtype.kind not in "iu":
        raise ValueError(f"actions must be an integer array of shape ({n},) (one action per env), got "
                         f"{'dtype ' + str(a.dtype) if a.shape == (n,) else 'shape ' + str(a.shape)}")
    bad = (a < 0) | (a >= len(ACTION_NAMES))
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"actions[{k}] = {a[k]} is not an action in 0..{len(ACTION_NAMES) - 1} "
                         f"({', '.join(ACTION_NAMES)})")
    return a


class LQoCoVectorEnv(VectorEnv):
    """``hss/LQoCo-v0`` x ``num_envs``, stepped in C (module docstring). Keywords: those of
    ``hss/LQoCo-v0``, plus ``copy`` (return copies of the shared arrays, default False)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, *, copy: bool = False, **kwargs: Any) -> None:
        self.num_envs = n = check_num_envs(num_envs)
        if kwargs.get("render_mode") is not None:
            raise ValueError("the L-QoCo vector env does not render; use vectorization_mode='sync' with render_mode")
        self.envs = [LQoCoEnv(**kwargs) for _ in range(n)]
        first = self.envs[0]
        self.copy = bool(copy)
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        raw = first.obs_kind == "raw"
        self._act = np.zeros(n, np.int64)
        self._skip = np.zeros(n, np.bool_)
        self._obs = np.zeros((n, 3), np.float32) if raw else np.zeros(n, np.int64)
        self._rew = np.zeros(n, np.float64)
        self._term = np.zeros(n, np.bool_)  # never set: an L-QoCo episode is truncated, never terminated
        self._trunc = np.zeros(n, np.bool_)
        t, state = np.zeros(n, np.int64), np.zeros(n, np.int64)
        info = np.zeros((len(RESET_INFO) + len(STEP_INFO), n), np.float64)
        self._core = _lqoco.VecEnv(n, raw, {"act": self._act, "skip": self._skip, "obs": self._obs, "rew": self._rew,
                                            "trunc": self._trunc, "t": t, "state": state, "info": info})
        every, self._stepped = np.ones(n, np.bool_), np.zeros(n, np.bool_)
        # the infos, in the single env's order, each with its mask (shared arrays)
        self._reset_infos: dict[str, np.ndarray] = {"t": t, "_t": every}
        for i, key in enumerate(RESET_INFO):
            self._reset_infos.update({key: info[i], f"_{key}": every})
        self._reset_infos.update(state=state, _state=every)
        self._step_infos: dict[str, np.ndarray] = {}
        for i, key in enumerate(STEP_INFO):
            self._step_infos.update({key: info[len(RESET_INFO) + i], f"_{key}": self._stepped})
        self._autoreset = np.zeros(n, np.bool_)
        self._started = False

    def _reset_env(self, k: int, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        env = self.envs[k]
        env.reset(seed=seed, options=options)
        self._core.load(k, env._core)

    def reset(self, *, seed: "int | list[int | None] | None" = None, options: dict[str, Any] | None = None):
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            super().reset(seed=int(seed))
        mask = reset_envs(seed, options, self.num_envs, self._reset_env)
        self._autoreset[mask] = False
        self._started = True
        infos = {key: mask.copy() if key[0] == "_" else np.where(mask, v, 0) for key, v in self._reset_infos.items()}
        return (self._obs.copy() if self.copy else self._obs), infos

    def step(self, actions: Any):
        if not self._started:
            raise RuntimeError("LQoCoVectorEnv: step() called before reset(); call reset() first")
        if self.closed:
            raise RuntimeError("LQoCoVectorEnv: step() called after close()")
        self._act[:] = _check_actions(actions, self.num_envs)
        auto = self._autoreset
        self._skip[:] = auto
        self._core.step()
        infos = dict(self._reset_infos)
        if auto.any():
            for k in np.flatnonzero(auto):
                self._reset_env(int(k))
        if not auto.all():
            np.logical_not(auto, out=self._stepped)
            infos.update(self._step_infos)
        auto[:] = self._trunc
        if self.copy:
            return (self._obs.copy(), self._rew.copy(), self._term.copy(), self._trunc.copy(),
                    {key: v.copy() for key, v in infos.items()})
        return self._obs, self._rew, self._term, self._trunc, infos

    def close_extras(self, **kwargs: Any) -> None:
        for e in getattr(self, "envs", ()):  # none when __init__ refused its arguments (__del__ closes it)
            e.close()
