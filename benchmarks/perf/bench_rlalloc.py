"""Benchmark: hss/RLAlloc-v0 allocation periods per second (required: >= 200 on 2 cores at the
default scale: Table I mix, 8 streams, profile rlalloc at scale 1/16, 10 ms periods).

Measured in one run: the env alone with the no-op (Static), with random chip moves, with Dynamic
(an allocation rule re-applied every period), and the reference DQN acting greedily (inference
only) and learning online; printed as periods/s of wall time and of this process's CPU time
(the machine is shared: the CPU-time rate is what the loop would reach on an idle core), each
with its ratio to the 200/s target.

    python benchmarks/perf/bench_rlalloc.py [--periods 500] [--streams 8]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from hss_gym.agents.rlalloc import AllocPolicy, make_policy, run_episode
from hss_gym.envs.rlalloc.env import RLAllocEnv

TARGET = 200.0


def rate(policy: str, periods: int, streams: int, **pkw) -> tuple[float, float]:
    """(wall-time, CPU-time) periods per second of one episode."""
    env = RLAllocEnv(n_streams=None if streams == 8 else streams, episode_periods=periods)
    pol = make_policy(policy, **pkw)
    env.reset(seed=0)
    pol.reset(env, 0)  # pre-training (if any) outside the timed loop
    start, cpu = time.perf_counter(), time.process_time()
    run_episode(_Prepared(pol), env, seed=0)
    return periods / (time.perf_counter() - start), periods / (time.process_time() - cpu)


class _Prepared(AllocPolicy):
    """Wraps a policy already reset, so run_episode's reset does not redo pre-training."""

    def __init__(self, pol: AllocPolicy) -> None:
        self.pol, self.name, self.learns = pol, pol.name, pol.learns

    def reset(self, env: RLAllocEnv, seed: int | None = None) -> None:
        self.pol.env = env

    def act(self, observations: Any, infos: dict[str, Any]) -> Any:
        return self.pol.act(observations, infos)

    def observe(self, observations: Any, rewards: float, infos: dict[str, Any]) -> None:
        self.pol.observe(observations, rewards, infos)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--periods", type=int, default=500)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--no-dqn", action="store_true")
    a = ap.parse_args()
    rows = [("env + static (no-op)", rate("static", a.periods, a.streams)),
            ("env + random", rate("random", a.periods, a.streams)),
            ("env + dynamic", rate("dynamic", a.periods, a.streams))]
    if not a.no_dqn:
        rows += [("env + DQN, inference only", rate("rlalloc_dqn", a.periods, a.streams, online=False)),
                 ("env + DQN, learning online", rate("rlalloc_dqn", a.periods, a.streams))]
    print(f"{'loop':30s} {'wall periods/s':>16s} {'CPU periods/s':>16s}   (target {TARGET:.0f}/s)")
    for name, (wall, cpu) in rows:
        print(f"{name:30s} {wall:8.0f} ({wall / TARGET:4.2f}x) {cpu:8.0f} ({cpu / TARGET:4.2f}x)")


if __name__ == "__main__":
    main()
