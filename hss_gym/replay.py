"""Built-in reference replays: whole traces with a fixed placement, run entirely in C.

* ``fast_only`` — everything on the fastest device, made large enough for the whole footprint
  (the ideal HSS; the papers' normalisation reference);
* ``slow_only`` — everything on the slowest (home) device;
* ``lru`` — "fast until full, then LRU eviction to the next device" on the critical path
  (Sibyl's eviction baseline; with more than two devices evictions cascade down).

They validate the device model (tests/test_model.py) and anchor every leaderboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hss_gym.config import HSSConfig, make_config
from hss_gym.hss import HSS, check_request_sizes
from hss_gym.metrics import RunMetrics
from hss_gym.workloads.trace import Trace

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
