"""Learning scenarios with known answers: synthetic traces whose best placement holds by construction.

A learned placement policy can be checked against them (``benchmarks/suites/learning-v1.json``,
``tests/test_learning.py``): each mixes pages that deserve the fast device with pages that do
not, sized so that the deserving ones fit in it (the fast device holds ``fast_fraction`` = 10% of
the footprint on perf_opt and cost_opt):

* ``learn-hot-scan``: a hot set of ``hot_fraction`` of the footprint (half the fast device)
  takes ``hot_share`` of the requests (reads and writes of 4 KiB, uniform over the set); the rest
  is a sequential read scan of pages never read before nor again. Best: hot pages fast, the scan
  slow (an LRU of the fast device's size keeps the hot set only if the scan does not flush it).
* ``learn-write-once``: the same hot set, plus a sequential stream of writes that are never read
  (a log or a backup): the stream must go to the slow device, the hot set to the fast one.
* ``learn-phase``: ``learn-hot-scan`` whose hot set moves to fresh pages every ``phase_requests``
  requests: the policy must follow it (the old hot set turns cold).

Requests are one page, arrive every ``gap_us`` (exponential gaps), and the op of a hot access is
a read with probability ``hot_read_fraction``. Deterministic for ``(name, n, seed, params)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hss_gym._version import __version__
from hss_gym.workloads.trace import PAGE_SIZE, READ, WRITE, Trace

DEFAULTS: dict[str, dict[str, Any]] = {
    "learn-hot-scan": {"hot_share": 0.7, "scan_op": "read", "phase_requests": 0},
    "learn-write-once": {"hot_share": 0.7, "scan_op": "write", "phase_requests": 0},
    "learn-phase": {"hot_share": 0.7, "scan_op": "read", "phase_requests": 4000},
}
_COMMON = {"hot_fraction": 0.05, "hot_read_fraction": 0.5, "gap_us": 100.0}


def names() -> list[str]:
    return list(DEFAULTS)


def resolve_params(name: str, **overrides: Any) -> dict[str, Any]:
    if name not in DEFAULTS:
        raise ValueError(f"unknown learning scenario {name!r}; valid: {', '.join(DEFAULTS)}")
    p = {**_COMMON, **DEFAULTS[name]}
    unknown = set(overrides) - set(p)
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {name!r}; valid: {sorted(p)}")
    p.update(overrides)
    checks = {"hot_share": 0 < p["hot_share"] < 1, "hot_fraction": 0 < p["hot_fraction"] < 1,
              "hot_read_fraction": 0 <= p["hot_read_fraction"] <= 1, "gap_us": p["gap_us"] > 0,
              "phase_requests": p["phase_requests"] >= 0, "scan_op": p["scan_op"] in ("read", "write")}
    bad = [k for k, ok in checks.items() if not ok]
    if bad:
        raise ValueError(f"{name}: invalid parameter(s) {bad}: {p} (need 0 < hot_share, hot_fraction < 1, "
                         f"0 <= hot_read_fraction <= 1, gap_us > 0, phase_requests >= 0, scan_op read|write)")
    return p


def generate(name: str, n: int = 12_000, seed: int = 0, **params: Any) -> Trace:
    """``n`` requests of scenario ``name``; see the module docstring."""

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    p = resolve_params(name, **params)
    rng = np.random.default_rng(seed)
    hot = rng.random(n) < p["hot_share"]
    n_scan = int((~hot).sum())
    phases = 1 + (n - 1) // p["phase_requests"] if p["phase_requests"] else 1
    # Footprint: the scan's pages plus every phase's hot set; the hot set is hot_fraction of it.
    hot_pages = max(1, int(round(p["hot_fraction"] * n_scan / (1 - p["hot_fraction"] * phases))))
    phase = np.arange(n) // p["phase_requests"] if p["phase_requests"] else np.zeros(n, dtype=np.int64)
    page = np.empty(n, dtype=np.int64)
    page[hot] = phase[hot] * hot_pages + rng.integers(0, hot_pages, int(hot.sum()))
    page[~hot] = phases * hot_pages + np.arange(n_scan)
    op = np.where(hot, np.where(rng.random(n) < p["hot_read_fraction"], READ, WRITE),
                  READ if p["scan_op"] == "read" else WRITE).astype(np.uint8)
    time_us = np.concatenate([[0.0], np.cumsum(rng.exponential(p["gap_us"], n - 1))])
    source = {"kind": "synthetic", "generator": name, "params": p, "seed": seed, "n": n,
              "hss_gym_version": __version__}
    return Trace(time_us, op, page * PAGE_SIZE, np.full(n, PAGE_SIZE, dtype=np.int64), None, name=name,
                 source=source).validate()
