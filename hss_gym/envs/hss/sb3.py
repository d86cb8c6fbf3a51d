"""Stable-Baselines3's ``VecEnv`` over the native vector envs: SB3's algorithms on N HSS envs
stepped in one C call.

>>> from hss_gym.envs.hss.sb3 import SB3VecEnv
>>> venv = SB3VecEnv(gym.make_vec("hss/Placement-v0", num_envs=8, n_requests=20_000))
>>> model = stable_baselines3.PPO("MlpPolicy", venv)

SB3 resets an env in the step its episode ends: the observation returned is the next episode's
first, the last one is in ``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]``
says the episode was cut (always: an HSS episode ends when its trace runs out). The adapter does
that with the vector env's reset of the ended envs (``options["reset_mask"]``), so it gives what
SB3's DummyVecEnv over the single envs gives (tested). Needs the ``sb3`` extra
(``pip install 'hss-gym[sb3]'``); nothing else in hss_gym imports this module.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices
except ImportError as e:  # pragma: no cover - the sb3 extra is installed in the test environments
    raise ImportError("hss_gym.envs.hss.sb3 needs Stable-Baselines3: pip install 'hss-gym[sb3]'") from e

from hss_gym.envs.hss.vector import MigrationVectorEnv, PlacementVectorEnv


class SB3VecEnv(VecEnv):
    """SB3's ``VecEnv`` over a :class:`~hss_gym.envs.hss.vector.PlacementVectorEnv` or
    :class:`~hss_gym.envs.hss.vector.MigrationVectorEnv` (or what ``gym.make_vec`` made of one)."""

    def __init__(self, venv: "PlacementVectorEnv | MigrationVectorEnv") -> None:
        inner = getattr(venv, "unwrapped", venv)
        if not isinstance(inner, (PlacementVectorEnv, MigrationVectorEnv)):
            raise TypeError(f"SB3VecEnv wraps a native HSS vector env (gym.make_vec('hss/Placement-v0', ...)), "
                            f"got {type(venv).__name__}")
        self.venv = inner
        self._actions: np.ndarray | None = None
        super().__init__(inner.num_envs, inner.single_observation_space, inner.single_action_space)

    def reset(self) -> np.ndarray:
        opts = self._options
        if all(o == opts[0] for o in opts):
            obs, _ = self.venv.reset(seed=list(self._seeds), options=opts[0] or None)
        else:  # different options per env: one env at a time
            for k in range(self.num_envs):
                mask = np.arange(self.num_envs) == k
                obs, _ = self.venv.reset(seed=list(self._seeds), options={**opts[k], "reset_mask": mask})
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("SB3VecEnv.step_wait() without step_async(actions)")
        obs, rew, term, trunc, _ = self.venv.step(self._actions)
        self._actions = None
        # float32 rewards as DummyVecEnv's; copied before the resets below rewrite the shared arrays
        rew, dones = rew.astype(np.float32), term | trunc
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(t and not d)} for t, d in zip(trunc, term)]
        if dones.any():
            for k in np.flatnonzero(dones):
                infos[k]["terminal_observation"] = obs[k].copy()
            self.venv.reset(options={"reset_mask": dones.copy()})  # SB3 resets in the same step
        return obs.copy(), rew, dones, infos

    def close(self) -> None:
        self.venv.close()

    def _envs(self, indices: VecEnvIndices) -> list[gym.Env]:
        return [self.venv.envs[i] for i in self._get_indices(indices)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(e, attr_name) for e in self._envs(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for e in self._envs(indices):
            setattr(e, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return [getattr(e, method_name)(*method_args, **method_kwargs) for e in self._envs(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> Sequence[bool]:
        return [False for _ in self._envs(indices)]  # the sub-envs are the bare single-agent envs
