"""The RLAlloc problem for the leaderboard harness (registry contract: SPEC §14).

Workloads: ``table1`` (the paper's 8-stream mix of Table I, one stream per MSR trace) and
``stg0-x<N>`` (N streams of STG_0, N = 2..20: the paper's sensitivity study, Fig. 9). Config:
``rlalloc`` (flash profile of Table II, at the env's default scale). Track options are passed to
``hss/RLAlloc-v0`` (``episode_periods``, ``intensity``, ``period_us``, ...). Policies: Static,
Dynamic, Random, Demand (hand-written chip moves, not from the paper) and the reference DQN
(``rlalloc_dqn``: shipped weights for ``table1``, in-run offline pre-training on a training seed
for the sweep, online learning in both).

Claims (the paper's §IV numbers) are checked by :func:`evaluate_claims`; the agree rule is stated
in each claim's row (``rule``): a gap agrees from half to double the paper's (same sign:
:data:`hss_gym.benchmarks.stats.GAP_TOLERANCE`), an "about equal" claim within 5 percentage points,
and the trend over the number of streams on its direction only.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

import numpy as np

from hss_gym.benchmarks.problems import Metric, Problem

CONFIGS = ("rlalloc",)
POLICIES = ("static", "dynamic", "random", "demand", "rlalloc_dqn")
SWEEP = re.compile(r"^stg0-x(\d+)$")
ENV_OPTIONS = frozenset({"episode_periods", "intensity", "period_us", "scale", "queue_depth",
                         "precondition", "reward_weights", "tail", "lat_ref_us"})
POLICY_OPTIONS = frozenset({"dqn_pretrain_steps", "dqn_pretrain_updates", "dqn_train_every"})


def check_workload(w: str) -> None:
    m = SWEEP.match(w)
    if w == "table1" or (m and 2 <= int(m.group(1)) <= 20):
        return
    raise ValueError(f"unknown RLAlloc workload {w!r}; valid: table1, stg0-x2 .. stg0-x20")


def check_config(c: str) -> None:
    if c not in CONFIGS:
        raise ValueError(f"unknown RLAlloc config {c!r}; valid: {', '.join(CONFIGS)}")


def env_kwargs(workload: str, options: dict[str, Any]) -> dict[str, Any]:
    """The env's constructor arguments for a job."""
    check_workload(workload)
    bad = set(options) - ENV_OPTIONS - POLICY_OPTIONS
    if bad:
        raise ValueError(f"unknown RLAlloc track option(s) {sorted(bad)}; valid: "
                         f"{sorted(ENV_OPTIONS | POLICY_OPTIONS)}")
    kw = {k: v for k, v in options.items() if k in ENV_OPTIONS}
    m = SWEEP.match(workload)
    if m:
        kw["n_streams"] = int(m.group(1))
    return kw


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One episode of one fresh policy; see the module docstring."""
    from hss_gym.agents.rlalloc import make_policy, run_episode
    from hss_gym.envs.rlalloc import RLAllocEnv

    check_config(job["config"])
    options = dict(job.get("options") or {})
    env = RLAllocEnv(**env_kwargs(job["workload"], options))
    pkw: dict[str, Any] = {}
    if job["policy"] == "rlalloc_dqn":
        for k in POLICY_OPTIONS & set(options):
            pkw[k[4:]] = options[k]
    policy = make_policy(job["policy"], **pkw)
    out = run_episode(policy, env, int(job["seed"]))
    metrics, rewards = out.metrics, out.curves["reward"]
    prov = env.provenance()
    if job["policy"] == "rlalloc_dqn":
        prov["pretrained_from"] = policy.pretrained_from
    env.close()
    metrics = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    metrics["mean_reward"] = float(np.mean(rewards)) if rewards else None
    return {"metrics": metrics, "steps": len(rewards), "provenance": prov,
            "curves": {"reward": rewards}}


def _pct(a: float, b: float) -> float:
    return 100.0 * (a / b - 1.0) if b else math.nan


def _rel(records: list[dict[str, Any]], ours: str, base: str, metric: str,
         workload_filter) -> list[float]:
    """Per (workload, seed) % difference of ``ours`` vs ``base`` on ``metric``."""
    by = defaultdict(dict)
    for r in records:
        if workload_filter(r["workload"]):
            by[(r["workload"], r["seed"])][r["policy"]] = (r.get("metrics") or {}).get(metric)
    out = []
    for pol in by.values():
        a, b = pol.get(ours), pol.get(base)
        if a is not None and b is not None and b > 0:
            out.append(_pct(a, b))
    return out


def _claim(text: str, paper: str, vals: list[float], kind: str, ref: float) -> dict[str, Any]:
    from hss_gym.benchmarks.stats import GAP_TOLERANCE, tolerance_range, within_tolerance
    if kind == "about":
        rule = f"value: within 5 points of {ref:+.1f}%"
    else:
        lo, hi = tolerance_range(ref, GAP_TOLERANCE)
        rule = (f"magnitude: {GAP_TOLERANCE[0]:g}-{GAP_TOLERANCE[1]:g}x the paper's {ref:+.1f}% "
                f"({lo:+.1f}..{hi:+.1f}%)")
    if not vals:
        return {"claim": text, "paper": paper, "ours": "no runs", "agree": None, "rule": rule}
    m = float(np.mean(vals))
    if kind == "about":
        agree = abs(m - ref) <= 5.0
    else:
        agree = within_tolerance(m, ref, GAP_TOLERANCE)
    return {"claim": text, "paper": paper, "rule": rule,
            "ours": f"{m:+.1f}% (range {min(vals):+.1f}..{max(vals):+.1f}%, n={len(vals)})", "agree": agree}


def evaluate_claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's §IV claims beside ours (mean over seeds and workloads of per-run % differences)."""
    t1 = lambda w: w == "table1"  # noqa: E731
    sweep = lambda n: (lambda w: w == f"stg0-x{n}")  # noqa: E731
    claims = [
        _claim("RLAlloc IOPS vs Static (Table I mix)", "+25.1% mean (15.4..39.9%)",
               _rel(records, "rlalloc_dqn", "static", "iops", t1), "more", 25.1),
        _claim("RLAlloc GC runs vs Static", "-59.2%",
               _rel(records, "rlalloc_dqn", "static", "gc_runs", t1), "less", -59.2),
        _claim("RLAlloc IOPS vs Dynamic (about equal)", "-0.8%",
               _rel(records, "rlalloc_dqn", "dynamic", "iops", t1), "about", -0.8),
        _claim("RLAlloc p99 vs Dynamic", "-16.1..-35.0%",
               _rel(records, "rlalloc_dqn", "dynamic", "p99_us", t1), "less", -16.1),
        _claim("RLAlloc p99.9 vs Dynamic", "-9.2..-44.0%",
               _rel(records, "rlalloc_dqn", "dynamic", "p999_us", t1), "less", -9.2),
        _claim("RLAlloc I/O conflicts vs Dynamic", "-33.4%",
               _rel(records, "rlalloc_dqn", "dynamic", "conflicts", t1), "less", -33.4),
        _claim("Dynamic IOPS vs Static (§I)", "+26.1%",
               _rel(records, "dynamic", "static", "iops", t1), "more", 26.1),
        _claim("Dynamic p99.9 vs Static (§I)", "+37.2..+67.3%",
               _rel(records, "dynamic", "static", "p999_us", t1), "more", 37.2),
        _claim("Dynamic I/O conflicts vs Static", "+60.9%",
               _rel(records, "dynamic", "static", "conflicts", t1), "more", 60.9),
        _claim("RLAlloc IOPS vs Static, 2 streams of STG_0 (about equal)", "+0.9%",
               _rel(records, "rlalloc_dqn", "static", "iops", sweep(2)), "about", 0.9),
        _claim("RLAlloc IOPS vs Static, 20 streams of STG_0", "+24.3%",
               _rel(records, "rlalloc_dqn", "static", "iops", sweep(20)), "more", 24.3),
    ]
    lo = _rel(records, "rlalloc_dqn", "static", "iops", sweep(2))
    hi = _rel(records, "rlalloc_dqn", "static", "iops", sweep(20))
    if lo and hi:
        claims.append({"claim": "the IOPS gain over Static grows with the number of streams",
                       "paper": "2: +0.9% -> 20: +24.3%",
                       "ours": f"2: {np.mean(lo):+.1f}% -> 20: {np.mean(hi):+.1f}%",
                       "rule": "direction only: the gain at 20 streams above the gain at 2",
                       "agree": bool(np.mean(hi) > np.mean(lo))})
    return claims


PROBLEM = Problem(
    name="rlalloc",
    title="RLAlloc: flash-chip allocation for the streams of a multi-streamed SSD",
    run_job=run_job,
    policies=lambda: list(POLICIES),
    learned=frozenset({"rlalloc_dqn"}),
    metrics=(Metric("iops", "IOPS (requests/s)", higher_is_better=True),
             Metric("p99_us", "p99 latency (us)", higher_is_better=False),
             Metric("p999_us", "p99.9 latency (us)", higher_is_better=False),
             Metric("gc_runs", "GC runs", higher_is_better=False),
             Metric("conflicts", "I/O conflicts", higher_is_better=False),
             Metric("write_amplification", "write amplification", higher_is_better=False)),
    references=(),
    check_workload=check_workload,
    check_config=check_config,
    claims=evaluate_claims,
    curve_axes=(("reward", "allocation periods (one decision each)", 1, 1),),
)
