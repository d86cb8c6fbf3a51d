"""Our L-QoCo results beside the paper's: Table 5 ratios (markdown) and Fig. 4 (PNG).

    hss-gym bench --suite lqoco-v1                 # writes results/lqoco-v1/results.jsonl
    python examples/lqoco_report.py --workload S-8 --out docs/lqoco-fig4.png

The results argument is a bench output directory or its ``results.jsonl``; by default the
directory that ``hss-gym bench --suite lqoco-v1`` writes, ``results/lqoco-v1``.

Prints :func:`hss_gym.benchmarks.problems.lqoco.table5_markdown` of the run, and draws Fig. 4
(watermark over time, cache-full time per tenth of the episode) from the curves stored with every
run (one point every 5 periods), for one (workload, seed) and every policy present.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


#: where ``hss-gym bench --suite lqoco-v1`` writes (results/SUITE without --out)
DEFAULT_RESULTS = Path("results") / "lqoco-v1"


def results_file(path: Path) -> Path:
    """``path/results.jsonl`` for a bench output directory, ``path`` for a file; a missing one
    says which command writes it."""
    p = path / "results.jsonl" if path.is_dir() or path.suffix != ".jsonl" else path
    if not p.is_file():
        raise SystemExit(f"{p}: no such results file; `hss-gym bench --suite lqoco-v1` writes "
                         f"{DEFAULT_RESULTS / 'results.jsonl'} (or OUT/results.jsonl with --out OUT)")
    return p


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="?", default=DEFAULT_RESULTS,
                    help="an lqoco-v1 bench output directory or its results.jsonl")
    ap.add_argument("--workload", default="S-8")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("lqoco-fig4.png"))
    a = ap.parse_args(argv)
    from hss_gym.benchmarks.problems.lqoco import fig4, table5_markdown

    path = results_file(a.results)
    with open(path) as f:
        records = [r for r in map(json.loads, f) if r.get("status") == "ok"]
    print(table5_markdown(records))
    runs: dict[str, dict[str, Any]] = {r["policy"]: r for r in records
                                       if r.get("workload") == a.workload and r.get("seed") == a.seed}
    if not runs:
        raise SystemExit(f"{path}: no ok run of workload {a.workload!r} with seed {a.seed}")
    config = next(iter(runs.values())).get("config")
    fig = fig4(runs, f"{a.workload} on {config} (seed {a.seed}): watermark and cache-full time")
    fig.savefig(a.out, dpi=90, bbox_inches="tight")
    print(f"wrote {a.out}")
    return a.out


if __name__ == "__main__":
    main()
