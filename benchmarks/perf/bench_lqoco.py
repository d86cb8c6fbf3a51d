"""Speed of ``hss/LQoCo-v0`` (control periods per second) and of its controllers' decisions.

Requirement: >= 10,000 control periods/s on 2 cores. Measured: the raw env
(``LQoCoEnv.step``, Keep), the registered env through ``gymnasium.make`` (order enforcing + the
passive checker), a no-op Gymnasium env with the same spaces (the wrapper floor, for the ratio),
and full episodes with each policy of :mod:`hss_gym.agents.lqoco` (env + decision + learning),
with the policies' mean decision time and L-QoCo's Q-table size (the paper: ~100 us per decision,
~100 KB). Best of ``--repeat`` runs (timings are noisy on a shared machine).

Then the vector envs: the native one (``gym.make_vec(..., vectorization_mode="vector_entry_point")``,
:mod:`hss_gym.envs.lqoco.vector`) against Gymnasium's SyncVectorEnv over the same envs, at each
of ``--sizes`` envs: env-steps/s, the best of ``--repeat`` windows of ``--seconds``, the two
interleaved so that both see the same machine load (read the ratios on a shared machine); oceanstor
S-13, Keep, 1500-period episodes, so the windows include autoresets.

Usage: python benchmarks/perf/bench_lqoco.py [--periods 20000] [--repeat 3] [--sizes 1,16,64]
[--seconds 1]; exits 1 if the raw env is slower than 10,000 periods/s.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import hss_gym  # noqa: F401
from hss_gym.agents.lqoco import POLICIES, make_policy, run_episode
from hss_gym.envs.lqoco.env import LQoCoEnv


class NoopEnv(gym.Env):
    """Same spaces and info size, no dynamics."""

    def __init__(self) -> None:
        self.observation_space, self.action_space = gym.spaces.Discrete(36), gym.spaces.Discrete(5)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {"t": 0}

    def step(self, action):
        return 0, 0.0, False, False, {"t": 0, "W": 0.0, "P": 0.0, "rate_mbps": 1.0}


def periods_per_s(env: gym.Env, n: int) -> float:
    env.reset(seed=0)
    t = time.perf_counter()
    for _ in range(n):
        env.step(2)
    return n / (time.perf_counter() - t)


def env_steps_per_s(step: Callable[[], Any], n: int, seconds: float) -> float:
    """env-steps/s of one window of about ``seconds`` (n env-steps per call)."""
    calls, t0 = 0, time.perf_counter()
    while (dt := time.perf_counter() - t0) < seconds:
        for _ in range(16):
            step()
        calls += 16
    return calls * n / dt


def vector_envs(sizes: list[int], seconds: float, repeat: int) -> None:
    print("\nvector envs (oceanstor S-13, Keep, 1500-period episodes): env-steps/s")
    for n in sizes:
        sync = gym.make_vec("hss/LQoCo-v0", num_envs=n, vectorization_mode="sync", workload="S-13")
        native = gym.make_vec("hss/LQoCo-v0", num_envs=n, vectorization_mode="vector_entry_point", workload="S-13")
        keep = np.full(n, 2, np.int64)
        sync.reset(seed=0)
        native.reset(seed=0)
        r_sync = r_native = 0.0
        for _ in range(repeat):
            r_sync = max(r_sync, env_steps_per_s(lambda: sync.step(keep), n, seconds))
            r_native = max(r_native, env_steps_per_s(lambda: native.step(keep), n, seconds))
        print(f"  x{n:<4d} SyncVectorEnv {r_sync:10,.0f} ({1e6 / r_sync:5.2f} us)   native {r_native:12,.0f} "
              f"({1e6 / r_native:5.2f} us)   {r_native / r_sync:5.1f}x")
        sync.close()
        native.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--periods", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="1,16,64", help="vector env sizes")
    ap.add_argument("--seconds", type=float, default=1.0, help="one timed window of the vector envs")
    a = ap.parse_args(argv)
    n = a.periods
    cases = {"raw env (oceanstor, S-13)": lambda: LQoCoEnv(workload="S-13", periods=n),
             "raw env (linux, S-5)": lambda: LQoCoEnv(config="linux", workload="S-5", periods=n),
             "gymnasium.make (oceanstor, S-13)": lambda: gym.make("hss/LQoCo-v0", workload="S-13", periods=n),
             "no-op env (same spaces)": NoopEnv}
    best = {k: max(periods_per_s(f(), n) for _ in range(a.repeat)) for k, f in cases.items()}
    for k, v in best.items():
        print(f"{k:36s} {v:10,.0f} periods/s")
    raw = best["raw env (oceanstor, S-13)"]
    print(f"{'ratio no-op / raw env':36s} {best['no-op env (same spaces)'] / raw:10.1f}x")
    print("\nfull episodes (1500 periods, oceanstor S-14): env + decision + learning")
    for name in POLICIES:
        runs = []
        for _ in range(a.repeat):
            pol = make_policy(name)
            runs.append(run_episode(pol, LQoCoEnv(workload="S-14", **pol.env_options), seed=0))
        o = max(runs, key=lambda r: r.steps / r.wall_s)
        q = getattr(pol, "q_table_bytes", None)
        extra = f"  Q table {q / 1024:.2f} KB" if q is not None else ""
        print(f"  {name:11s} {o.steps / o.wall_s:9,.0f} periods/s  decision {min(r.decision_us for r in runs):6.2f} us{extra}")
    vector_envs([int(x) for x in a.sizes.split(",")], a.seconds, a.repeat)
    ok = raw >= 10_000
    print(f"\nrequirement >= 10,000 periods/s (raw env): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
