"""The policy base class of ``hss/LQoCo-v0`` and its episode loop.

A :class:`ControlPolicy` follows the protocol every problem shares
(:class:`hss_gym.agents.base.BasePolicy`), on one observation, one float reward and one info dict,
and is driven by :func:`run_episode`:

>>> obs, info = env.reset(seed=seed); policy.reset(env, seed)
>>> while not done:
...     action = policy.act(obs, info)       # int: a Discrete(5) action; float: a rate in MB/s
...     obs, reward, term, trunc, info = env.step(action)  # or env.unwrapped.step_rate(rate)
...     if policy.learns:
...         policy.observe(obs, reward, info)    # learners update here

* ``act`` returns an ``int`` (one of the env's five adjustments) or a ``float`` (the next admitted
  bandwidth I_{t+1} in MB/s, ``math.inf`` for no limit): rule-based controllers (CoTo's eq. 10,
  L-QoCo's fine tuning) need rates the five discrete actions do not reach.
* ``env_options`` are environment keyword arguments the policy needs (``bypass``: ``bypass_us``).
* ``learns``: the policy learns online, so its result depends on it (the seed matters twice);
  :func:`run_episode` calls ``observe`` only then.
"""

from __future__ import annotations

import difflib
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import gymnasium as gym

from hss_gym.agents.base import BasePolicy
from hss_gym.agents.models import ProblemModel, model_format


class ControlPolicy(BasePolicy):
    """Base class; see the module docstring."""

    env_options: ClassVar[dict[str, Any]] = {}

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """A new episode starts (after ``env.reset``); the policy keeps the unwrapped env."""
        self.env = env.unwrapped

    def act(self, observations: Any, infos: dict[str, Any]) -> "int | float":
        raise NotImplementedError


@dataclass
class EpisodeOutcome:
    """One episode: the env's metrics, steps, and the policy's mean decision time."""

    policy: str
    metrics: dict[str, float]
    steps: int
    decision_us: float
    wall_s: float
    history: dict[str, list[float]] = field(default_factory=dict)


def run_episode(policy: ControlPolicy, env: gym.Env, seed: int = 0,
                keep_history: bool = False) -> EpisodeOutcome:
    """Run ``policy`` on ``env`` (reset with ``seed``) to the end of the episode."""
    start = time.perf_counter()
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed)
    raw = env.unwrapped
    act, observe, learns = policy.act, policy.observe, policy.learns
    decide = 0.0
    n, done = 0, False
    clock = time.perf_counter
    while not done:
        t0 = clock()
        a = act(obs, info)
        decide += clock() - t0
        if isinstance(a, float):
            obs, r, term, trunc, info = raw.step_rate(a)
        else:
            obs, r, term, trunc, info = env.step(a)
        if learns:
            observe(obs, r, info)
        done = term or trunc
        n += 1
    return EpisodeOutcome(policy.name, raw.metrics(), n, decide / max(n, 1) * 1e6,
                          time.perf_counter() - start, raw.history() if keep_history else {})


POLICIES: dict[str, str] = {
    "no_control": "hss_gym.agents.lqoco.baselines:NoControl",
    "bypass": "hss_gym.agents.lqoco.baselines:Bypass",
    "coto": "hss_gym.agents.lqoco.baselines:CoTo",
    "lqoco": "hss_gym.agents.lqoco.qlearning:LQoCo",
    "lqoco_dk": "hss_gym.agents.lqoco.qlearning:LQoCoDK",
    "lqoco_ab": "hss_gym.agents.lqoco.qlearning:LQoCoAB",
    "lqoco_and": "hss_gym.agents.lqoco.qlearning:LQoCoAnd",
}


class ModelControl(ControlPolicy):
    """A network trained on ``hss/LQoCo-v0`` (``"sb3:PATH.zip"``, ``"torch:PATH.pt"``,
    ``"rllib:DIR"``) playing its greedy action (one of the five adjustments) every period, in NumPy
    (:class:`hss_gym.agents.models.ProblemModel`): the action ``model.predict(obs,
    deterministic=True)`` takes. ``env_options``: its card's (``observation``, ``magnitudes``, the
    state bins), applied by the problem's run; ``provenance``: the file and its sha256."""

    def __init__(self, spec: str) -> None:
        self.model = ProblemModel(spec, "hss/LQoCo-v0")
        self.name = spec  # type: ignore[misc]
        self.env_options = self.model.env_options  # type: ignore[misc]
        self.provenance = self.model.provenance

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.model.attach(self.env)

    def act(self, observations: Any, infos: dict[str, Any]) -> int:
        return self.model(observations)


def make_policy(spec: str, **kwargs: Any) -> ControlPolicy:
    """A policy by registered name or ``"module:factory"``, or a trained model of ``hss/LQoCo-v0``:
    ``"sb3:PATH.zip"``, ``"torch:PATH.pt"``, ``"rllib:DIR"`` (:class:`ModelControl`)."""
    if model_format(spec):
        if kwargs:
            raise ValueError(f"policy {spec!r}: a trained model takes no options, got {sorted(kwargs)}")
        return ModelControl(spec)
    if ":" not in spec and spec not in POLICIES:
        near = difflib.get_close_matches(spec, POLICIES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown L-QoCo policy {spec!r}{hint}; valid: {', '.join(POLICIES)}")
    module, _, attr = POLICIES.get(spec, spec).partition(":")
    factory: Callable[..., ControlPolicy] = getattr(importlib.import_module(module), attr)
    policy = factory(**kwargs)
    if not isinstance(policy, ControlPolicy):
        raise TypeError(f"{spec!r} made a {type(policy).__name__}, not a ControlPolicy")
    return policy

