"""Run metrics (SPEC section 9) computed from per-request latencies and the core's counters.

* latency: mean, p99 and p99.99 of per-request latency (µs), from issue to completion (issue =
  arrival, or later when the request waited for its stream's previous one or a host slot; that
  wait is summed apart in the counters' ``host_wait_us``);
* throughput: requests / makespan, the makespan running from the first arrival to the last
  completion (so a policy that lets queues build up loses throughput);
* write amplification (WA): bytes written to the devices / bytes the HSS had to write anyway,

      WA = (host writes + fills + migration and eviction copies) / (host writes + fills)

  where host writes are the trace's write bytes (a first-touch write is one), and fills are the
  copies of first-touch *reads* from the home device to the faster device a policy placed them
  on (``preloaded=False``): placing data is the HSS's job, so a fill counts as necessary, while
  every migration or eviction copy is extra. WA >= 1, and 1.0 means no page was copied twice.
  Dividing by host writes alone would explode on read-mostly traces (a handful of writes against
  thousands of migrations; docs/inputs.md); so WA is ``None`` ("n/a" in reports) when the denominator is
  below :data:`WA_MIN_FRACTION` (1%) of the host traffic (bytes read + written): such a run
  wrote too little for a ratio to mean anything, and its copies are in ``migration_bytes``;
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

#: Write amplification is None when host writes + fills are below this fraction of host traffic.
WA_MIN_FRACTION = 0.01


def write_amplification(host_written: int, host_read: int, fill_bytes: int,
                        copy_bytes: int) -> float | None:
    """Device bytes written / (host bytes written + fill bytes); None below the minimum (see the
    module docstring)."""
    necessary = host_written + fill_bytes
    if necessary <= 0 or necessary < WA_MIN_FRACTION * (host_written + host_read):
        return None
    return (necessary + copy_bytes) / necessary


@dataclass
class RunMetrics:
    requests: int
    mean_latency_us: float
    p99_latency_us: float
    p9999_latency_us: float
    throughput_rps: float
    makespan_us: float
    write_amplification: float | None  # None: too few bytes written to mean anything
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
    wa = write_amplification(counters["host_bytes_written"], counters["host_bytes_read"],
                             counters["fill_pages"] * PAGE_SIZE, counters["migration_bytes_written"])
    p99, p9999 = np.percentile(lat, [99.0, 99.99])
    return RunMetrics(
        requests=int(lat.size),
        mean_latency_us=float(lat.mean()),
        p99_latency_us=float(p99),
        p9999_latency_us=float(p9999),
        throughput_rps=float(lat.size / (makespan * 1e-6)) if makespan > 0 else float("inf"),
        makespan_us=float(makespan),
        write_amplification=wa,
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
