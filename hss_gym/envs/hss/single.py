"""Single-agent Gymnasium environments built on the two-agent env.

``SingleAgentEnv(parallel_env, agent, other_policy)`` exposes one agent of
:class:`~hss_gym.envs.hss.env.HSSParallelEnv` as a ``gymnasium.Env``, the other agent following a
fixed policy. It advances through requests on which the learner has no decision (the other agent
still acts, the HSS still serves them) so **every step is a decision**; rewards earned on skipped
requests (the migration agent's delayed reward) are added to the next returned reward.

Registered at ``import hss_gym``:

* ``hss/Placement-v0`` — Sibyl's problem (ISCA'22): the learner places each write and first touch;
  when the fast device is full its LRU page is evicted to the next device on the critical path; no
  migration. Observation: Sibyl's six features (req_size, req_type, acc_intr, acc_freq, fast_cap,
  curr_dev) as ``Box(0, 1, (6,))``. Reward: ``L_ref / latency`` of the placed request
  (``reward="latency"``: minus the latencies since the previous decision, over ``L_ref``).
* ``hss/Migration-v0`` — the learner migrates the scanner's candidate pages; placement follows a
  fixed policy (``placement_policy``: ``"fast"`` = fast device until full, then LRU eviction
  (default), or ``"slow"``). Observation: Harmonia's features of the candidate. Reward: the delayed
  migration reward (eq. 3); ``info["credit"]`` names the decision steps it pays for.

Both accept every :class:`HSSParallelEnv` keyword (``config``, ``workload``, ``n_requests``,
``trace_window``, ``reward``, ...). An unseeded ``reset()`` draws the episode's seed from the env's
``np_random`` (a new episode; the same sequence after the same ``reset(seed=s)``).

With the built-in other policies (:class:`fixed_device`, :func:`stay`), whose action is the same
on every step, a step runs on the two-agent env's ``fast_step`` (the episode's C stepper) without
building the two-agent dicts of the requests it passes; any other policy is asked at every step
through the two-agent ``step``. Both paths give the same results (tested).
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from hss_gym.envs._contract import check_discrete_action, not_reset
from hss_gym.envs.hss.env import AGENTS, HSSParallelEnv
from hss_gym.render import RENDER_MODES

Policy = Callable[[np.ndarray, dict[str, Any]], int]


class fixed_device:
    """A policy that always answers ``device`` (e.g. 0 = fast until full, then LRU eviction).
    A class rather than a closure so that the envs using it can be pickled."""

    def __init__(self, device: int) -> None:
        self.device = device

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        return self.device

    def __repr__(self) -> str:
        return f"fixed_device({self.device})"


def stay(obs: np.ndarray, info: dict[str, Any]) -> int:
    """Migration policy that never moves anything (answers the candidate's current device)."""
    page = info.get("page", -1)
    return int(info["current_device"]) if page >= 0 else 0


class SingleAgentEnv(gym.Env):
    """One agent of the parallel env as a Gymnasium env; see the module docstring.

    ``copy.deepcopy`` and ``pickle`` work when ``other_policy`` can be copied/pickled (the
    built-in ones can): the wrapped env is copied by replay."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": HSSParallelEnv.metadata["render_fps"]}

    def __init__(self, parallel_env: HSSParallelEnv, agent: str, other_policy: Policy) -> None:
        if agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
        self.env, self.agent = parallel_env, agent
        self.other = AGENTS[1 - AGENTS.index(agent)]
        self.other_policy = other_policy
        self.observation_space = parallel_env.observation_space(agent)
        self.action_space = parallel_env.action_space(agent)
        self.render_mode = parallel_env.render_mode
        self._obs: dict[str, np.ndarray] | None = None
        self._const = self._constant_other()

    def _constant_other(self) -> int | None:
        """The other agent's action when it is the same on every step (a :class:`fixed_device`,
        or :func:`stay` for the migration agent, which moves nothing: -1), else None. Then
        :meth:`step` runs on the two-agent env's ``fast_step``, without its dicts; the results are
        those of the general path, which asks the other policy at every step."""
        n = self.action_space.n
        if isinstance(self.other_policy, fixed_device) and type(self.other_policy.device) is int \
                and 0 <= self.other_policy.device < n:
            return self.other_policy.device
        return -1 if self.other == "migration" and self.other_policy is stay else None

    def _other_action(self) -> int:
        info = dict(self._infos[self.other])
        if self.other == "migration" and info["page"] >= 0:
            info["current_device"] = self.env._hss.page(info["page"])["device"]
        return self.other_policy(self._obs[self.other], info)

    def _advance(self, reward: float) -> tuple[float, bool]:
        """Step until the learner has a decision or the episode ends; returns reward, done."""
        while not self._infos[self.agent]["acting"]:
            if not self.env.agents:
                return reward, True
            acts = {self.agent: 0, self.other: self._other_action()}
            self._obs, rew, _, trunc, self._infos = self.env.step(acts)
            reward += rew[self.agent]
            self._credit += self._infos[self.agent].get("credit", [])
            if trunc[self.agent]:
                return reward, True
        return reward, False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """``reset(seed=s)`` plays the two-agent env's episode of seed ``s``; an unseeded reset
        draws the next episode's seed from this env's ``np_random`` (seeded by the last seeded
        reset, from entropy before any), as Gymnasium's convention has it: a new episode."""
        super().reset(seed=seed)
        episode = seed if seed is not None else int(self.np_random.integers(2**63))
        self._obs, self._infos = self.env.reset(seed=episode, options=options)
        self._credit: list[int] = []
        _, done = self._advance(0.0)
        if done:
            raise ValueError("the trace contains no decision for the learner")
        return self._obs[self.agent], self._info()

    def _info(self) -> dict[str, Any]:
        info = dict(self._infos[self.agent])
        if self.agent == "migration":
            info["credit"] = self._credit
        return info

    def step(self, action: Any):
        if self._obs is None:
            raise not_reset(f"hss/{self.agent.capitalize()}-v0")
        if not self.env.agents:
            raise self.env.not_running(f"hss/{self.agent.capitalize()}-v0")
        if self._const is not None:
            return self._step_fast(action, self._const)
        self._credit = []
        acts = {self.agent: action, self.other: self._other_action()}
        self._obs, rew, _, trunc, self._infos = self.env.step(acts)
        self._credit += self._infos[self.agent].get("credit", [])
        reward, done = rew[self.agent], trunc[self.agent]
        if not done:
            reward, done = self._advance(reward)
        return self._obs[self.agent], float(reward), False, bool(done), self._info()

    def _step_fast(self, action: Any, other: int):
        """:meth:`step` with the other agent's constant action ``other``, on ``fast_step``."""
        env, n = self.env, self.action_space.n
        if type(action) is not int or not 0 <= action < n:
            action = check_discrete_action(action, n, f"action for {self.agent!r}")
        step, placing = env.fast_step, self.agent == "placement"
        out = step(action, other) if placing else step(other, action)
        reward, credit = out[2 if placing else 3], list(out[6])
        # on to the learner's next decision: the placement agent acts where the request needs a
        # placement (out[10]), the migration agent where there is a candidate (out[11] >= 0)
        while not out[9] and not (out[10] if placing else out[11] >= 0):
            out = step(0, other) if placing else step(other, -1)
            reward += out[2 if placing else 3]
            credit += out[6]
        done = out[9]
        mask = env._mask.copy()
        if placing:
            info = {"acting": out[10], "action_mask": mask, "step": env.step_index, "latency_us": out[4],
                    "evicted": out[5]}
        else:
            info = {"acting": out[11] >= 0, "action_mask": mask, "step": env.step_index, "credit": credit,
                    "executed": out[7], "move_delay_us": out[8], "page": out[11], "device": out[12]}
            self._credit = credit
        if done:
            info["metrics"] = env.metrics().to_dict()
        return out[0 if placing else 1], float(reward), False, bool(done), info

    def render(self) -> "str | np.ndarray | None":
        """The two-agent env's picture (``render_mode`` is passed to it: ``"ansi"`` or
        ``"rgb_array"``)."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def placement_env(**kwargs: Any) -> SingleAgentEnv:
    """``hss/Placement-v0``: Sibyl's single-agent placement problem."""
    kwargs.setdefault("features", "sibyl")
    kwargs["migration"] = False
    return SingleAgentEnv(HSSParallelEnv(**kwargs), "placement", fixed_device(0))


def migration_env(placement_policy: str = "fast", **kwargs: Any) -> SingleAgentEnv:
    """``hss/Migration-v0``: the learner migrates; placement follows ``placement_policy``."""
    policies = {"fast": 0, "slow": -1}
    if placement_policy not in policies:
        raise ValueError(f"placement_policy must be one of {sorted(policies)}, got {placement_policy!r}")
    env = HSSParallelEnv(**kwargs)
    device = policies[placement_policy] % env.cfg.n_devices
    return SingleAgentEnv(env, "migration", fixed_device(device))


# gym.make reads the entry point's metadata before building the env (render modes: e.g. it wraps
# an rgb_array env in HumanRendering for render_mode="human"); give the factories the class's.
placement_env.metadata = migration_env.metadata = SingleAgentEnv.metadata  # type: ignore[attr-defined]
