"""Throughput of the native vector envs (hss_gym/envs/hss/vector.py) against Gymnasium's SyncVectorEnv.

Requirements (docs/performance.md), measured in one run:

* ``hss/Placement-v0`` at 64 envs: the native vector env >= 10x SyncVectorEnv's env-steps/s
  (the same envs, workload, seeds and fixed actions);
* >= 1 M env-steps/s on one core, fixed actions (the best batch size of ``--sizes``);
* the scaling over threads (1 .. ``--threads``), GIL released.

Also reported: ``hss/Migration-v0`` and the two-agent batch (ParallelVectorEnv) at 64 envs, and
requests per env-step (a step runs on through the requests without a decision). Every figure is
the best of ``--reps`` timed windows of ``--seconds`` each; the episodes are ``--requests`` long,
so the windows include autoresets. On a shared machine, read the ratios (measured side by side),
not the absolute speeds.

Usage: python benchmarks/perf/bench_vector_env.py [--seconds 2] [--reps 3] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import hss_gym  # noqa: F401  (registers the ids)
from hss_gym.envs.hss.vector import ParallelVectorEnv


def rate(step: Callable[[], Any], n: int, seconds: float, reps: int) -> float:
    """Best env-steps/s of `reps` windows of about `seconds` each (n env-steps per call)."""
    best = 0.0
    for _ in range(reps):
        calls, t0 = 0, time.perf_counter()
        while (dt := time.perf_counter() - t0) < seconds:
            for _ in range(16):
                step()
            calls += 16
        best = max(best, calls * n / dt)
    return best


def vector(env_id: str, n: int, mode: str, args: argparse.Namespace, **kw: Any) -> gym.vector.VectorEnv:
    env = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode, workload=args.workload,
                       n_requests=args.requests, **kw)
    env.reset(seed=0)
    return env


def requests_per_step(env_id: str, args: argparse.Namespace) -> float:
    """Requests in one episode per step of it (a step runs on to the learner's next decision)."""
    env = vector(env_id, 1, "vector_entry_point", args)
    steps, z = 1, np.zeros(1, np.int64)
    while not env.step(z)[3][0]:
        steps += 1
    env.close()
    return args.requests / steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    p.add_argument("--reps", type=int, default=3, help="windows per figure (the best is kept)")
    p.add_argument("--workload", default="ycsb-b")
    p.add_argument("--requests", type=int, default=20_000, help="requests per episode")
    p.add_argument("--sizes", default="64,256,1024", help="batch sizes for the one-core figure")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="most threads for the scaling")
    args = p.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.workload}, "
          f"{args.requests} requests per episode, fixed actions (device 0)")

    n = 64
    zeros = np.zeros(n, np.int64)
    for env_id in ("hss/Placement-v0", "hss/Migration-v0"):
        sync, native = vector(env_id, n, "sync", args), vector(env_id, n, "vector_entry_point", args)
        # interleaved, so that both see the same machine load
        r_sync = r_native = 0.0
        for _ in range(args.reps):
            r_sync = max(r_sync, rate(lambda: sync.step(zeros), n, args.seconds, 1))
            r_native = max(r_native, rate(lambda: native.step(zeros), n, args.seconds, 1))
        print(f"{env_id} x{n}: SyncVectorEnv {r_sync:,.0f} env-steps/s, native {r_native:,.0f} "
              f"({r_native / r_sync:.1f}x){'' if env_id.endswith('Migration-v0') else ' [req: >= 10x]'}; "
              f"{requests_per_step(env_id, args):.2f} requests per env-step")
        sync.close()
        native.close()

    pair = ParallelVectorEnv(n, workload=args.workload, n_requests=args.requests)
    pair.reset(seed=0)
    acts = {"placement": zeros, "migration": np.full(n, -1, np.int64)}
    print(f"two-agent batch x{n} (no moves): {rate(lambda: pair.step(acts), n, args.seconds, args.reps):,.0f} "
          f"env-steps/s")
    pair.close()

    best = 0.0
    for size in map(int, args.sizes.split(",")):
        env = vector("hss/Placement-v0", size, "vector_entry_point", args)
        z = np.zeros(size, np.int64)
        r = rate(lambda: env.step(z), size, args.seconds, args.reps)
        best = max(best, r)
        print(f"Placement-v0 native x{size}, one thread: {r:,.0f} env-steps/s")
        env.close()
    print(f"one core, best batch: {best:,.0f} env-steps/s [req: >= 1M on an idle core]")

    size = max(map(int, args.sizes.split(",")))
    env = vector("hss/Placement-v0", size, "vector_entry_point", args)
    z = np.zeros(size, np.int64)
    base = 0.0
    for t in range(1, args.threads + 1):
        env.unwrapped.threads = t
        r = rate(lambda: env.step(z), size, args.seconds, args.reps)
        base = base or r
        print(f"Placement-v0 native x{size}, {t} thread(s): {r:,.0f} env-steps/s ({r / base:.2f}x one thread)")
    env.close()


if __name__ == "__main__":
    main()
