"""Benchmark: the HSS baselines' speed, end to end, as ratios to the environment alone.

The leaderboard suites run every baseline for whole episodes, so a slow baseline makes them slow
(``hss-bench-v1``: 23 workloads x 5 tracks x 15 policies x 3 seeds x 100,000 requests). For each
policy this runs one episode (best of ``--repeat``) and one episode of the *same* environment
(the policy's environment options) driven by a null policy (placement on device 0, migration
"stay"), and prints requests/s and the ratio policy time / environment time: the policy's own
cost in units of the simulation, the number to compare between machines and versions. Times are
the process's CPU time (everything runs on one thread, as in the suite runner), which a busy
machine disturbs far less than wall time.

    python benchmarks/perf/bench_baselines.py [--requests 20000] [--workload ycsb-b]
        [--config perf_opt] [--policies rnn_hss,k_svm,...] [--repeat 1]

Learners learn online (as in the suites), from scratch in every repeat.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # as the suite runner
    os.environ.setdefault(_var, "1")

from typing import Any  # noqa: E402

from hss_gym.agents import make_env, make_policy, run_episode  # noqa: E402
from hss_gym.agents.base import Infos, Obs, Policy, stay_action  # noqa: E402
from hss_gym.envs.hss.env import HSSParallelEnv  # noqa: E402

DEFAULT = ("rnn_hss,sibyl+rnn_hss,sibyl+k_svm,k_svm,archivist,oracle,sibyl,sapm,harmonia,random,"
           "hps,cde,fast_only")


class Null(Policy):
    """Placement on device 0, migration "stay": the environment's own cost."""

    name = "null"

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": 0, "migration": stay_action(infos)}


def cpu_time(policy: Policy, env: HSSParallelEnv) -> float:
    """CPU seconds of one episode (seed 0)."""
    start = time.process_time()
    run_episode(policy, env, seed=0)
    return time.process_time() - start


def best_time(name: str, args: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    """Best CPU time of ``--repeat`` episodes of a fresh ``name`` policy, and its env options."""
    best, options = float("inf"), {}
    for _ in range(args.repeat):
        policy = make_policy(name)
        options = dict(policy.env_options)
        best = min(best, cpu_time(policy, make_env(policy, args.config, args.workload, n_requests=args.requests)))
    return best, options


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--workload", default="ycsb-b")
    ap.add_argument("--config", default="perf_opt")
    ap.add_argument("--policies", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    env_s: dict[str, float] = {}  # env options -> best null-policy time

    def env_time(options: dict[str, Any]) -> float:
        key = repr(sorted(options.items()))
        if key not in env_s:
            env = make_env(Null(), args.config, args.workload, n_requests=args.requests, **options)
            run_episode(Null(), env, seed=0)  # warm the trace cache
            env_s[key] = min(cpu_time(Null(), env) for _ in range(max(2, args.repeat)))
        return env_s[key]

    run_episode(Null(), make_env(Null(), args.config, args.workload, n_requests=args.requests))  # trace cache
    print(f"workload {args.workload}, {args.config}, {args.requests:,} requests, best of {args.repeat}")
    print(f"{'policy':<16}{'requests/s':>12}{'episode cpu s':>15}{'env alone s':>13}{'x env alone':>13}")
    for name in args.policies.split(","):
        cpu, options = best_time(name, args)
        base = env_time(options)
        print(f"{name:<16}{args.requests / cpu:>12,.0f}{cpu:>15.2f}{base:>13.2f}{cpu / base:>13.1f}",
              flush=True)


if __name__ == "__main__":
    main()
