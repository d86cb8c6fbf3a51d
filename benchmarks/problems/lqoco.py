"""The L-QoCo problem for the leaderboard harness (SPEC §13/§14): cache-overload control.

One job = one fresh policy, one episode of ``hss/LQoCo-v0`` (learners start from an empty Q table,
as the paper does for each workload). A network trained on the env, ``sb3:PATH.zip``
(``torch:PATH.pt``, ``rllib:DIR``), plays greedily with its card's env options; its file's sha256
is recorded (``provenance.model``). Suites: ``benchmarks/suites/lqoco-v1.json`` (Table 5's 21
cases on their platform, and §4.3's adaptability sequence). The paper's Table 5 / §4.2-4.3 claims
(``benchmarks/published/lqoco.json``, with Table 5's numbers) are judged by
:mod:`hss_gym.benchmarks.claims`; :func:`table5_markdown` puts Table 5 beside ours, case by case.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from hss_gym.agents import make_env, run_episode
from hss_gym.agents.lqoco.base import POLICIES, make_policy
from hss_gym.backends.lqoco.model import CONFIGS
from hss_gym.envs.lqoco.workloads import MIXES
from hss_gym.benchmarks.claims import claims_of, load
from hss_gym.benchmarks.problems import Metric, Problem
from hss_gym.benchmarks.report import png

LEARNED = frozenset({"lqoco", "lqoco_dk", "lqoco_ab", "lqoco_and"})
CURVE_EVERY = 5  # periods between points of the watermark / throughput curves


def check_workload(w: Any) -> None:
    if not (isinstance(w, str) and (w == "adapt" or w in MIXES)):
        raise ValueError(f"unknown L-QoCo workload {w!r}; valid: {', '.join(MIXES)}, adapt")


def check_config(c: Any) -> None:
    if c not in CONFIGS:
        raise ValueError(f"unknown L-QoCo config {c!r}; valid: {', '.join(CONFIGS)}")


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one policy for one episode; deterministic for the job (seeded env and agent)."""
    check_workload(job["workload"])
    check_config(job["config"])
    policy = make_policy(job["policy"])
    options = job.get("options") or {}
    opts = {**options, **policy.env_options}  # the env's options, recorded (the policy's win)
    env = make_env(policy, job["config"], job["workload"], **options)
    out = run_episode(policy, env, seed=int(job["seed"]), keep_history=True)
    metrics = {k: out.metrics[k] for k in ("throughput_mbps", "jitter", "mean_latency_ms",
                                           "p999_latency_ms", "cache_full_s", "bypassed_frac")}
    q = getattr(policy, "q_table_bytes", None)
    h = out.history
    full = h["full_s"]
    slot = max(1, len(full) // 10)  # Fig. 4: cache-full seconds in each tenth of the episode
    prov = {"env": "hss/LQoCo-v0", "cache": repr(env.cache_spec),
            "tier": repr(env.tier_spec), "tier_profile": env.tier.profile.name,
            "phases": [[t, w] for t, w in env.phase_marks()], "env_options": opts,
            "q_table_kb": q / 1024 if q is not None else None}
    model = getattr(policy, "provenance", None)  # a trained model's file and sha256 (hss_gym.agents.models)
    if model:
        prov["model"] = dict(model)
    return {"metrics": metrics, "steps": out.steps,
            # (decision time varies run to run, and validate compares metrics and provenance:
            # it is measured by benchmarks/perf/bench_lqoco.py instead)
            "provenance": prov,
            "curves": {"watermark": h["W"][::CURVE_EVERY],
                       "throughput_mbps": h["throughput_mbps"][::CURVE_EVERY],
                       "full_s_per_tenth": [sum(full[i:i + slot]) for i in range(0, slot * 10, slot)]},
            "trained_on": getattr(policy, "trained_on", None)}


# ------------------------------------------------------------------------------------ claims
def q_table(record: dict[str, Any]) -> dict[str, Any]:
    """The metric the claims read from a run's provenance: the size of its Q table (KB)."""
    return {"q_table_kb": (record.get("provenance") or {}).get("q_table_kb")}


# ------------------------------------------------------------------------------ Table 5 beside ours
def _means(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """(track, workload, policy) -> metric means over seeds."""
    acc: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for k, v in (r.get("metrics") or {}).items():
            if isinstance(v, (int, float)):
                acc[(r.get("track", ""), r["workload"], r["policy"])][k].append(float(v))
    return {k: {m: statistics.fmean(v) for m, v in d.items()} for k, d in acc.items()}


def table5_markdown(records: list[dict[str, Any]]) -> str:
    """Per case of Table 5, the paper's and our ratios L-QoCo vs the platform's rule-based method
    (throughput: L-QoCo / rule, higher is L-QoCo better; jitter and p99.9: rule / L-QoCo) with a
    mark: ✓ when ours points the same way as the paper's (both > 1 or both <= 1), ✗ otherwise."""
    published = load("lqoco")
    pub, rules = published["cases"], published["policy_aliases"]["rule"]
    mean = _means(records)
    by_case = {w: v for (t, w, p), v in mean.items() if p == "lqoco"}
    lines = ["| case | platform | throughput L-QoCo/rule: paper / ours | jitter rule/L-QoCo: paper / ours "
             "| p99.9 rule/L-QoCo: paper / ours | ours: L-QoCo, rule, no control (MB/s; jitter; p99.9 ms; cache full s) |",
             "|---|---|---|---|---|---|"]
    for w, paper in pub.items():
        track = next((t for (t, w2, p) in mean if w2 == w), None)
        if w not in by_case or track is None:
            continue
        rule = rules[paper["platform"]]
        lq, rb, nc = (mean.get((track, w, p)) for p in ("lqoco", rule, "no_control"))
        if rb is None or nc is None:
            continue
        pl, pr = paper["lqoco"], paper["rule"]
        cells = []
        for key, inv in (("throughput_mbps", False), ("jitter", True), ("p999_latency_ms", True)):
            pk = "jitter_pct" if key == "jitter" else key
            pa = pr[pk] / pl[pk] if inv else pl[pk] / pr[pk]
            ou = rb[key] / max(lq[key], 1e-12) if inv else lq[key] / max(rb[key], 1e-12)
            cells.append(f"{pa:.2f} / {ou:.2f} {'✓' if (pa > 1) == (ou > 1) else '✗'}")
        ours = "; ".join(f"{x['throughput_mbps']:.0f}, {x['jitter']:.2f}, {x['p999_latency_ms']:.0f}, "
                         f"{x['cache_full_s']:.0f}" for x in (lq, rb, nc))
        lines.append(f"| {w} | {paper['platform']} ({rule}) | {' | '.join(cells)} | {ours} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ figures
def fig4(runs: dict[str, dict[str, Any]], title: str):
    """A Fig.-4-like figure from ``{policy: record}`` of one (workload, config, seed): the
    watermark over time (left) and the cache-full seconds in each tenth of the episode (right)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [3, 2]})
    styles = ["-", "--", "-.", ":", (0, (5, 1)), (0, (1, 1))]
    pols = [p for p in POLICIES if p in runs]
    width = 0.8 / max(len(pols), 1)
    for i, p in enumerate(pols):
        cur = runs[p].get("curves") or {}
        w = cur.get("watermark") or []
        ax.plot(np.arange(len(w)) * CURVE_EVERY, w, ls=styles[i % len(styles)], lw=1.1, label=p)
        full = cur.get("full_s_per_tenth") or []
        bx.bar(np.arange(len(full)) + (i - len(pols) / 2 + 0.5) * width, full, width, label=p)
    ax.set_xlabel("control period (s)")
    ax.set_ylabel("watermark W_t")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    bx.set_xlabel("tenth of the episode")
    bx.set_ylabel("cache-full time (s)")
    bx.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, ncol=3, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def figures(tracks: list[Any]) -> list[tuple[tuple[str, str], str, str]]:
    """Fig. 4 per track: watermark over time and cache-full time, first workload, first seed."""
    out = []
    for td in tracks:
        cells = td.cells()
        if not cells:
            continue
        w, c, s = cells[0]
        runs = {p: r for (w2, c2, s2, p), r in td.ok.items() if (w2, c2, s2) == (w, c, s)}
        if runs:
            title = f"{td.suite} / {td.track}: {w} on {c}, seed {s}"
            out.append(((td.suite, td.track), f"{td.track}: watermark over time and cache-full "
                        f"time per tenth (Fig. 4), {w} seed {s}", png(fig4(runs, title))))
    return out


PROBLEM = Problem(
    name="lqoco",
    title="L-QoCo: learning cache-overload control (DAC'22)",
    run_job=run_job,
    policies=lambda: list(POLICIES),
    learned=LEARNED,
    metrics=(Metric("throughput_mbps", "throughput (MB/s)", higher_is_better=True),
             Metric("jitter", "throughput jitter (eq. 4)", higher_is_better=False),
             Metric("p999_latency_ms", "p99.9 latency (ms)", higher_is_better=False),
             Metric("mean_latency_ms", "mean latency (ms)", higher_is_better=False),
             Metric("cache_full_s", "cache-full time (s)", higher_is_better=False)),
    references=(),
    check_workload=check_workload,
    check_config=check_config,
    claims=claims_of("lqoco", record_metrics=q_table),
    figures=figures,
    # one point every CURVE_EVERY control periods of period_s (1 s by default; a track may change it)
    curve_axes=(("watermark", "control periods (1 s each by default)", 0, CURVE_EVERY),
                ("throughput_mbps", "control periods (1 s each by default)", 0, CURVE_EVERY),
                ("full_s_per_tenth", "tenth of the episode", 1, 1)),
)
