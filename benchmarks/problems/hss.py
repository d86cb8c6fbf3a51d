"""The HSS problem: data placement and migration in a hybrid storage system (Harmonia, Sibyl).

Runs one policy of :mod:`hss_gym.agents` for one episode of ``hss/Harmonia-v0`` over a workload
(a registered generator or a trace file) on a device configuration. Every run is compared with
the ``fast_only`` run of the same (workload, configuration, seed) — *normalised* latency, 1.0 = as
fast as an HSS whose fast device holds everything, lower is better — and with the ``oracle``
runs: *% of Oracle* = 100 x the Oracle's normalised mean latency / the policy's, both averaged
over the track's runs (higher is better; a ratio of the means, so it follows the ranking). The
Oracle migrates for free: the papers' bound, which no policy beats. ``oracle_paid`` is another
reference, not a bound: a heuristic that reads the future and pays for its moves in the device
model (Belady choices through the migration queue), which real policies can beat; it has no
"% of" column. Fast-Only (an idealised device) and both Oracles (clairvoyant) are references,
shown apart from the ranking and without a % of Oracle. Every policy is also judged against
doing nothing (Slow-Only, :class:`NoHarm`) per workload on its mean latency and on its tails
(p99, p99.99): a policy that lowers the mean by slowing its slowest requests down harms too.
Each run also records its learning curve: mean latency per 1,000-request window, plotted against
the requests served.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from hss_gym.agents.base import POLICIES, make_env, make_policy, run_episode
from hss_gym.benchmarks.claims import claims_of
from hss_gym.benchmarks.problems import Metric, NoHarm, Problem
from hss_gym.benchmarks.report import leaderboard, png, short_name
from hss_gym.benchmarks.results import latency_quantiles, trace_sha256
from hss_gym.config import CONFIGURATIONS, make_config
from hss_gym.workloads.readers import FORMAT_OPTIONS, LOAD_OPTIONS
from hss_gym.workloads.readers import check_options as check_reader_options
from hss_gym.workloads.registry import canonical_name, get_trace
from hss_gym.workloads.registry import check_workload as _check_workload

REFERENCE = "fast_only"
ORACLE = "oracle"
#: a future-reading heuristic that pays for its moves in the device model (agents/oracle.py:
#: PaidOracle): a reference beside the free-migration bound, not a bound (real policies beat it)
PAID_ORACLE = "oracle_paid"
CURVE_WINDOW = 1000
CURVE = "mean latency (µs) per 1,000 requests"
#: the reference agents: Harmonia's and Sibyl's C51 agents with this project's changes (a learned
#: policy of LEARNED that is not one of these is a baseline)
REFERENCE_AGENTS = ("harmonia", "sibyl")
#: rules built from the reference agents' parts with no network (agents/rules.py): what their
#: networks must beat (fit_first learns nothing; fit_first_reuse learns its victim order;
#: fit_first_reuse_ra adds the readahead; fit_first_ref has every part, the write streams' too)
RULES = ("fit_first", "fit_first_reuse", "fit_first_reuse_ra", "fit_first_ref")
LEARNED = frozenset({"harmonia", "harmonia_paper", "sibyl", "sibyl_paper", "sapm", "cde+rl_migr", "sibyl+k_svm", "sibyl+rnn_hss",
                     "archivist", "k_svm", "rnn_hss", "random"})
#: reader options a track may give for trace files (all of them, or per file name pattern in
#: ``trace_options``): every keyword option of ``load_trace`` but ``limit`` (the track's
#: ``n_requests``), i.e. format, skip_bad, sort, name, block_bytes and every format's options
#: (blkparse event/device, fio gap_us/time_unit, a csv layout: columns, delimiter, units, ...)
def _reader_options() -> tuple[str, ...]:
    names = [n for n in LOAD_OPTIONS if n != "limit"]
    names += sorted(set().union(*FORMAT_OPTIONS.values()))
    return tuple(names)


TRACE_OPTIONS = _reader_options()


def policies() -> list[str]:
    return list(POLICIES)


def check_config(name: str) -> None:
    if name not in CONFIGURATIONS:
        near = difflib.get_close_matches(name, CONFIGURATIONS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown configuration {name!r}{hint}; valid: {', '.join(CONFIGURATIONS)}")


def check_workload(name: str) -> None:
    """A registered name or an existing trace path (hss_gym.workloads.registry.check_workload)."""
    try:
        _check_workload(name)
    except FileNotFoundError as e:  # the harness reports ValueErrors
        raise ValueError(str(e)) from None


def trace_options(job: dict[str, Any]) -> dict[str, Any]:
    """Reader options of a job's trace file: the track's ``options`` (but ``trace_options``),
    then, in order, its ``trace_options`` entries whose pattern matches the file's name (checked
    by :func:`check_options` when the suite is loaded)."""
    opts = job.get("options") or {}
    out = {k: v for k, v in opts.items() if k != "trace_options"}
    name = os.path.basename(job["workload"])
    for pattern, o in (opts.get("trace_options") or {}).items():
        if fnmatch.fnmatch(name, pattern):
            out.update(o)
    return out


def check_options(options: dict[str, Any], workloads: Sequence[str] = ()) -> None:
    """Check a track's ``options`` before anything runs: reader options (:data:`TRACE_OPTIONS`,
    for every trace file) and ``trace_options`` (file name pattern -> reader options), each
    name and value, every pattern's options with the track's, and the options each of the
    track's trace files will be read with. Raises ValueError naming the option."""
    def check(where: str, opts: dict[str, Any]) -> None:
        for key in opts:
            if key == "limit":
                raise ValueError(f"{where}option 'limit': the track's n_requests says how many "
                                 "requests of a trace file are read")
            if key not in TRACE_OPTIONS:
                near = difflib.get_close_matches(str(key), TRACE_OPTIONS, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ValueError(f"{where}unknown option {key!r}{hint}; a track's options are "
                                 f"trace reader options ({', '.join(TRACE_OPTIONS)}) and "
                                 "trace_options")
        try:
            check_reader_options(opts)
        except ValueError as e:
            raise ValueError(f"{where}{e}") from None

    top = {k: v for k, v in options.items() if k != "trace_options"}
    check("", top)
    patterns = options.get("trace_options") or {}
    if not isinstance(patterns, dict):
        raise ValueError(f"option 'trace_options' must map file name patterns to reader "
                         f"options, got {patterns!r}")
    for pattern, opts in patterns.items():
        if not isinstance(opts, dict):
            raise ValueError(f"trace_options[{pattern!r}] must be an object of reader options, "
                             f"got {opts!r}")
        check(f"trace_options[{pattern!r}]: ", {**top, **opts})
    for w in workloads:
        if os.path.isfile(w):
            check(f"trace {os.path.basename(w)!r}: ", trace_options({"workload": w,
                                                                     "options": options}))


def load_job_trace(job: dict[str, Any]) -> Any:
    """The trace a job runs: a registered workload generated with the job's seed, or the first
    ``n_requests`` of a trace file (read with the track's reader options)."""
    w = job["workload"]
    extra = trace_options(job) if canonical_name(w) is None else {}
    return get_trace(w, n=job["n_requests"], seed=job["seed"], **extra)


def precheck(rec: dict[str, Any]) -> str | None:
    """Why a recorded run cannot be re-run identically here: its configuration or trace hashes
    differently (another trace file or generator version)."""
    prov = rec.get("provenance") or {}
    try:
        digest = make_config(rec["config"]).digest()
    except ValueError as e:
        return f"configuration: {e}"
    if prov.get("config_hash") != digest:
        return (f"configuration hash mismatch for {rec['config']!r}: recorded {prov.get('config_hash')}, "
                f"this installation's is {digest}")
    want = (prov.get("trace") or {}).get("sha256")
    try:
        got = trace_sha256(load_job_trace(rec))
    except (OSError, ValueError) as e:
        return f"cannot load the trace {rec['workload']!r}: {e}"
    if want != got:
        return (f"trace hash mismatch for {rec['workload']!r}: recorded {want}, the trace here hashes to "
                f"{got} (a different trace file or generator)")
    return None


def learning_curve(latencies: np.ndarray, window: int = CURVE_WINDOW) -> list[float]:
    """Mean latency (µs) of each full ``window``-request window, in trace order."""
    k = len(latencies) // window
    if k == 0:
        return []
    return [round(float(x), 3) for x in latencies[:k * window].reshape(k, window).mean(axis=1)]


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One fresh policy, one episode of the two-agent env on the job's trace and configuration.

    The job names its configuration; it is resolved here, once, and the object passed down (the
    env applies the policy's options to it, the HSS and its device model use it as given)."""
    trace = load_job_trace(job)
    config = make_config(job["config"])
    prov: dict[str, Any] = {"trace": {"name": trace.name, "requests": len(trace), "sha256": trace_sha256(trace),
                                      "source": trace.source},
                            "config_hash": config.digest()}
    policy = make_policy(job["policy"], seed=int(job["seed"]))  # a learner's own seed: the run's
    prov["policy_name"] = policy.name
    prov["env_options"] = dict(policy.env_options)
    model = getattr(policy, "provenance", None)  # a trained model's file and sha256 (hss_gym.agents.models)
    if model:
        prov["model"] = dict(model)
    env = make_env(policy, config, trace, n_requests=len(trace))
    prov["env_config_hash"] = env.cfg.digest()
    try:
        res = run_episode(policy, env, seed=job["seed"])
        lat = env.latencies()
    finally:
        policy.close()
        env.close()
    out: dict[str, Any] = {"metrics": res.metrics.to_dict(), "steps": res.steps, "provenance": prov,
                           "curves": {CURVE: learning_curve(lat)}, "trained_on": getattr(policy, "trained_on", None)}
    if len(lat):
        out["latency_quantiles"] = latency_quantiles(lat)
    return out


def _ratio(a: Any, b: Any) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return None
    return float(a) / float(b)


def derive(cell: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Normalise each run of a (workload, config, seed) cell to its Fast-Only and Oracle runs."""
    fm = cell.get(REFERENCE) or {}
    out = {}
    for p, m in cell.items():
        wa = m.get("write_amplification")
        out[p] = {
            "norm_mean": _ratio(m.get("mean_latency_us"), fm.get("mean_latency_us")),
            "norm_p99": _ratio(m.get("p99_latency_us"), fm.get("p99_latency_us")),
            "norm_p9999": _ratio(m.get("p9999_latency_us"), fm.get("p9999_latency_us")),
            "norm_throughput": _ratio(m.get("throughput_rps"), fm.get("throughput_rps")),
            "write_amplification": wa if wa is not None and math.isfinite(wa) else None,
            "fast_hit_ratio": m.get("fast_hit_ratio"),
            # (% of Oracle is computed by the report from the track's means: Metric.relative_to);
            # the raw latencies are judged against Slow-Only's (NoHarm)
            "mean_latency_us": m.get("mean_latency_us"),
            "p99_latency_us": m.get("p99_latency_us"),
            "p9999_latency_us": m.get("p9999_latency_us"),
        }
    return out


METRICS = (
    Metric("norm_mean", "mean lat. / Fast-Only", higher_is_better=False, digits=2),
    Metric("norm_p99", "p99 / FO", higher_is_better=False, digits=2),
    Metric("norm_p9999", "p99.99 / FO", higher_is_better=False, digits=2),
    Metric("norm_throughput", "throughput / FO", higher_is_better=True, digits=2),
    Metric("write_amplification", "write ampl.", higher_is_better=False, digits=2),
    Metric("fast_hit_ratio", "fast hit", higher_is_better=True, digits=2),
    Metric("pct_oracle", "% of Oracle", higher_is_better=True, digits=1, pct=True,
           relative_to=(ORACLE, "norm_mean")),
)


# ---------------------------------------------------------------------------------------- figures
def figures(tracks: list[Any]) -> list[tuple[tuple[str, str], str, str]]:
    """Latency CDFs of up to four workloads per track: the five best policies and the references,
    distinct line styles, one legend outside the panels."""
    import matplotlib.pyplot as plt
    out = []
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    for td in tracks:
        ranked = [s.policy for s in leaderboard(td) if s.mean(td.problem.primary.key) is not None]
        pols = ranked[:5] + [p for p in (REFERENCE, ORACLE) if p in td.policies]
        cells = td.cells()
        if not cells:
            continue
        seed = cells[0][2]
        cdf_cells = [c for c in cells if c[2] == seed and c[1] == td.configs[0]][:4]
        have = [c for c in cdf_cells if any((td.ok.get((*c, p)) or {}).get("latency_quantiles") for p in pols)]
        if not have:
            continue
        fig, axes = plt.subplots(1, len(have), figsize=(3.3 * len(have), 3.0), squeeze=False)
        cmap = plt.get_cmap("tab10")
        for ax, c in zip(axes[0], have):
            for i, p in enumerate(pols):
                q = (td.ok.get((*c, p)) or {}).get("latency_quantiles")
                if q:
                    ref = {REFERENCE: ("0.15", ":"), ORACLE: ("0.55", (0, (2, 2)))}.get(p)
                    ax.plot(q["us"], np.asarray(q["q"]) / 100.0, label=p + (" (ref)" if ref else ""),
                            lw=1.1 if ref else 1.5, color=ref[0] if ref else cmap(i),
                            ls=ref[1] if ref else styles[i % len(styles)])
            ax.set_xscale("log")
            ax.set_xlabel("latency (µs)")
            ax.set_title(f"{short_name(c[0])} / {c[1]}", fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("fraction of requests")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.tight_layout()
        fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), fontsize=8,
                   bbox_to_anchor=(0.5, 0.0))
        fig.suptitle(f"{td.suite} / {td.track}: latency CDF (seed {seed}; top 5 + references)", y=1.03)
        out.append(((td.suite, td.track), f"{td.track}: latency CDF of the five best policies and the "
                    f"references (seed {seed})", png(fig)))
    return out


def ahead_after(curve: Sequence[float], ref: Sequence[float], window: int = CURVE_WINDOW) -> int | None:
    """The requests after which ``curve`` stays ahead of ``ref`` (mean latency per window, lower
    is better): the start of the first window from which every later window is at most ``ref``'s
    (0: ahead from the start), or None when the last window is behind (or there is no window)."""
    n = min(len(curve), len(ref))
    if n == 0 or curve[n - 1] > ref[n - 1]:
        return None
    w = n - 1
    while w > 0 and curve[w - 1] <= ref[w - 1]:
        w -= 1
    return w * window


def real_trace_curves(tracks: list[Any]) -> list[tuple[tuple[str, str], str, str]]:
    """Per real trace (a track workload that is a file), each learned policy's learning curve as a
    ratio to Slow-Only's (mean over seeds, per 1,000 requests), with the requests after which it
    stays ahead of Slow-Only (:func:`ahead_after`) in the legend and the caption."""
    import matplotlib.pyplot as plt
    out = []
    for td in tracks:
        learned = [p for p in td.policies if p in td.problem.learned and p not in td.problem.references]
        for w in td.workloads:
            if not os.path.isfile(w):
                continue  # a registered generator, not a real trace
            for config in td.configs:
                def mean_curve(p: str) -> list[float]:
                    runs = [r.get("curves", {}).get(CURVE) or [] for (ww, c, _, pp), r in td.ok.items()
                            if ww == w and c == config and pp == p]
                    runs = [r for r in runs if r]
                    n = min((len(r) for r in runs), default=0)
                    return [sum(r[i] for r in runs) / len(runs) for i in range(n)]
                ref = mean_curve("slow_only")
                if not ref:
                    continue
                fig, ax = plt.subplots(figsize=(6.0, 3.0))
                notes = []
                for p in learned:
                    cur = mean_curve(p)
                    if not cur:
                        continue
                    n = min(len(cur), len(ref))
                    x = [(i + 1) * CURVE_WINDOW for i in range(n)]
                    after = ahead_after(cur, ref)
                    tag = "behind at the end" if after is None else f"ahead from {after:,}"
                    notes.append(f"{p} {tag}")
                    ax.plot(x, [cur[i] / ref[i] for i in range(n)], lw=1.2, label=f"{p} ({tag})")
                if not notes:
                    plt.close(fig)
                    continue
                ax.axhline(1.0, color="0.3", ls=":", lw=1)
                ax.set_xlabel("requests served")
                ax.set_ylabel("mean latency / Slow-Only\n(per 1,000 requests)")
                ax.set_title(f"{short_name(w)} / {config}", fontsize=9)
                ax.grid(alpha=0.3)
                ax.legend(fontsize=7, loc="best")
                out.append(((td.suite, td.track), f"{short_name(w)} / {config}: learning curves against "
                            f"Slow-Only (mean over seeds; below 1 is ahead): " + "; ".join(notes), png(fig)))
    return out


def all_figures(tracks: list[Any]) -> list[tuple[tuple[str, str], str, str]]:
    """The latency CDFs, then the learning curves on real traces."""
    return figures(tracks) + real_trace_curves(tracks)


PROBLEM = Problem(
    name="hss",
    title="HSS data placement and migration (Harmonia, Sibyl)",
    run_job=run_job,
    policies=policies,
    metrics=METRICS,
    learned=LEARNED,
    references=(REFERENCE, ORACLE, PAID_ORACLE),
    required=(REFERENCE,),
    check_workload=check_workload,
    check_config=check_config,
    derive=derive,
    claims=claims_of("hss"),
    figures=all_figures,
    precheck=precheck,
    check_options=check_options,
    description=("Mean latency normalised to Fast-Only (an HSS whose fast device holds everything) on "
                 "the same workload, configuration and seed, averaged over the track; lower is better, "
                 "1.00 = ideal. Fast-Only (idealised) and the Oracle (reads the future, migrates for "
                 "free: the bound) are references, not ranked; so is oracle_paid, a future-reading "
                 "heuristic that pays for its moves: a reference, not a bound (real policies beat it). "
                 "Every policy is also judged against doing nothing (Slow-Only) per workload, on its mean, "
                 "p99 and p99.99 latency."),
    curve_axes=((CURVE, "requests served", CURVE_WINDOW, CURVE_WINDOW),),
    no_harm=NoHarm("slow_only", ("mean_latency_us", "p99_latency_us", "p9999_latency_us"),
                   names=("", "p99", "p99.99")),
    rules=RULES,
    reference_agents=REFERENCE_AGENTS,
    cell_tables=(("migrations", "page moves between devices in one run: the policy's (through the migration "
                                "queue, or the Oracle's free ones) and its cleaner's; evictions on the "
                                "critical path are counted apart"),),
)
