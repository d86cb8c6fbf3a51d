"""Run metrics (SPEC section 9) computed from per-request latencies and the core's counters.

* latency: mean, p99 and p99.99 of per-request latency (µs), from issue to completion (issue =
  arrival, or later when the request waited for its stream's previous one or a host slot; that
  wait is summed apart in the counters' ``host_wait_us``);
* throughput: requests / makespan, the makespan running from the first arrival to the last
  completion (so a policy that lets queues build up loses throughput);
* write amplification: all bytes written to devices (host writes, first-touch placements are host
  writes, plus migration and eviction copies and the fills that copy first-touch reads to a
  faster device) / host bytes written;
* migration traffic per device: pages copied in and out (migrations + evictions);
* fast-device hit ratio: accessed pages served by device 0 / accessed pages.

Results are compared with :func:`normalise` (to Fast-Only: lower is better, 1.0 = ideal) and
:func:`percent_of_oracle` (as the papers do: Oracle's mean latency / the policy's, in percent).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hss_gym.workloads.trace import PAGE_SIZE


@dataclass
class RunMetrics:
    requests: int
    mean_latency_us: float
    p99_latency_us: float
    p9999_latency_us: float
    throughput_rps: float
    makespan_us: float
    write_amplification: float
    fast_hit_ratio: float
    evictions: int
    migrations: int
    migrated_pages_in: list[int] = field(default_factory=list)
    migrated_pages_out: list[int] = field(default_factory=list)
    migration_bytes: int = 0
    fills: int = 0  # first-touch read pages copied from home to a faster device

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compute_metrics(latencies: np.ndarray, counters: dict[str, Any]) -> RunMetrics:
    """Metrics of one run from its latencies (µs) and ``HSS.counters()``."""
    lat = np.asarray(latencies, dtype=np.float64)
    if lat.size == 0:
        raise ValueError("no requests were served: metrics need at least one latency")
    makespan = counters["last_completion_us"] - counters["first_arrival_us"]
    written = counters["host_bytes_written"]
    copies = counters["migration_bytes_written"] + counters["fill_pages"] * PAGE_SIZE
    wa = (written + copies) / written if written else float("nan")
    p99, p9999 = np.percentile(lat, [99.0, 99.99])
    return RunMetrics(
        requests=int(lat.size),
        mean_latency_us=float(lat.mean()),
        p99_latency_us=float(p99),
        p9999_latency_us=float(p9999),
        throughput_rps=float(lat.size / (makespan * 1e-6)) if makespan > 0 else float("inf"),
        makespan_us=float(makespan),
        write_amplification=float(wa),
        fast_hit_ratio=counters["fast_pages"] / max(1, counters["pages_accessed"]),
        evictions=int(counters["evictions"]),
        migrations=int(counters["migrations"]),
        migrated_pages_in=list(counters["migrated_pages_in"]),
        migrated_pages_out=list(counters["migrated_pages_out"]),
        migration_bytes=int(counters["migration_bytes_written"]),
        fills=int(counters["fill_pages"]),
    )


def normalise(m: RunMetrics, fast_only: RunMetrics) -> dict[str, float]:
    """Latency metrics divided by Fast-Only's (1.0 = as fast as an all-fast HSS)."""
    return {
        "mean": m.mean_latency_us / fast_only.mean_latency_us,
        "p99": m.p99_latency_us / fast_only.p99_latency_us,
        "p9999": m.p9999_latency_us / fast_only.p9999_latency_us,
        "throughput": m.throughput_rps / fast_only.throughput_rps,
    }


def percent_of_oracle(m: RunMetrics, oracle: RunMetrics) -> float:
    """The papers' "% of Oracle": Oracle's mean latency / the policy's, in percent."""
    return 100.0 * oracle.mean_latency_us / m.mean_latency_us
