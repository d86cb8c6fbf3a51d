"""Cost of one environment step, against a no-op PettingZoo ParallelEnv with the same spaces.

Requirement: one ``step()`` of ``hss/Harmonia-v0`` on the sim backend, both
agents acting with Table-1 observations, costs <= 3x a no-op ParallelEnv step that returns the
same dicts (fresh observation arrays, rewards, terminations, truncations, infos with an action
mask), measured in the same run. Also reported: steps/s of the Gymnasium envs and of Gymnasium's
SyncVectorEnv / AsyncVectorEnv (4 copies of hss/Placement-v0).

Usage: python benchmarks/perf/bench_env_step.py [--steps 100000]; exits 1 if the ratio fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

import hss_gym

AGENTS = ["placement", "migration"]


class NoopParallelEnv(ParallelEnv):
    """Returns well-formed, fresh data and does nothing else."""

    metadata = {"name": "noop"}

    def __init__(self, dim: int, n: int) -> None:
        self.possible_agents = list(AGENTS)
        self._obs = spaces.Box(0, 1, (dim,), np.float32)
        self._act = spaces.Discrete(n)
        self._mask = np.ones(n, np.int8)
        self.dim = dim

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def reset(self, seed=None, options=None):
        self.agents = list(AGENTS)
        return {a: np.zeros(self.dim, np.float32) for a in AGENTS}, {a: {} for a in AGENTS}

    def step(self, actions):
        obs = {a: np.zeros(self.dim, np.float32) for a in AGENTS}
        infos = {a: {"acting": True, "action_mask": self._mask.copy()} for a in AGENTS}
        return obs, {a: 0.0 for a in AGENTS}, {a: False for a in AGENTS}, {a: False for a in AGENTS}, infos


def time_steps(env, steps: int, actions) -> float:
    """Seconds per step, looping over episodes; reset time excluded."""
    total, done = 0.0, 0
    while done < steps:
        env.reset(seed=0)
        t0 = time.perf_counter()
        k = 0
        while env.agents and done + k < steps:
            env.step(actions)
            k += 1
        total += time.perf_counter() - t0
        done += k
    return total / steps


def gym_steps_per_s(make, steps: int) -> float:
    env = make()
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if np.any(term) or np.any(trunc):
            env.reset()
    return steps / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=args.steps)
    noop = NoopParallelEnv(env.observation_space("placement").shape[0], env.action_space("placement").n)
    acts = {"placement": 0, "migration": 1}
    ours, base = [], []
    for _ in range(args.reps):  # interleaved, so both see the same machine load
        base.append(time_steps(noop, args.steps, acts))
        ours.append(time_steps(env, args.steps, acts))
    t_base, t_ours = statistics.median(base), statistics.median(ours)
    ratio = t_ours / t_base
    print(f"no-op ParallelEnv step        {t_base * 1e6:7.2f} us")
    print(f"hss/Harmonia-v0 step (sim)    {t_ours * 1e6:7.2f} us   ({1 / t_ours:,.0f} steps/s)")
    print(f"ratio {ratio:.2f}x (requirement <= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")

    n = min(args.steps, 20_000)
    for env_id in ("hss/Placement-v0", "hss/Migration-v0"):
        sps = gym_steps_per_s(lambda: gym.make(env_id, workload="ycsb-b", n_requests=n), n)
        print(f"{env_id:28s} {sps:10,.0f} steps/s")
    mk = lambda: gym.make("hss/Placement-v0", workload="ycsb-b", n_requests=n)  # noqa: E731
    for name, cls in (("SyncVectorEnv x4", gym.vector.SyncVectorEnv), ("AsyncVectorEnv x4", gym.vector.AsyncVectorEnv)):
        venv = cls([mk] * 4)
        sps = gym_steps_per_s(lambda: venv, n // 4) * 4
        venv.close()
        print(f"{name:28s} {sps:10,.0f} env steps/s")
    return 0 if ratio <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
