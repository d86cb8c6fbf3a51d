"""Write amplification stays meaningful on read-mostly traces (hss_gym.metrics docstring)."""
from __future__ import annotations

import numpy as np
import pytest

from hss_gym.metrics import WA_MIN_FRACTION, write_amplification
from hss_gym.replay import replay
from hss_gym.workloads.trace import PAGE_SIZE, Trace


def test_definition() -> None:
    # copies over the writes the HSS had to do anyway (host writes + fills)
    assert write_amplification(100 * PAGE_SIZE, 0, 0, 0) == 1.0
    assert write_amplification(100 * PAGE_SIZE, 0, 100 * PAGE_SIZE, 200 * PAGE_SIZE) == 2.0
    # a read-only run that copies pages has no meaningful ratio: None, not 21,905
    assert write_amplification(4 * PAGE_SIZE, 10**6 * PAGE_SIZE, 0, 5000 * PAGE_SIZE) is None
    assert write_amplification(0, 0, 0, 0) is None
    reads = 10**4 * PAGE_SIZE
    floor = int(2 * WA_MIN_FRACTION * reads)  # above 1% of the traffic
    assert write_amplification(floor, reads, 0, floor) == pytest.approx(2.0)


def test_read_only_trace_reports_none_and_fills_count() -> None:
    n = 4000
    rng = np.random.default_rng(0)
    offsets = rng.integers(0, 2000, n) * PAGE_SIZE
    ops = np.zeros(n, dtype=np.uint8)
    ops[:4] = 1  # four writes in a read-only trace
    trace = Trace.from_arrays(np.arange(n) * 50.0, ops, offsets, np.full(n, PAGE_SIZE))
    slow = replay(trace, "perf_opt", "slow_only").metrics
    assert slow.fills == 0 and slow.write_amplification is None
    lru = replay(trace, "perf_opt", "lru").metrics
    assert lru.fills > 0 and lru.evictions > 0  # reads placed on the fast device are filled
    necessary = 4 * PAGE_SIZE + lru.fills * PAGE_SIZE
    assert lru.write_amplification == pytest.approx((necessary + lru.evictions * PAGE_SIZE) / necessary)
    assert 1.0 < lru.write_amplification < 10.0
