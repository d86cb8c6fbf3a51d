"""Trace parsing speed: hss-gym's reader against pandas, and the columnar cache against parsing.

Measures, in one run and on the same file (default: the CloudPhysics sample of the development
workspace, ``../shared/traces/cloudPhysicsIO.csv``, 113,872 rows):

* ``load_trace`` (parse, convert units, validate, hash) vs ``pandas.read_csv`` (parse only);
* reading the trace cache (``load_trace`` on a file written by ``save_cache``) vs parsing.

Repetitions are interleaved (so a burst of load on the machine hits all contenders), the
garbage collector is off while timing (as in ``timeit``), and the median is reported.
Requirements: parsing at least as fast as pandas (ratio >= 1.0) and the cache at least 10x
faster than parsing. Exits 1 if one fails, 2 if the trace is missing.

    python benchmarks/perf/bench_trace_parse.py [--trace PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from hss_gym.workloads.cache import save_cache
from hss_gym.workloads.readers import _tokenize, load_trace

DEFAULT_TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "cloudPhysicsIO.csv"
MIN_PANDAS_RATIO = 1.0
MIN_CACHE_SPEEDUP = 10.0


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=21, help="repetitions (median is reported)")
    args = ap.parse_args()
    if not args.trace.is_file():
        print(f"trace not found: {args.trace} (pass --trace)", file=sys.stderr)
        return 2
    engine = "C (_fastparse)" if _tokenize.ACCELERATOR is not None else "NumPy (C not built)"
    with tempfile.TemporaryDirectory() as tmp:
        trace = load_trace(args.trace)
        cache = save_cache(trace, Path(tmp) / "trace.hsstrace")
        contenders: dict[str, Callable[[], object]] = {
            "pandas.read_csv": lambda: pd.read_csv(args.trace),
            "hss-gym load_trace (text)": lambda: load_trace(args.trace),
            "hss-gym load_trace (cache)": lambda: load_trace(cache),
        }
        for fn in contenders.values():  # warm up imports and the page cache
            fn()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        gc.collect()
        gc.disable()
        try:
            for _ in range(args.repeat):
                for name, fn in contenders.items():
                    times[name].append(timed(fn))
        finally:
            gc.enable()
    median = {name: statistics.median(t) for name, t in times.items()}
    parse = median["hss-gym load_trace (text)"]
    ratio = median["pandas.read_csv"] / parse
    speedup = parse / median["hss-gym load_trace (cache)"]

    print(f"trace: {args.trace} ({len(trace):,} requests, "
          f"{args.trace.stat().st_size / 1e6:.1f} MB); tokenizer: {engine}; "
          f"median of {args.repeat}")
    print(f"{'contender':30s} {'median ms':>10s} {'min ms':>8s} {'max ms':>8s}")
    for name, t in times.items():
        print(f"{name:30s} {median[name] * 1e3:10.2f} {min(t) * 1e3:8.2f} {max(t) * 1e3:8.2f}")
    checks = [(f"parse speed vs pandas = {ratio:.2f}x", ratio >= MIN_PANDAS_RATIO,
               f">= {MIN_PANDAS_RATIO:.1f}"),
              (f"cache read vs parse   = {speedup:.1f}x", speedup >= MIN_CACHE_SPEEDUP,
               f">= {MIN_CACHE_SPEEDUP:.0f}")]
    for text, ok, need in checks:
        print(f"{text:36s} (required {need}): {'PASS' if ok else 'FAIL'}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
