"""Built-in reference replays: whole traces with a fixed placement, run entirely in C.

* ``fast_only`` — everything on the fastest device, made large enough for the whole footprint
  (the ideal HSS; the papers' normalisation reference);
* ``slow_only`` — everything on the slowest (home) device;
* ``lru`` — "fast until full, then LRU eviction to the next device" on the critical path
  (Sibyl's eviction baseline; with more than two devices evictions cascade down).

They validate the device model (tests/test_model.py) and anchor every leaderboard.
:func:`replay_references` runs them over workloads and configurations into a results file (one
JSON line per replay, resumable), :func:`references_table` and :func:`write_references_report`
present them: what ``hss-gym replay`` does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hss_gym._version import __version__
from hss_gym.config import HSSConfig, make_config
from hss_gym.hss import HSS, check_request_sizes
from hss_gym.metrics import RunMetrics
from hss_gym.workloads.trace import Trace
from hss_gym.benchmarks.results import append_record, open_for_append, writing
from hss_gym.workloads.registry import check_workload, get_trace

REFERENCE_POLICIES = ("fast_only", "slow_only", "lru")


@dataclass
class ReplayResult:
    policy: str
    config: str
    trace: str
    metrics: RunMetrics
    latencies: np.ndarray


def replay(trace: Trace, config: "str | HSSConfig | list[Any]" = "perf_opt", policy: str = "lru",
           seed: int = 0, footprint_pages: int | None = None, **options: Any) -> ReplayResult:
    """Replay ``trace`` on ``config`` with a reference ``policy`` (see the module docstring)."""
    if policy not in REFERENCE_POLICIES:
        raise ValueError(f"unknown reference policy {policy!r}; valid: {', '.join(REFERENCE_POLICIES)}")
    trace.validate()
    footprint = footprint_pages or trace.footprint_pages()
    cfg = make_config(config, **options)
    check_request_sizes(trace, cfg, footprint)  # the configuration's, not Fast-Only's ideal
    place = 0
    if policy == "fast_only":
        caps = [footprint + 1] * (cfg.n_devices - 1) + [None]
        cfg = cfg.with_options(capacities=tuple(caps), preloaded=True)
    elif policy == "slow_only":
        place = cfg.n_devices - 1
    hss = HSS(cfg, footprint_pages=footprint, seed=seed, streams=trace.n_streams())
    lat, metrics = hss.run_fixed(trace, place)
    return ReplayResult(policy, cfg.name, trace.name, metrics, lat)


#: a reference replay's key in its results file: (workload, configuration, policy, seed)
ReplayKey = tuple[str, str, str, int]


def _recorded_replays(rpath: Path) -> dict[ReplayKey, dict[str, Any]]:
    """The replay records of ``rpath`` by key; lines that are not replay records are skipped."""
    done: dict[ReplayKey, dict[str, Any]] = {}
    if rpath.exists():
        for line in rpath.read_text().splitlines():
            try:
                r = json.loads(line)
                done[(r["workload"], r["config"], r["policy"], r["seed"])] = r
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # not a replay record
    return done


def replay_references(workloads: list[str], configs: list[str], n: int, seed: int, rpath: Path, *,
                      fresh: bool = False, wait: bool = False, on_wait: Callable[[int | None], None] | None = None,
                      progress: bool = True) -> dict[ReplayKey, dict[str, Any]]:
    """Every reference policy on every workload (``n`` requests, ``seed``) and configuration,
    appended to the results file ``rpath`` as it ends; the records by key.

    Names are checked before any work (a misspelt configuration or workload fails fast). The file
    is written under its lock (:func:`hss_gym.benchmarks.results.writing`; ``wait`` and
    ``on_wait`` as there) from reading what is done to the end, and replays already recorded are
    not run again unless ``fresh`` discards the file. It is opened with the first result, so a
    failed first replay leaves none.
    """
    from tqdm import tqdm


    resolved = {c: make_config(c) for c in configs}  # each resolved once, and passed down
    for w in workloads:
        check_workload(w)
    jobs = [(w, c, p) for w in workloads for c in configs for p in REFERENCE_POLICIES]
    with writing(rpath, wait=wait, on_wait=on_wait):
        if fresh and rpath.exists():
            rpath.unlink()
        done = _recorded_replays(rpath)
        traces: dict[str, Trace] = {}
        fd = None
        try:
            for w, c, p in tqdm(jobs, desc="replay", unit="run", disable=not progress):
                key = (w, c, p, seed)
                if key in done:
                    continue
                if w not in traces:
                    traces[w] = get_trace(w, n=n, seed=seed)
                tr = traces[w]
                res = replay(tr, resolved[c], p, seed=seed)
                rec = {"workload": w, "config": c, "policy": p, "seed": seed, "n": len(tr),
                       "hss_gym_version": __version__, "config_hash": resolved[c].digest(),
                       "trace_source": tr.source, "metrics": res.metrics.to_dict()}
                if fd is None:
                    fd = open_for_append(rpath)
                append_record(fd, rec)
                done[key] = rec
        finally:
            if fd is not None:
                os.close(fd)
    return done


def references_table(done: dict[ReplayKey, dict[str, Any]], workloads: list[str], configs: list[str],
                     seed: int) -> str:
    """The Markdown table of the replays of ``seed``: one row per (workload, configuration,
    policy), the mean latency also relative to Fast-Only's. Write amplification is ``n/a`` for a
    run without writes."""
    lines = ["| workload | config | policy | mean µs | p99 µs | p99.99 µs | kIOPS | WA | fast hit "
             "| mean / Fast-Only |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for w in workloads:
        for c in configs:
            fo = done[(w, c, "fast_only", seed)]["metrics"]
            for p in REFERENCE_POLICIES:
                m = done[(w, c, p, seed)]["metrics"]
                wa = m["write_amplification"]
                lines.append(f"| {w} | {c} | {p} | {m['mean_latency_us']:.1f} | {m['p99_latency_us']:.1f} | "
                             f"{m['p9999_latency_us']:.1f} | {m['throughput_rps'] / 1e3:.1f} | "
                             f"{'n/a' if wa is None else f'{wa:.3f}'} | {m['fast_hit_ratio']:.3f} | "
                             f"{m['mean_latency_us'] / fo['mean_latency_us']:.2f} |")
    return "\n".join(lines)


def write_references_report(out: Path, table: str, n: int, seed: int) -> Path:
    """``out/report.md``: the table of :func:`references_table` under a heading that says the
    version, the requests per workload and the seed; its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.md"
    path.write_text(f"# hss-gym reference replays\n\nhss-gym {__version__}; {n:,} "
                    f"requests per workload; seed {seed}.\n\n{table}\n")
    return path
