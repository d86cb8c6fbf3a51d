"""The ``hss-gym`` command line.

    hss-gym replay   --workload ycsb-b --config perf_opt,cost_opt   reference replays + report
    hss-gym list     configurations, devices, workloads, reference policies
    hss-gym convert  SRC DST                                        any trace -> columnar cache

``replay`` writes one JSON line per run to ``OUT/results.jsonl`` as soon as the run ends (with
provenance: version, config hash, trace source) and skips runs already there (``--resume`` is the
default; ``--fresh`` starts over), then prints the table and writes ``OUT/report.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hss_gym import __version__

DEFAULT_CONFIGS = "perf_opt,cost_opt,tri,quad,pmem"


def _load(spec: str, n: int, seed: int):
    from hss_gym.workloads.registry import get_trace
    return get_trace(spec, n=n, seed=seed)


def cmd_replay(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from hss_gym.config import make_config
    from hss_gym.metrics import normalise
    from hss_gym.replay import REFERENCE_POLICIES, replay

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    if args.fresh and results_path.exists():
        results_path.unlink()
    done: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    if results_path.exists():
        for line in results_path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["workload"], r["config"], r["policy"], r["seed"])] = r
    configs = [c.strip() for c in args.config.split(",") if c.strip()]
    for c in configs:
        make_config(c)  # fail fast on a bad name, before any work
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    jobs = [(w, c, p) for w in workloads for c in configs for p in REFERENCE_POLICIES]
    traces: dict[str, Any] = {}
    with results_path.open("a") as f:
        for w, c, p in tqdm(jobs, desc="replay", unit="run", disable=args.quiet):
            key = (w, c, p, args.seed)
            if key in done:
                continue
            if w not in traces:
                traces[w] = _load(w, args.n, args.seed)
            tr = traces[w]
            res = replay(tr, c, p, seed=args.seed)
            rec = {"workload": w, "config": c, "policy": p, "seed": args.seed, "n": len(tr),
                   "hss_gym_version": __version__, "config_hash": make_config(c).digest(),
                   "trace_source": tr.source, "metrics": res.metrics.to_dict()}
            f.write(json.dumps(rec, default=str) + "\n")
            f.flush()
            done[key] = rec
    rows = []
    for w in workloads:
        for c in configs:
            fo = done[(w, c, "fast_only", args.seed)]["metrics"]
            for p in REFERENCE_POLICIES:
                m = done[(w, c, p, args.seed)]["metrics"]
                rows.append((w, c, p, m, m["mean_latency_us"] / fo["mean_latency_us"]))
    header = ("| workload | config | policy | mean µs | p99 µs | p99.99 µs | kIOPS | WA | fast hit "
              "| mean / Fast-Only |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    lines = [header] + [
        f"| {w} | {c} | {p} | {m['mean_latency_us']:.1f} | {m['p99_latency_us']:.1f} | "
        f"{m['p9999_latency_us']:.1f} | {m['throughput_rps'] / 1e3:.1f} | "
        f"{m['write_amplification']:.3f} | {m['fast_hit_ratio']:.3f} | {norm:.2f} |"
        for w, c, p, m, norm in rows]
    table = "\n".join(lines)
    report = (f"# hss-gym reference replays\n\nhss-gym {__version__}; {args.n:,} requests per "
              f"workload; seed {args.seed}; results in `{results_path.name}`.\n\n{table}\n")
    (out / "report.md").write_text(report)
    print(table)
    print(f"\nreport: {out / 'report.md'}  results: {results_path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from hss_gym.backends.sim import builtin_profiles, load_profile
    from hss_gym.config import CONFIGURATIONS
    from hss_gym.replay import REFERENCE_POLICIES
    from hss_gym.workloads.registry import list_workloads

    what = args.what
    if what in ("all", "configs"):
        print("configurations:")
        for name, (devs, fr) in CONFIGURATIONS.items():
            print(f"  {name:10s} {' + '.join(devs):22s} capacity fractions {fr}")
    if what in ("all", "devices"):
        print("devices:")
        for d in builtin_profiles():
            p = load_profile(d)
            print(f"  {d:6s} {p.name}")
    if what in ("all", "workloads"):
        print("workloads:", ", ".join(list_workloads()))
    if what in ("all", "policies"):
        print("reference policies:", ", ".join(REFERENCE_POLICIES))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from hss_gym.workloads.cache import convert
    convert(args.src, args.dst, format=args.format)
    print(f"wrote {args.dst}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="hss-gym", description="Hybrid storage system RL environments: "
                                 "replays, benchmarks and trace tools.")
    ap.add_argument("--version", action="version", version=f"hss-gym {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    r = sub.add_parser("replay", help="replay workloads with the reference policies "
                       "(Fast-Only, LRU eviction, Slow-Only) and write a report")
    r.add_argument("--workload", default="ycsb-b",
                   help="comma-separated workload names or trace paths (see `hss-gym list workloads`)")
    r.add_argument("--config", default=DEFAULT_CONFIGS, help=f"comma-separated configurations (default {DEFAULT_CONFIGS})")
    r.add_argument("--n", type=int, default=100_000, help="requests per synthetic workload")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default="results", help="output directory (results.jsonl, report.md)")
    r.add_argument("--fresh", action="store_true", help="discard earlier results instead of resuming")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_replay)

    li = sub.add_parser("list", help="list configurations, devices, workloads and policies")
    li.add_argument("what", nargs="?", default="all", choices=["all", "configs", "devices", "workloads", "policies"])
    li.set_defaults(func=cmd_list)

    c = sub.add_parser("convert", help="convert a trace file to the columnar cache format")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--format", default=None, help="input format (default: auto-detect)")
    c.set_defaults(func=cmd_convert)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"hss-gym: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
