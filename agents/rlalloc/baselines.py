"""RLAlloc baselines and the problem's policy base class, shared with the DQN.

* **Static** (Yang et al., IEEE CAL 2014; the paper's "Static"): chips split equally among the
  streams at start and never changed (the env's starting allocation; the policy answers the no-op).
* **Dynamic** (Kim, "Utilitarian performance isolation in shared SSDs", HotStorage'18; the paper's
  SOTA "Dynamic"): every period each stream keeps its own equal share and, when its real-time demand
  exceeds its share of the total, borrows the least busy other chips up to ``round(n_units x demand
  share)``. A stream's chips only decide where its *writes* go (reads are served where the data
  lives), so demand = EWMA of the write transactions it completed plus its waiting requests times
  its write share of transactions.
  Borrowed chips stay in use by their owners too: the chips are *shared*, which is how Dynamic buys
  throughput with I/O conflicts.
* **Random**: a uniformly random action of the env's action space each period.
* **Demand** (not from the paper: a hand-written policy in the DQN's own action space, showing
  what chip moves alone can reach; also the teacher whose preferences label the DQN's offline
  data). It acts on the observation alone: a stream's demand share is its share of the chip time
  the requests arriving in the last ``demand_periods`` periods ask for (reads x read time + writes x
  program time, the observation's two I/O-intensity entries); each period one chip *moves* (flat
  pair action, no sharing) from the stream furthest above ``max(1, n_units x share)`` chips to the
  one furthest below, when both are off by >= ``threshold`` chips (:func:`pair_scores`). Reads
  count because in this model reads of never-written pages and of data written during the
  episode land on the stream's own chips: an earlier version that counted writes only left WEB_2
  (48k read transactions/s) on one chip and finished barely above Static.
"""

from __future__ import annotations

import time
from typing import Any, Callable, ClassVar

import numpy as np

from hss_gym.agents.base import BasePolicy, EpisodeResult
from hss_gym.agents.models import ProblemModel
from hss_gym.envs.rlalloc.env import RLAllocEnv, static_allocation


class AllocPolicy(BasePolicy):
    """A policy of ``hss/RLAlloc-v0``, on :class:`~hss_gym.agents.base.BasePolicy`'s protocol:
    ``reset`` once per episode, then every period ``act`` on the state vector and the info dict
    (an action of the env's action space) and, for a learner (``learns``), ``observe`` of the
    period's outcome (next state, reward, info); a learner keeps the state and action of its last
    ``act`` to make the transition."""

    #: environment options the policy needs (a trained model's card), over the caller's
    env_options: ClassVar[dict[str, Any]] = {}

    def reset(self, env: RLAllocEnv, seed: int | None = None) -> None:
        """Start an episode of ``env`` (the unwrapped env; allocation rules may call
        ``env.set_allocation``); ``seed`` drives the policy's own randomness."""
        self.env = env

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        raise NotImplementedError


class StaticPolicy(AllocPolicy):
    """Equal isolated chips per stream for the whole run (the env's starting allocation)."""

    name = "static"

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        return 0 if self.env.action_mode == "flat" else [self.env.n_streams, 0, 0]


class RandomPolicy(AllocPolicy):
    """A uniformly random action every period."""

    name = "random"

    def reset(self, env: RLAllocEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        env.action_space.seed(seed)

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        return self.env.action_space.sample()


class DynamicPolicy(AllocPolicy):
    """Chips by real-time demand with sharing (Kim, HotStorage'18); see the module docstring."""

    name = "dynamic"

    def __init__(self, alpha: float = 0.5) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.alpha = alpha

    def reset(self, env: RLAllocEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.own = static_allocation(env.n_streams, env.n_channels, env.chips_per_channel)
        self.demand = np.zeros(env.n_streams)

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        env = self.env
        if "read_tx" in infos:
            rd = np.asarray(infos["read_tx"], dtype=np.float64)
            wr = np.asarray(infos["write_tx"], dtype=np.float64)
            wshare = np.divide(wr, rd + wr, out=np.zeros_like(wr), where=rd + wr > 0)
            now = wr + np.asarray(infos["backlog"], dtype=np.float64) * wshare
            self.demand = self.alpha * now + (1 - self.alpha) * self.demand
        total = self.demand.sum()
        alloc = [u.copy() for u in self.own]
        if total > 0:
            busy = env.unit_busy()
            want = np.rint(env.n_units * self.demand / total).astype(int)
            for s in np.argsort(-self.demand, kind="stable"):
                extra = int(want[s]) - len(alloc[s])
                if extra <= 0:
                    continue
                others = np.setdiff1d(np.arange(env.n_units), alloc[s])
                pick = others[np.lexsort((others, busy[others]))[:extra]]
                alloc[s] = np.union1d(alloc[s], pick).astype(np.int32)
        env.set_allocation(alloc)
        return StaticPolicy.act(self, observations, infos)


def pair_scores(obs: np.ndarray, n_streams: int, n_channels: int, chips_per_channel: int,
                threshold: float = 1.0) -> np.ndarray:
    """Demand's preference for every flat action, from observations alone (shape ``(..., obs)`` ->
    ``(..., 1 + N(N-1))``): with ``gap_s = max(1, n_units x demand share_s) - chips_s`` (the demand
    share is the stream's two I/O-intensity entries of the observation, chips the sum of its
    chips-per-channel entries), the pair (dst, donor) scores ``gap_dst - gap_donor`` (-n_units
    when the donor has a single chip) and the no-op ``2 x threshold``: the argmax moves a chip
    only when the destination lacks and the donor has ``threshold`` chips more than its share."""
    n, nch, cpc = n_streams, n_channels, chips_per_channel
    x = np.asarray(obs, dtype=np.float64)
    blk = x[..., 1:1 + n * (2 + nch)].reshape(x.shape[:-1] + (n, 2 + nch))
    chips = np.rint(blk[..., 2:].sum(-1) * cpc)
    gap = np.maximum(1.0, nch * cpc * (blk[..., 0] + blk[..., 1])) - chips
    dst, donor = _PAIRS.get(n) or _pairs(n)
    out = np.empty(x.shape[:-1] + (1 + n * (n - 1),))
    out[..., 0] = 2.0 * threshold
    out[..., 1:] = np.where(chips[..., donor] > 1, gap[..., dst] - gap[..., donor], -float(nch * cpc))
    return out


_PAIRS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(dst, donor) of flat actions 1..N(N-1), in action order."""
    dst = np.repeat(np.arange(n), n - 1)
    k = np.tile(np.arange(n - 1), n)
    _PAIRS[n] = (dst, np.where(k < dst, k, k + 1))
    return _PAIRS[n]


class DemandPolicy(AllocPolicy):
    """Isolated chips in proportion to chip-time demand, one move per period; see the module docstring."""

    name = "demand"

    def __init__(self, threshold: float = 1.0) -> None:
        if not threshold > 0:
            raise ValueError(f"threshold must be > 0, got {threshold}")
        self.threshold = threshold

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        env = self.env
        if env.action_mode != "flat":
            raise ValueError("the demand policy acts with action_mode='flat'")
        if "demand_write_tx" not in infos:
            return 0
        s = pair_scores(observations, env.n_streams, env.n_channels, env.chips_per_channel, self.threshold)
        return int(np.argmax(s))


class ModelAllocPolicy(AllocPolicy):
    """A network trained on ``hss/RLAlloc-v0`` (``"sb3:PATH.zip"``, ``"torch:PATH.pt"``,
    ``"rllib:DIR"``) playing its greedy action every period, in NumPy
    (:class:`hss_gym.agents.models.ProblemModel`): the action ``model.predict(obs,
    deterministic=True)`` takes. ``env_options``: its card's (``action_mode``, ``demand_periods``),
    applied by the problem's run; ``provenance``: the file and its sha256, recorded with the run."""

    def __init__(self, spec: str) -> None:
        self.model = ProblemModel(spec, "hss/RLAlloc-v0")
        self.name = spec  # type: ignore[misc]
        self.env_options = self.model.env_options  # type: ignore[misc]
        self.provenance = self.model.provenance

    def reset(self, env: RLAllocEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.model.attach(getattr(env, "unwrapped", env))

    def act(self, observations: np.ndarray, infos: dict[str, Any]) -> Any:
        return self.model(observations)


def run_episode(policy: AllocPolicy, env: RLAllocEnv, seed: int = 0,
                on_step: Callable[[float, dict[str, Any]], None] | None = None) -> EpisodeResult:
    """Play one episode of ``env`` (an :class:`RLAllocEnv` or a Gymnasium wrapper of one, as
    ``rlalloc_v0.env()`` returns; reset with ``seed``) with ``policy``: ``policy.reset`` with the
    unwrapped env, then every period ``policy.act`` and, for a learner, ``policy.observe`` of the
    outcome. The result's
    ``metrics`` are the episode's (``info["metrics"]`` at its end), ``curves["reward"]`` the reward
    per period; ``on_step(reward, info)`` is called after every period."""
    raw = getattr(env, "unwrapped", env)
    if isinstance(policy, RLAllocEnv) or not isinstance(raw, RLAllocEnv):
        raise TypeError(f"run_episode(policy, env, seed) takes an AllocPolicy and an RLAllocEnv, got "
                        f"{type(policy).__name__} and {type(env).__name__} (hss-gym 0.5.0 put the policy first, "
                        f"as every problem's run_episode)")
    start = time.perf_counter()
    obs, info = env.reset(seed=seed)
    policy.reset(raw, seed)
    learns = policy.learns
    rewards: list[float] = []
    while True:
        obs, reward, term, trunc, info = env.step(policy.act(obs, info))
        if learns:
            policy.observe(obs, reward, info)
        rewards.append(float(reward))
        if on_step is not None:
            on_step(reward, info)
        if term or trunc:
            return EpisodeResult(policy.name, info["metrics"], len(rewards), time.perf_counter() - start,
                                 {"reward": rewards})
