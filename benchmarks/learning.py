"""Checks that the learned placement agents learn: known-answer scenarios and real traces.

* :func:`learning_suite`: on the ``learn-*`` scenarios (:mod:`hss_gym.workloads.learning`), the
  mean latency of each learner over the requests after ``warmup`` (6,000) against the best of the
  fixed and heuristic policies (always fast, always slow, ``hps``, ``cde``), and against the
  strongest simple rule (``fit_first``, ``RULES``) over the same
  requests, per seed, and the learning curve (mean latency per 1,000-request window).
* :func:`real_traces`: on real trace files, each learner's mean latency against Slow-Only's,
  with the hit ratio of an LRU cache of the fast device's size (the reuse there is to exploit).

``python -m hss_gym.benchmarks.learning [--suite learning|real]`` prints the tables; the slow tests
(``tests/test_learning.py``) assert the requirements.
"""

from __future__ import annotations

import argparse
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hss_gym.agents.base import Policy, make_env, make_policy, run_episode, stay_action
from hss_gym.config import HSSConfig, make_config
from hss_gym.workloads.registry import get_trace
from hss_gym.workloads.trace import Trace
from hss_gym.agents.harmonia import Harmonia
from hss_gym.agents.sibyl import Sibyl

LEARNERS = ("sibyl", "harmonia")
SCENARIOS = ("learn-hot-scan", "learn-write-once", "learn-phase")
REAL_TRACES = ("msr-excerpt-rw20.trace", "tpcc-small.trace", "cloudPhysicsIO.csv", "blkparse-wiscsee.txt")


class AlwaysFast(Policy):
    """Fixed placement on the fastest device (LRU eviction when full); no migration."""

    name = "always_fast"
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def act(self, observations: Any, infos: Any) -> dict[str, int]:
        return {"placement": 0, "migration": stay_action(infos)}


FIXED = {"always_fast": AlwaysFast, "slow_only": lambda: make_policy("slow_only"),
         "hps": lambda: make_policy("hps"), "cde": lambda: make_policy("cde")}
#: The strongest simple rules built from the reference agents' parts (:mod:`hss_gym.agents.rules`),
#: judged apart from FIXED: the learners' lead over it is an open requirement (docs/learning-diagnostics.md).
RULES = {name: (lambda name=name: make_policy(name)) for name in ("fit_first", "fit_first_reuse", "fit_first_reuse_ra", "fit_first_ref")}


def before_fix(name: str, seed: int) -> Policy:
    """The learners in their earlier form (for before/after tables): credit along the
    request stream, epsilon 0.001 from the first decision, a gradient step every 64 experiences,
    Sibyl's lr 1e-4; Harmonia's migration agent on the system-level eq.-3 reward (moves and stays
    share it), target-device actions, support [-1, 2] and auto-scaled rewards."""

    old = {"explore_steps": 0, "train_every": 64}
    if name == "sibyl":
        return Sibyl({**old, "lr": 1e-4}, seed=seed, credit="request")
    h = Harmonia(old, {"v_min": -1.0, "v_max": 2.0, "reward_scale": None}, seed=seed)
    h.placement.credit, h.migration.credit = "request", "system"
    return h


def learner(name: str, seed: int, before: bool = False) -> Policy:
    return before_fix(name, seed) if before else make_policy(name, seed=seed)


def latencies(policy: Policy, config: HSSConfig, trace: Trace, seed: int) -> np.ndarray:
    """Each request's latency in one episode of ``policy`` on ``trace`` over ``config`` (resolved
    once by the caller for all its runs)."""
    env = make_env(policy, config, trace)
    run_episode(policy, env, seed=seed)
    return env.latencies()


def curve(lat: np.ndarray, window: int = 1000) -> list[float]:
    return [float(lat[i:i + window].mean()) for i in range(0, len(lat), window)]


def learning_suite(configs: tuple[str, ...] = ("perf_opt", "cost_opt"), seeds: int = 5, n: int = 12_000,
                   warmup: int = 6_000, learners: tuple[str, ...] = LEARNERS,
                   before: bool = False) -> list[dict[str, Any]]:
    """One row per (scenario, config, seed): mean latency after ``warmup`` of every policy."""
    resolved = {c: make_config(c) for c in configs}
    rows = []
    for name in SCENARIOS:
        for config in configs:
            cfg = resolved[config]
            for seed in range(seeds):
                trace = get_trace(name, n=n, seed=seed)
                row: dict[str, Any] = {"scenario": name, "config": config, "seed": seed, "curves": {}}
                for pol, make in FIXED.items():
                    row[pol] = float(latencies(make(), cfg, trace, seed)[warmup:].mean())
                row["best_fixed"] = min(FIXED, key=lambda p: row[p])
                for pol, make in RULES.items():
                    row[pol] = float(latencies(make(), cfg, trace, seed)[warmup:].mean())
                for pol in learners:
                    lat = latencies(learner(pol, seed, before), cfg, trace, seed)
                    row[pol] = float(lat[warmup:].mean())
                    row["curves"][pol] = curve(lat)
                rows.append(row)
    return rows


def lru_hit_ratio(trace: Trace, capacity: int) -> float:
    """Page hit ratio of an LRU cache of ``capacity`` pages over the trace."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = total = 0
    for off, size in zip(trace.offset.tolist(), trace.size.tolist()):
        for p in range(off >> 12, ((off + size - 1) >> 12) + 1):
            total += 1
            if p in cache:
                hits += 1
                cache.move_to_end(p)
            else:
                cache[p] = None
                if len(cache) > capacity:
                    cache.popitem(last=False)
    return hits / max(total, 1)


def load_real(path: Path, n: int) -> Trace:
    try:
        return get_trace(str(path), n=n)
    except ValueError:  # a reader that rejects a row: keep the rest
        return get_trace(str(path), n=n, skip_bad=True)


def real_traces(folder: Path, configs: tuple[str, ...] = ("perf_opt", "cost_opt"), seeds: int = 3,
                n: int = 100_000, learners: tuple[str, ...] = LEARNERS, before: bool = False) -> list[dict[str, Any]]:
    """One row per (trace, config): LRU hit ratio, Slow-Only and each learner's mean over seeds."""
    resolved = {c: make_config(c) for c in configs}
    rows = []
    for fname in REAL_TRACES:
        trace = load_real(folder / fname, n)
        for config in configs:
            cfg = resolved[config]
            cap = cfg.page_capacities(trace.footprint_pages())[0]
            row: dict[str, Any] = {"trace": fname, "config": config, "requests": len(trace),
                                   "lru_hit": lru_hit_ratio(trace, cap)}
            row["slow_only"] = float(latencies(make_policy("slow_only"), cfg, trace, 0).mean())
            row["hps"] = float(latencies(make_policy("hps"), cfg, trace, 0).mean())
            for pol in learners:
                row[pol + "_seeds"] = [float(latencies(learner(pol, s, before), cfg, trace, s).mean())
                                       for s in range(seeds)]
                row[pol] = float(np.mean(row[pol + "_seeds"]))
            rows.append(row)
    return rows


def print_learning(rows: list[dict[str, Any]], learners: tuple[str, ...] = LEARNERS) -> None:
    keys = sorted({(r["scenario"], r["config"]) for r in rows}, key=lambda k: (SCENARIOS.index(k[0]), k[1]))
    print(f"{'scenario':18s} {'config':9s} {'best fixed (us)':>22s} " + " ".join(f"{p + ' / best':>16s}" for p in learners)
          + "   (mean over seeds of latency after 6,000 requests; worst seed in brackets)")
    for k in keys:
        rs = [r for r in rows if (r["scenario"], r["config"]) == k]
        best = np.array([r[r["best_fixed"]] for r in rs])
        names = sorted({r["best_fixed"] for r in rs})
        cells = []
        for p in learners:
            ratio = np.array([r[p] for r in rs]) / best
            cells.append(f"{ratio.mean():9.3f} [{ratio.max():.3f}]")
        rule = " ".join(f"{p} / {q}: {np.mean([r[p] for r in rs]) / np.mean([r[q] for r in rs]):.3f}"
                        for q in RULES if q in rs[0] for p in learners)
        print(f"{k[0]:18s} {k[1]:9s} {best.mean():12.1f} {'/'.join(names):>9s} " + " ".join(f"{c:>16s}" for c in cells)
              + f"   {rule}")
    for p in learners:
        r = rows[0]
        print(f"learning curve, {p}, {r['scenario']} {r['config']} seed {r['seed']} (mean us per 1,000 requests): "
              + " ".join(f"{v:.0f}" for v in r["curves"][p]))


def print_real(rows: list[dict[str, Any]], learners: tuple[str, ...] = LEARNERS) -> None:
    print(f"{'trace':24s} {'config':9s} {'n':>7s} {'LRU hit':>8s} {'slow_only':>10s} {'hps/SO':>7s} "
          + " ".join(f"{p + '/SO':>13s}" for p in learners) + "  seeds")
    for r in rows:
        so = r["slow_only"]
        print(f"{r['trace']:24s} {r['config']:9s} {r['requests']:7d} {r['lru_hit']:8.3f} {so:10.1f} {r['hps'] / so:7.3f} "
              + " ".join(f"{r[p] / so:13.3f}" for p in learners) + "  "
              + "; ".join(f"{p}: " + ",".join(f"{v / so:.2f}" for v in r[p + '_seeds']) for p in learners))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", choices=("learning", "real"), default="learning")
    ap.add_argument("--traces", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "traces")
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--before", action="store_true", help="the learners as they were before the fix")
    args = ap.parse_args()
    if args.suite == "learning":
        print_learning(learning_suite(seeds=args.seeds or 5, before=args.before))
    else:
        print_real(real_traces(args.traces, seeds=args.seeds or 3, before=args.before))


if __name__ == "__main__":
    main()
