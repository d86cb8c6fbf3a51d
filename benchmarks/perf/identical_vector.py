"""Check that a speed change changed no result: the native vector envs' steps, bit for bit.

Records what ``hss/Placement-v0`` and ``hss/Migration-v0`` (8 envs each, on ycsb-a, ycsb-b and
ycsb-f) and the two-agent ``ParallelVectorEnv`` (4 envs) return over 2,500 steps of seeded random
actions, autoresets included: the observations, rewards, episode ends, the end-of-episode metrics,
and each env's page-table memory (``memory_bytes``). Run ``record`` before the change (e.g. on
main) and ``check`` after; ``check`` names every array that differs.

    python benchmarks/perf/identical_vector.py record before.npz
    python benchmarks/perf/identical_vector.py check before.npz
"""

from __future__ import annotations

import argparse
import sys
import warnings

import gymnasium as gym
import numpy as np

import hss_gym  # noqa: F401  (registers the ids)
from hss_gym.envs.hss.vector import ParallelVectorEnv

CASES = [("hss/Placement-v0", "ycsb-b", 3000), ("hss/Migration-v0", "ycsb-b", 3000),
         ("hss/Placement-v0", "ycsb-a", 2000), ("hss/Placement-v0", "ycsb-f", 2000)]
STEPS = 2500


def single(env_id: str, workload: str, n_requests: int) -> dict[str, np.ndarray]:
    n = 8
    env = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point", workload=workload,
                       n_requests=n_requests)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    rows: dict[str, list] = {"obs": [], "reward": [], "ended": [], "metrics": []}
    for i in range(STEPS):
        actions = rng.integers(0, env.single_action_space.n, n) if i % 3 else np.zeros(n, np.int64)
        obs, reward, term, trunc, infos = env.step(actions)
        rows["obs"].append(obs.copy())
        rows["reward"].append(reward.copy())
        rows["ended"].append(term | trunc)
        if "metrics" in infos:  # Gymnasium's layout: one array per metric, "_metrics" the envs that ended
            m, ended = infos["metrics"], infos["_metrics"]
            rows["metrics"] += [np.asarray(m[key], np.float64)[ended] for key in sorted(m)
                                if np.asarray(m[key]).dtype.kind in "biuf"]
    rows["memory"] = [[e.env._hss.memory_bytes() for e in env.unwrapped.envs]]
    env.close()
    out = {key: np.asarray(v) for key, v in rows.items() if key != "metrics"}
    out["metrics"] = np.concatenate(rows["metrics"]) if rows["metrics"] else np.zeros(0)
    return out


def pair() -> dict[str, np.ndarray]:
    n = 4
    env = ParallelVectorEnv(num_envs=n, workload="ycsb-b", n_requests=2000)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    out: dict[str, list] = {}
    for _ in range(STEPS):
        actions = {agent: rng.integers(0, 2, n) for agent in env.possible_agents}
        for part, d in zip(("obs", "reward", "term", "trunc"), env.step(actions)[:4]):
            for agent, x in d.items():
                out.setdefault(f"{part}.{agent}", []).append(np.array(x))
    env.close()
    return {key: np.asarray(v) for key, v in out.items()}


def record() -> dict[str, np.ndarray]:
    warnings.simplefilter("ignore", UserWarning)
    out = {}
    for env_id, workload, n_requests in CASES:
        for key, a in single(env_id, workload, n_requests).items():
            out[f"{env_id}/{workload}/{key}"] = a
    for key, a in pair().items():
        out[f"pair/{key}"] = a
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("record", "check"))
    p.add_argument("path")
    args = p.parse_args()
    now = record()
    if args.mode == "record":
        np.savez_compressed(args.path, **now)
        print(f"recorded {len(now)} arrays to {args.path}")
        return
    before = np.load(args.path)
    bad = sorted(set(before.files) ^ set(now))
    bad += [k for k in before.files if k in now and not np.array_equal(before[k], now[k], equal_nan=True)]
    for k in bad:
        print(f"differs: {k}")
    print(f"{len(now) - len(bad)} of {len(now)} arrays identical")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
