"""Trace statistics: hand-built traces with known answers, reuse distances, SHARDS sampling."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hss_gym.workloads import READ, WRITE, Trace
from hss_gym.workloads.mixes import generate_mix
from hss_gym.workloads.stats import describe, format_description, reuse_distances
from hss_gym.workloads.synthetic import generate

K = 4096


def naive_reuse(pages: list[int]) -> list[int]:
    """LRU stack distances by simulating the stack (-1 for a first access)."""
    stack: list[int] = []
    out = []
    for p in pages:
        if p in stack:
            out.append(stack.index(p))
            stack.remove(p)
        else:
            out.append(-1)
        stack.insert(0, p)
    return out


def test_reuse_distances_match_a_naive_lru_stack() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        pages = rng.integers(0, int(rng.integers(1, 25)), n)
        assert reuse_distances(pages).tolist() == naive_reuse(pages.tolist())


def test_reuse_distances_known_sequence() -> None:
    assert reuse_distances(np.array([5, 5, 6, 5, 7, 8, 6])).tolist() == [-1, 0, -1, 1, -1, -1, 3]
    assert reuse_distances(np.array([], dtype=np.int64)).tolist() == []


@pytest.fixture
def tiny() -> Trace:
    # pages:  r0 reads 0,1 | r1 writes 2 | r2 reads 0 | r3 writes 1,2
    return Trace.from_arrays(time_us=[0.0, 10.0, 10.0, 30.0], op=[READ, WRITE, READ, WRITE],
                             offset=[0, 2 * K, 0, K], size=[2 * K, K, K, 2 * K], name="tiny")


def test_describe_tiny_trace(tiny: Trace) -> None:
    d = describe(tiny)
    assert d["name"] == "tiny" and d["requests"] == 4
    assert d["reads"] == 2 and d["writes"] == 2 and d["read_pct"] == 50.0
    assert d["duration_us"] == 30.0 and d["streams"] == {0: 4}
    assert d["size_bytes"]["mean"] == 6144.0
    assert d["size_bytes"]["min"] == K and d["size_bytes"]["max"] == 2 * K
    assert d["size_bytes"]["p50"] == 6144.0 and d["size_kib_mean"] == 6.0
    assert d["gap_us"]["mean"] == 10.0 and d["gap_us"]["p50"] == 10.0
    assert d["gap_us"]["zero_fraction"] == pytest.approx(1 / 3)
    assert d["footprint_pages"] == 3 and d["footprint_bytes"] == 3 * K
    assert d["write_footprint_pages"] == 2 and d["read_footprint_pages"] == 2
    assert d["page_accesses"] == 6
    # r1 starts where r0 ends, r3 where r2 ends; r2 does not continue r1.
    assert d["sequential_fraction"] == pytest.approx(2 / 3)
    # Every page is accessed twice; the top 10% (one page) gets 2 of 6 accesses.
    assert d["top10_page_share"] == pytest.approx(1 / 3)
    # Page sequence 0 1 2 0 1 2: three cold misses, then three re-accesses at distance 2.
    r = d["reuse"]
    assert r["cold"] == 3 and r["counts"] == [0, 0, 3]
    assert r["bucket_low"] == [0, 1, 2] and r["bucket_high"] == [1, 2, 4]
    assert r["sampling_rate"] == 1.0 and r["sampled_accesses"] == 6
    json.dumps(d)  # serialisable


def test_describe_buckets_and_skew() -> None:
    # Pages 9 9 9 9 3 4 9: distances -, 0, 0, 0, -, -, 2 ; counts: 9 x5, 3 x1, 4 x1.
    offsets = np.array([9, 9, 9, 9, 3, 4, 9]) * K
    tr = Trace.from_arrays(np.arange(7.0), np.zeros(7), offsets, np.full(7, K))
    d = describe(tr)
    assert d["reuse"]["counts"] == [3, 0, 1] and d["reuse"]["cold"] == 3
    assert d["top10_page_share"] == pytest.approx(5 / 7)
    assert d["footprint_pages"] == 3 and d["write_footprint_pages"] == 0
    assert d["gap_us"]["zero_fraction"] == 0.0


def test_unaligned_requests_cover_partial_pages() -> None:
    # 512 B into page 0, 4 KiB long: touches pages 0 and 1; then 100 B at the end of page 1.
    tr = Trace.from_arrays([0.0, 1.0], [WRITE, READ], [512, 2 * K - 100], [K, 100])
    d = describe(tr)
    assert d["footprint_pages"] == 2 and d["page_accesses"] == 3
    assert d["reuse"]["counts"] == [1] and d["reuse"]["cold"] == 2


def test_sequential_fraction_is_per_stream() -> None:
    # Two interleaved sequential streams: globally never sequential, per stream always.
    off = np.array([0, 100, 1, 101, 2, 102]) * K
    tr = Trace.from_arrays(np.arange(6.0), np.zeros(6), off, np.full(6, K),
                           stream=[0, 1, 0, 1, 0, 1])
    d = describe(tr)
    assert d["sequential_fraction"] == 1.0 and d["streams"] == {0: 3, 1: 3}


def test_shards_sampling_estimates_the_hit_ratio_curve() -> None:
    tr = generate("ycsb-b", 60_000, seed=0, footprint_gib=0.25)
    exact = describe(tr, reuse_budget=10**9)["reuse"]
    sampled = describe(tr, reuse_budget=60_000)["reuse"]
    assert exact["sampling_rate"] == 1.0 and 0 < sampled["sampling_rate"] < 0.2
    total = exact["page_accesses"]
    assert sampled["page_accesses"] == total
    est_total = sum(sampled["counts"]) + sampled["cold"]
    assert est_total == pytest.approx(total, rel=0.1)
    hits_exact = np.cumsum(exact["counts"]) / total
    hits_est = np.cumsum(sampled["counts"]) / total
    m = min(len(hits_exact), len(hits_est))
    assert np.max(np.abs(hits_exact[:m] - hits_est[:m])[4:]) < 0.05  # from 8 pages up


def test_describe_mix_and_format() -> None:
    tr = generate_mix("mix3", 5_000, seed=0)
    d = describe(tr)
    assert set(d["streams"]) == {0, 1} and sum(d["streams"].values()) == 5_000
    text = format_description(d)
    assert text.startswith("trace mix3: 5,000 requests") and "reads" in text and "reuse" in text


def test_describe_rejects_empty_trace() -> None:
    empty = Trace(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="empty"):
        describe(empty)


def test_describe_real_sample(shared_traces) -> None:
    """MSR excerpt (README facts: 2,020 reads of 10,000), parsed here without the readers."""
    rows = np.loadtxt(shared_traces / "msr-excerpt-rw20.trace")
    tr = Trace.from_arrays(rows[:, 0] * 1000, np.where(rows[:, 4] == 1, READ, WRITE),
                           rows[:, 2].astype(np.int64), rows[:, 3].astype(np.int64))
    d = describe(tr)
    assert d["reads"] == 2_020 and d["requests"] == 10_000
    assert d["footprint_pages"] <= d["page_accesses"]
    assert sum(d["reuse"]["counts"]) + d["reuse"]["cold"] == d["page_accesses"]
