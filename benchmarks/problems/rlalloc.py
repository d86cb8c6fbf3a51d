"""The RLAlloc problem for the leaderboard harness (registry contract: SPEC §14).

Workloads: ``table1`` (the paper's 8-stream mix of Table I, one stream per MSR trace) and
``stg0-x<N>`` (N streams of STG_0, N = 2..20: the paper's sensitivity study, Fig. 9). Config:
``rlalloc`` (flash profile of Table II, at the env's default scale). Track options are passed to
``hss/RLAlloc-v0`` (``episode_periods``, ``intensity``, ``period_us``, ...). Policies: Static,
Dynamic, Random, Demand (hand-written chip moves, not from the paper) and the reference DQN
(``rlalloc_dqn``: shipped weights for ``table1``, in-run offline pre-training on a training seed
for the sweep, online learning in both); and a network trained on ``hss/RLAlloc-v0``,
``sb3:PATH.zip`` (``torch:PATH.pt``, ``rllib:DIR``), played greedily with its card's env options,
its file's sha256 recorded (``provenance.model``).

Claims (the paper's §IV numbers, ``published/rlalloc.json``) are judged by
:mod:`hss_gym.benchmarks.claims`, each by the rule in its row: a gap agrees from half to double
the paper's (same sign: :data:`hss_gym.benchmarks.stats.GAP_TOLERANCE`), an "about equal" claim
within 5 percentage points, and the trend over the number of streams on its direction only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hss_gym.agents import make_env, run_episode
from hss_gym.agents.rlalloc import make_policy
from hss_gym.benchmarks.claims import claims_of
from hss_gym.benchmarks.problems import Metric, Problem, flash_profile_precheck
from hss_gym.envs.rlalloc.workloads import workload_options

CONFIGS = ("rlalloc",)
POLICIES = ("static", "dynamic", "random", "demand", "rlalloc_dqn")
ENV_OPTIONS = frozenset({"episode_periods", "intensity", "period_us", "scale", "queue_depth",
                         "precondition", "reward_weights", "tail", "lat_ref_us"})
POLICY_OPTIONS = frozenset({"dqn_pretrain_steps", "dqn_pretrain_updates", "dqn_train_every"})


def check_workload(w: str) -> None:
    """ValueError unless ``w`` names a workload of the problem (``table1``, ``stg0-x<N>``)."""
    workload_options(w)


def check_config(c: str) -> None:
    if c not in CONFIGS:
        raise ValueError(f"unknown RLAlloc config {c!r}; valid: {', '.join(CONFIGS)}")


def env_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """The env's constructor arguments among a job's track options (the others are the DQN's)."""
    bad = set(options) - ENV_OPTIONS - POLICY_OPTIONS
    if bad:
        raise ValueError(f"unknown RLAlloc track option(s) {sorted(bad)}; valid: "
                         f"{sorted(ENV_OPTIONS | POLICY_OPTIONS)}")
    return {k: v for k, v in options.items() if k in ENV_OPTIONS}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One episode of one fresh policy; see the module docstring."""
    check_workload(job["workload"])
    check_config(job["config"])
    options = dict(job.get("options") or {})
    kwargs = env_kwargs(options)
    pkw: dict[str, Any] = {}
    if job["policy"] == "rlalloc_dqn":
        for k in POLICY_OPTIONS & set(options):
            pkw[k[4:]] = options[k]
    policy = make_policy(job["policy"], **pkw)
    model_options = dict(policy.env_options)  # a trained model's card
    env = make_env(policy, job["config"], job["workload"], **kwargs)
    out = run_episode(policy, env, int(job["seed"]))
    metrics, rewards = out.metrics, out.curves["reward"]
    prov = env.provenance()
    if job["policy"] == "rlalloc_dqn":
        prov["pretrained_from"] = policy.pretrained_from
    model = getattr(policy, "provenance", None)  # a trained model's file and sha256 (hss_gym.agents.models)
    if model:
        prov["model"] = dict(model)
        prov["env_options"] = model_options
    env.close()
    metrics = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    metrics["mean_reward"] = float(np.mean(rewards)) if rewards else None
    return {"metrics": metrics, "steps": len(rewards), "provenance": prov,
            "curves": {"reward": rewards}, "trained_on": getattr(policy, "trained_on", None)}


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
    precheck=flash_profile_precheck,
    claims=claims_of("rlalloc"),
    curve_axes=(("reward", "allocation periods (one decision each)", 1, 1),),
)
