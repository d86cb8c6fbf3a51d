"""Benchmark: a trained SB3 model on the leaderboard, ``make_policy("sb3:PATH.zip")``, over 100,000 requests.

Requirement: a 100,000-request run takes under 30 s on one core. Measured here, on one
thread: an SB3 PPO and a DQN ``MlpPolicy`` (64-64, SB3's defaults) saved from ``hss/Placement-v0``
with wide random weights (so their actions vary, as a trained model's do), played by
:func:`hss_gym.agents.run_episode` on ``--workload`` / ``--config`` (what a bench job does; the
episode's reset, which generates the trace, is timed); beside it the env alone (Slow-Only, with
Placement-v0's options) on the same trace, and ``model.predict(obs, deterministic=True)`` per decision on ``hss/Placement-v0`` for ``--predict``
decisions (the per-step route this replaces), extrapolated to the episode's decisions. Also
counted: the decisions of the whole episode where ``model.predict`` (one batch of every
observation) answers another action than the policy (must be 0).

    python benchmarks/perf/bench_model_policy.py [--requests 100000] [--workload ycsb-b] [--config perf_opt]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import hss_gym  # noqa: F401  (registers the envs)
from hss_gym.agents import make_env, make_policy, run_episode

LIMIT_S = 30.0


def save_model(algo: str, env: gym.Env, path: Path) -> object:
    from stable_baselines3 import DQN, PPO
    model = (PPO("MlpPolicy", env, n_steps=64, batch_size=64, device="cpu", seed=0) if algo == "ppo"
             else DQN("MlpPolicy", env, device="cpu", seed=0, learning_starts=10))
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.policy.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    model.save(path)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--workload", default="ycsb-b")
    ap.add_argument("--config", default="perf_opt")
    ap.add_argument("--predict", type=int, default=2_000, help="decisions timed with model.predict")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    n = a.requests
    with tempfile.TemporaryDirectory() as tmp:
        env = gym.make("hss/Placement-v0", config=a.config, workload=a.workload, n_requests=n)
        slow = make_policy("slow_only")
        t = time.perf_counter()
        run_episode(slow, make_env(slow, a.config, a.workload, n_requests=n, features="sibyl", migration=False), seed=0)
        env_s = time.perf_counter() - t
        print(f"{a.workload} / {a.config}, {n:,} requests, one thread")
        print(f"  env alone (slow_only, Placement-v0's options): {env_s:6.2f} s")
        for algo in ("ppo", "dqn"):
            path = Path(tmp) / f"{algo}.zip"
            model = save_model(algo, env, path)
            t = time.perf_counter()
            policy = make_policy(f"sb3:{path}")
            load_s = time.perf_counter() - t
            penv = make_env(policy, a.config, a.workload, n_requests=n)
            t = time.perf_counter()
            res = run_episode(policy, penv, seed=0)
            run_s = time.perf_counter() - t
            net = policy.greedy["placement"]
            # Placement-v0's episode with the policy's actions: every observation, and model.predict
            # timed per decision on the first --predict of them
            obs, _ = env.reset(seed=0)
            seen, actions, predict_s, done = [], [], 0.0, False
            while not done:
                if len(seen) < a.predict:
                    t = time.perf_counter()
                    model.predict(obs, deterministic=True)
                    predict_s += time.perf_counter() - t
                seen.append(obs)
                actions.append(net(obs))
                obs, _, term, trunc, _ = env.step(actions[-1])
                done = term or trunc
            decisions = len(seen)
            want = model.predict(np.stack(seen), deterministic=True)[0]  # one batch, every decision
            disagree = int((np.asarray(want) != np.asarray(actions)).sum())
            per = predict_s / min(decisions, a.predict)
            verdict = "met" if run_s < LIMIT_S else "NOT met"
            print(f"  sb3:{algo} ({type(model).__name__} MlpPolicy): load {load_s * 1e3:.1f} ms, run {run_s:6.2f} s "
                  f"({n / run_s / 1e3:.0f}k req/s; < {LIMIT_S:.0f} s: {verdict}); {decisions:,} decisions, "
                  f"{len(net.cache):,} distinct observations, actions {np.bincount(actions).tolist()}; "
                  f"mean latency {res.metrics.mean_latency_us:.1f} us")
            print(f"      model.predict per decision: {per * 1e6:.0f} us -> {per * decisions:.1f} s for the "
                  f"episode's decisions; decisions where model.predict (batched) takes another action: "
                  f"{disagree} of {decisions:,}")


if __name__ == "__main__":
    main()
