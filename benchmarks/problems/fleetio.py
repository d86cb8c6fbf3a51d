"""The FleetIO problem for the leaderboard harness (``hss-gym bench --suite fleetio-v1``).

One job = one episode of ``hss/FleetIO-v1`` on a Table 5 mix (``workload``), config ``fleetio``
(the paper's 16-channel SSD), run by a fresh policy: a baseline of §4.1 (a sharing scheme set
through the env's options) or the shipped PPO agent. Track options: ``windows`` (60), ``beta``,
``scale``, ``window_s``, ``precondition``. Metrics per run: storage utilisation, P99 of the
latency-sensitive vSSDs, bandwidth of the bandwidth-intensive ones, SLO violations; ``derive`` adds each one
relative to Hardware Isolation in the same (mix, seed) cell. §4's claims
(``published/fleetio.json``) are judged by :mod:`hss_gym.benchmarks.claims`.
"""

from __future__ import annotations

import math
from typing import Any

from hss_gym._version import __version__
from hss_gym.agents import make_env, run_episode
from hss_gym.agents.fleetio import POLICIES, make_policy
from hss_gym.benchmarks.claims import claims_of
from hss_gym.benchmarks.problems import Metric, Problem, flash_profile_precheck
from hss_gym.envs.fleetio.workloads import MIXES

REFERENCE = "hardware_isolation"
CONFIGS = ("fleetio",)
OPTIONS = ("windows", "beta", "scale", "window_s", "precondition")


def _policies() -> list[str]:
    return list(POLICIES)


def check_workload(w: str) -> None:
    if w not in MIXES:
        raise ValueError(f"unknown FleetIO mix {w!r}; valid: {', '.join(MIXES)}")


def check_config(c: str) -> None:
    if c not in CONFIGS:
        raise ValueError(f"unknown FleetIO config {c!r}; valid: {', '.join(CONFIGS)}")


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    check_workload(job["workload"])
    check_config(job["config"])
    opts = dict(job.get("options") or {})
    bad = sorted(set(opts) - set(OPTIONS))
    if bad:
        raise ValueError(f"FleetIO track options {bad} unknown; valid: {', '.join(OPTIONS)}")
    policy = make_policy(job["policy"])
    env = make_env(policy, job["config"], job["workload"], **opts)
    out = run_episode(policy, env, seed=int(job["seed"]))
    return {"metrics": {k: (v if math.isfinite(v) else None) for k, v in out.metrics.items()},
            "steps": out.steps,
            "provenance": {"hss_gym": __version__, "mix": job["workload"],
                           "profile": env.model.prof.name, "profile_scale": env.model.prof.scale,
                           "profile_hash": env.model.prof.digest(),
                           "tenants": [t.name for t in env.tenants], "env_options": policy.env_options,
                           "alpha": env.alpha.tolist(), "slo_us": env.slo_us.tolist()},
            "curves": {"mean_reward": out.curves["mean_reward"]}, "trained_on": getattr(policy, "trained_on", None)}


def _ratio(a: Any, b: Any) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return None
    return float(a) / float(b)


def derive(cell: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Add each run's utilisation, LS P99 and BW-intensive bandwidth relative to Hardware Isolation."""
    ref = cell.get(REFERENCE) or {}
    out = {}
    for p, m in cell.items():
        out[p] = {**m, "util_vs_hw": _ratio(m.get("utilization"), ref.get("utilization")),
                  "p99_vs_hw": _ratio(m.get("p99_ls_us"), ref.get("p99_ls_us")),
                  "bw_vs_hw": _ratio(m.get("bw_intensive_MBps"), ref.get("bw_intensive_MBps"))}
    return out


METRICS = (
    Metric("utilization", "storage utilisation", higher_is_better=True, digits=3),
    Metric("util_vs_hw", "util. / HW iso.", higher_is_better=True, digits=2),
    Metric("p99_ls_us", "P99 of LS vSSDs (us)", higher_is_better=False, digits=0),
    Metric("p99_vs_hw", "LS P99 / HW iso.", higher_is_better=False, digits=2),
    Metric("bw_intensive_MBps", "BW of BW-int. vSSDs (MB/s)", higher_is_better=True, digits=1),
    Metric("bw_vs_hw", "BW-int. BW / HW iso.", higher_is_better=True, digits=2),
    Metric("slo_violation_pct", "LS SLO violations", higher_is_better=False, digits=1, pct=True),
)


PROBLEM = Problem(
    name="fleetio",
    title="FleetIO: multi-tenant vSSD bandwidth harvesting",
    run_job=run_job,
    policies=_policies,
    metrics=METRICS,
    learned=frozenset({"fleetio_ppo", "fleetio_ppo_local"}),
    required=(REFERENCE,),
    check_workload=check_workload,
    check_config=check_config,
    precheck=flash_profile_precheck,
    derive=derive,
    claims=claims_of("fleetio"),
    curve_axes=(("mean_reward", "decision steps (one action per vSSD each)", 1, 1),),
    description="Sun et al., ASPLOS'25: one PPO agent per vSSD harvests idle channel bandwidth "
                "(ghost superblocks) of collocated vSSDs without breaking their SLOs.",
)
