"""Check that a speed change changed no result: Harmonia's and Sibyl's episodes, bit for bit.

Records, for Harmonia and Sibyl (seeds 0 and 1) on ycsb-b perf_opt (20,000 requests) and
learn-hot-scan cost_opt (12,000 requests): ``env.latencies()``, each agent's loss curve and its
final training weights. Run ``record`` before the change (e.g. on main) and ``check`` after;
``check`` names every array that differs (a refactoring keeps results bit for bit identical).

    python benchmarks/perf/identical_agents.py record before.npz [--sync]
    python benchmarks/perf/identical_agents.py check before.npz [--sync]

``--sync`` trains on the agent's thread (``train_thread=False``; the background thread must give
the same arrays, so recording with one and checking with the other is a check too).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from hss_gym.agents import make_env, make_policy, run_episode

CASES = [("perf_opt", "ycsb-b", 20_000), ("cost_opt", "learn-hot-scan", 12_000)]


def record(thread: bool) -> dict[str, np.ndarray]:
    out = {}
    for name in ("harmonia", "sibyl"):
        for seed in (0, 1):
            for config, workload, n in CASES:
                opts = {"train_thread": thread}
                p = make_policy(name, seed=seed,
                                **({"placement": opts, "migration": opts} if name == "harmonia" else {"config": opts}))
                env = make_env(p, config, workload, n_requests=n)
                run_episode(p, env, seed=seed)
                key = f"{name}-seed{seed}-{config}-{workload}"
                out[f"{key}-latencies"] = env.latencies()
                parts = {"placement": p.placement, "migration": p.migration} if name == "harmonia" else {"placement": p}
                for part, pol in parts.items():
                    out[f"{key}-{part}-loss"] = np.array(pol.agent.loss_curve, dtype=np.float64)
                    out[f"{key}-{part}-weights"] = np.concatenate(
                        [x.ravel() for layer in pol.agent.weights for x in layer])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["record", "check"])
    ap.add_argument("path")
    ap.add_argument("--sync", action="store_true", help="train on the agent's thread (train_thread=False)")
    args = ap.parse_args()
    arrays = record(thread=not args.sync)
    if args.mode == "record":
        np.savez(args.path, **arrays)
        print(f"recorded {len(arrays)} arrays in {args.path}")
        return
    ref = np.load(args.path)
    differ = [k for k in ref.files if k not in arrays or not np.array_equal(ref[k], arrays[k])]
    if differ:
        print(f"DIFFERENT: {len(differ)} of {len(ref.files)} arrays: {', '.join(differ)}")
        sys.exit(1)
    print(f"identical: {len(ref.files)} arrays")


if __name__ == "__main__":
    main()
