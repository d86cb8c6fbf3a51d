"""Benchmark: Harmonia acting and learning online, end to end, on the simulated backend.

Requirements (issue 5): >= 50,000 requests/s end to end (env + both agents, training on);
inference <= 2 µs per decision; both agents' memory <= 1 MiB (paper: 206 KiB).

Measured in one run: the end-to-end rate of Harmonia on ycsb-b (perf_opt), with the same episode's
env-only rate (a policy that always answers 0) for scale; one decision of the C inference network
(through ``C51Agent.act``, epsilon-greedy included) and, for comparison, a PyTorch forward pass of
the same network; one training minibatch with the C kernel and with the PyTorch reference
(``trainer="torch"``); and the agents' memory.

    python benchmarks/perf/bench_agents.py [--requests 100000]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch

from hss_gym.agents import make_env, make_policy, run_episode
from hss_gym.agents.c51 import C51Agent
from hss_gym.agents.harmonia import PLACEMENT_DEFAULTS


def per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--workload", default="ycsb-b")
    args = ap.parse_args()

    base = make_policy("hss_gym.agents.heuristics:FastOnly")
    env = make_env(base, "perf_opt", args.workload, n_requests=args.requests, fast_fraction=0.1)
    run_episode(base, env, seed=0)  # warm the trace cache
    env_only = run_episode(base, env, seed=0)

    h = make_policy("harmonia")
    env = make_env(h, "perf_opt", args.workload, n_requests=args.requests)
    res = run_episode(h, env, seed=0)
    trains = {k: len(v) for k, v in h.loss_curves().items()}

    agent = C51Agent(7, 2, PLACEMENT_DEFAULTS, seed=0)
    obs = np.random.default_rng(0).random(7, dtype=np.float32)
    act_us = per_call_us(lambda: agent.act(obs), 200_000)
    raw_us = per_call_us(lambda: agent.infer.act(obs), 200_000)
    t_obs = torch.from_numpy(obs)[None]

    def torch_act() -> int:
        with torch.inference_mode():
            return int((torch.softmax(agent.q(t_obs), 2) * agent.z).sum(2).argmax())

    torch_us = per_call_us(torch_act, 5_000)
    ref = C51Agent(7, 2, replace(PLACEMENT_DEFAULTS, trainer="torch"), seed=0)
    rng = np.random.default_rng(1)
    for i in range(1000):
        o, n = rng.random(7, dtype=np.float32), rng.random(7, dtype=np.float32)
        agent.remember(o, i % 2, 0.5, n)
        ref.remember(o, i % 2, 0.5, n)
    train_us = per_call_us(agent.train_step, 2000)
    ref_us = per_call_us(ref.train_step, 300)

    print(f"workload {args.workload}, perf_opt, {res.steps:,} requests")
    print(f"env only (always device 0)             {env_only.steps_per_s:>12,.0f} requests/s")
    print(f"Harmonia end to end, training on       {res.steps_per_s:>12,.0f} requests/s "
          f"(requirement >= 50,000: {'PASS' if res.steps_per_s >= 50_000 else 'FAIL'})")
    print(f"  gradient steps: placement {trains['placement']}, migration {trains['migration']}")
    print(f"inference per decision (C51Agent.act)  {act_us:>12.2f} us "
          f"(requirement <= 2 us: {'PASS' if act_us <= 2 else 'FAIL'}); C network alone {raw_us:.2f} us")
    print(f"  same network in PyTorch              {torch_us:>12.2f} us ({torch_us / act_us:.0f}x)")
    print(f"one training minibatch (128), C kernel {train_us:>12.1f} us; PyTorch reference {ref_us:.1f} us "
          f"({ref_us / train_us:.1f}x)")
    mem = h.memory_bytes()
    print(f"agents' memory                         {mem / 1024:>12.1f} KiB "
          f"(requirement <= 1024 KiB: {'PASS' if mem <= 1 << 20 else 'FAIL'}; paper 206 KiB)")


if __name__ == "__main__":
    main()
