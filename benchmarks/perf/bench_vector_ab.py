"""Speed of the native vector env with another build of the HSS core against this tree's, in one run.

For a change to the C core (backends/core) on a shared machine, where speeds measured in separate
runs move more than the change: build the other commit's core in a clone (``git clone . /tmp/a &&
cd /tmp/a && git checkout COMMIT && python setup.py build_ext --inplace``) and pass its
``backends/_core*.so``. Both cores drive the same envs (``hss/Placement-v0`` by default, ycsb-b,
20,000-request episodes, fixed actions, one thread) in one process: each window steps both by the
same number of calls, in ABBA order; what is printed is the median of the per-window time ratios
(robust to the load changing between windows), the ratio of the best windows, and the best speeds.
Only the C core is swapped: the Python of this tree runs both.

Usage: python benchmarks/perf/bench_vector_ab.py OTHER_CORE.so [--sizes 64,256,1024] [--window 16384]
       [--pairs 30] [--env hss/Placement-v0]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
import warnings
from types import ModuleType

import gymnasium as gym
import numpy as np

import hss_gym  # noqa: F401  (registers the ids)
import hss_gym.backends.sim
import hss_gym.envs.hss.env
import hss_gym.envs.hss.features
import hss_gym.envs.hss.vector
import hss_gym.hss
from hss_gym.backends import _core

USERS = (hss_gym.hss, hss_gym.envs.hss.env, hss_gym.envs.hss.vector, hss_gym.envs.hss.features,
         hss_gym.backends.sim)  # modules using _core


def use(core: ModuleType) -> None:
    """Make the envs created and stepped from now on run `core`."""
    for m in USERS:
        m._core = core


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("other", help="the other build's backends/_core*.so")
    p.add_argument("--sizes", default="64,256,1024", help="batch sizes")
    p.add_argument("--window", type=int, default=16384, help="env-steps per window")
    p.add_argument("--pairs", type=int, default=30, help="windows per core")
    p.add_argument("--env", default="hss/Placement-v0")
    args = p.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    spec = importlib.util.spec_from_file_location("other._core", args.other)
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    cores = {"other": other, "this": _core}
    for n in (int(x) for x in args.sizes.split(",")):
        envs = {}
        for name, core in cores.items():
            use(core)
            envs[name] = gym.make_vec(args.env, num_envs=n, vectorization_mode="vector_entry_point",
                                      workload="ycsb-b", n_requests=20_000)
            envs[name].reset(seed=0)
        zeros, calls = np.zeros(n, np.int64), max(1, args.window // n)
        times: dict[str, list[float]] = {name: [] for name in cores}
        for i in range(args.pairs):
            for name in (("other", "this") if i % 2 == 0 else ("this", "other")):
                use(cores[name])
                t0 = time.perf_counter()
                for _ in range(calls):
                    envs[name].step(zeros)
                times[name].append(time.perf_counter() - t0)
        ratio = statistics.median(a / b for a, b in zip(times["other"], times["this"]))
        best = {name: calls * n / min(t) / 1e6 for name, t in times.items()}
        print(f"{args.env} x{n}: this core {ratio:.3f}x the other's speed (median of {args.pairs} window pairs; "
              f"best windows {best['this'] / best['other']:.3f}x: {best['this']:.3f} against "
              f"{best['other']:.3f} M env-steps/s)", flush=True)
        for env in envs.values():
            env.close()
    use(_core)


if __name__ == "__main__":
    main()
