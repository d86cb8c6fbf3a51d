"""Synthetic generators and Table 5 mixes: fidelity to Harmonia Table 4, determinism, locality."""
from __future__ import annotations

import time

import numpy as np
import pytest

from hss_gym.workloads import PAGE_SIZE, READ, WRITE
from hss_gym.workloads import synthetic
from hss_gym.workloads.mixes import MIXES, generate_mix, make_mix
from hss_gym.workloads.registry import make_trace

NAMES = synthetic.workload_names()
N = 100_000
TOL = 0.05  # relative tolerance on read %, mean size and mean gap


@pytest.fixture(scope="module")
def traces() -> dict:
    """Every synthetic workload at n = 100,000, seed 0 (about 15 ms each)."""
    return {name: synthetic.generate(name, N, seed=0) for name in NAMES}


def test_names_cover_table4_and_ycsb_a() -> None:
    table4 = [n for n, t in synthetic.TARGETS.items() if t.source == "Harmonia Table 4"]
    assert len(table4) == 17
    assert set(NAMES) == set(table4) | {"ycsb-a"}
    assert all(n == n.lower() for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_fidelity_to_table4(traces: dict, name: str) -> None:
    # Read %: the read count is exactly round(read_fraction * n), so the read share is within
    # 5% *relative* of the table even for LUN0's 0.2% (200 reads of 100,000); no absolute slack.
    tr, target = traces[name], synthetic.TARGETS[name]
    read_pct = 100.0 * np.mean(tr.op == READ)
    mean_kib = tr.size.mean() / 1024
    mean_gap = np.diff(tr.time_us).mean()
    assert read_pct == pytest.approx(target.read_pct, rel=TOL)
    assert mean_kib == pytest.approx(target.size_kib, rel=TOL)
    assert mean_gap == pytest.approx(target.gap_us, rel=TOL)


@pytest.mark.parametrize("name", ["lun0", "lun4", "ssd-02", "ycsb-f", "cosmoflow"])
def test_fidelity_holds_at_smaller_n(name: str) -> None:
    tr, target = synthetic.generate(name, 20_000, seed=3), synthetic.TARGETS[name]
    assert 100.0 * np.mean(tr.op == READ) == pytest.approx(target.read_pct, rel=TOL)
    assert tr.size.mean() / 1024 == pytest.approx(target.size_kib, rel=TOL)
    assert np.diff(tr.time_us).mean() == pytest.approx(target.gap_us, rel=2 * TOL)


@pytest.mark.parametrize("name", NAMES)
def test_trace_invariants(traces: dict, name: str) -> None:
    tr = traces[name]
    p = tr.source["params"]
    assert len(tr) == N
    assert tr.time_us[0] == 0.0 and np.all(np.diff(tr.time_us) >= 0)
    assert np.all(tr.offset % PAGE_SIZE == 0) and np.all(tr.size % PAGE_SIZE == 0)
    assert tr.size.min() >= PAGE_SIZE and tr.size.max() <= p["max_size_kib"] * 1024
    assert tr.offset.min() >= 0
    assert (tr.offset + tr.size).max() <= p["footprint_gib"] * (1 << 30)
    assert np.all(tr.stream == 0)
    assert set(np.unique(tr.op)) <= {READ, WRITE}
    assert tr.name == name
    src = tr.source
    assert src["kind"] == "synthetic" and src["generator"] == name
    assert src["seed"] == 0 and src["n"] == N and "hss_gym_version" in src
    assert set(synthetic.default_params(name)) == set(p)


@pytest.mark.parametrize("name", NAMES)
def test_determinism(name: str) -> None:
    a = synthetic.generate(name, 5_000, seed=7)
    b = synthetic.generate(name, 5_000, seed=7)
    c = synthetic.generate(name, 5_000, seed=8)
    for col in ("time_us", "op", "offset", "size", "stream"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    assert a.source == b.source
    assert not np.array_equal(a.offset, c.offset)
    assert not np.array_equal(a.time_us, c.time_us)


@pytest.mark.parametrize("name", ["lun2", "ycsb-d", "resnet50"])
def test_source_regenerates_exactly(name: str) -> None:
    a = synthetic.generate(name, 3_000, seed=11, footprint_gib=2.0)
    src = a.source
    b = make_trace(src["generator"], n=src["n"], seed=src["seed"], **src["params"])
    for col in ("time_us", "op", "offset", "size"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))


def test_footprint_parameter_bounds_addresses() -> None:
    tr = synthetic.generate("ssd-00", 20_000, seed=0, footprint_gib=0.5)
    assert (tr.offset + tr.size).max() <= 0.5 * (1 << 30)
    assert tr.source["params"]["footprint_gib"] == 0.5


def test_parameter_errors() -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        synthetic.generate("lun0", 10, hot_fractoin=0.1)
    with pytest.raises(ValueError, match="read_fraction"):
        synthetic.generate("lun0", 10, read_fraction=1.5)
    with pytest.raises(ValueError, match="request_distribution"):
        synthetic.generate("ycsb-b", 10, request_distribution="uniform")
    with pytest.raises(ValueError, match="footprint_gib"):
        synthetic.generate("ycsb-b", 10, footprint_gib=0.001)
    with pytest.raises(ValueError, match="mean read/write sizes"):
        synthetic.generate("ssd-02", 10, mean_size_kib=2.0)
    with pytest.raises(ValueError, match="n must be"):
        synthetic.generate("lun0", 0)


def test_overrides_change_the_statistics() -> None:
    tr = synthetic.generate("ycsb-b", 20_000, seed=0, read_fraction=0.9, mean_size_kib=16,
                            mean_gap_us=100.0)
    assert np.mean(tr.op == READ) == pytest.approx(0.9, abs=1e-4)
    assert tr.size.mean() / 1024 == pytest.approx(16, rel=TOL)
    assert np.diff(tr.time_us).mean() == pytest.approx(100.0, rel=TOL)


def test_write_size_ratio() -> None:
    tr = synthetic.generate("ssd-00", N, seed=0)
    ratio = tr.size[tr.op == WRITE].mean() / tr.size[tr.op == READ].mean()
    assert ratio == pytest.approx(2.0, rel=0.1)
    assert tr.size.mean() / 1024 == pytest.approx(108.9, rel=TOL)


def test_generation_speed() -> None:
    synthetic.generate("ycsb-b", 1_000, seed=0)  # warm the size-law and zeta caches
    start = time.perf_counter()
    tr = synthetic.generate("ycsb-b", 1_000_000, seed=0)
    assert len(tr) == 1_000_000
    assert time.perf_counter() - start < 3.0


# --- locality models -------------------------------------------------------------------------


def _top_share(keys: np.ndarray, fraction: float, universe: int | None = None) -> float:
    """Share of ``keys`` falling on the ``fraction`` most frequent values (of ``universe``)."""
    counts = np.sort(np.unique(keys, return_counts=True)[1])[::-1]
    top = int(np.ceil(fraction * (universe if universe is not None else len(counts))))
    return counts[:top].sum() / len(keys)


def test_zipf_ranks_match_the_zipf_law() -> None:
    rng = np.random.default_rng(0)
    n_items, theta = 1000, 0.99
    ranks = synthetic.zipf_ranks(rng, 200_000, n_items, theta)
    assert ranks.min() >= 0 and ranks.max() < n_items
    expect = 1.0 / np.sum(np.arange(1, n_items + 1) ** -theta)
    assert np.mean(ranks == 0) == pytest.approx(expect, rel=0.05)
    assert np.mean(ranks == 1) == pytest.approx(expect * 2 ** -theta, rel=0.05)
    assert np.mean(ranks < 100) > 0.6  # 10% of items, most of the mass


def test_scatter_is_a_bijection() -> None:
    for n_items in (1, 2, 10, 997, 1024, 65536):
        slots = synthetic.scatter(np.arange(n_items), n_items, shift=3)
        assert sorted(slots.tolist()) == list(range(n_items))


@pytest.mark.parametrize("name", ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-f"])
def test_ycsb_zipf_reads_are_skewed(traces: dict, name: str) -> None:
    tr = traces[name]
    reads = tr.offset[tr.op == READ]
    assert _top_share(reads, 0.10) > 0.5  # top 10% of read records get most reads


def test_ycsb_d_reads_the_latest_records(traces: dict) -> None:
    tr = traces["ycsb-d"]
    p = tr.source["params"]
    fp_pages = round(p["footprint_gib"] * (1 << 30) / PAGE_SIZE)
    rec_pages = round(p["record_kib"] * 1024 / PAGE_SIZE)
    log_pages = int(p["log_fraction"] * fp_pages)
    slots = (fp_pages - log_pages) // rec_pages
    slot = tr.offset // PAGE_SIZE // rec_pages
    # Inserts are the writes outside the log region, appended in slot order after the records
    # loaded up front; a read's distance behind the newest record is small for most reads.
    inserts = (tr.op == WRITE) & (tr.offset < (fp_pages - log_pages) * PAGE_SIZE)
    assert np.all(np.diff(slot[inserts]) == 1)
    frontier = np.maximum.accumulate(np.where(inserts, slot, int(p["initial_fill"] * slots) - 1))
    behind = ((frontier - slot) % slots)[tr.op == READ]
    assert np.mean(behind < 0.01 * slots) > 0.4


def test_ycsb_e_reads_are_short_scans(traces: dict) -> None:
    tr = traces["ycsb-e"]
    off, size = tr.offset[tr.op == READ], tr.size[tr.op == READ]
    sequential = np.mean(off[1:] == off[:-1] + size[:-1])
    assert sequential > 0.9  # runs of 1..100 records, mean 50.5: ~98% continue a run


def test_ycsb_f_read_modify_write(traces: dict) -> None:
    tr = traces["ycsb-f"]
    rmw = (tr.op[1:] == WRITE) & (tr.op[:-1] == READ) & (tr.offset[1:] == tr.offset[:-1]) \
        & (tr.size[1:] == tr.size[:-1])
    reads = int(np.sum(tr.op == READ))
    assert int(rmw.sum()) == pytest.approx(0.5 * reads, rel=0.02)


def test_vdi_hot_set_takes_most_writes(traces: dict) -> None:
    tr = traces["lun0"]
    p = tr.source["params"]
    chunk = 1 << 20
    universe = int(p["footprint_gib"] * (1 << 30)) // chunk
    epoch = tr.slice(0, p["drift_interval"])  # before any drift
    writes = epoch.offset[epoch.op == WRITE] // chunk
    assert _top_share(writes, 0.03, universe) > 0.75  # 3% of the space, most of the writes
    seq = np.mean(tr.offset[1:] == tr.offset[:-1] + tr.size[:-1])
    assert seq > 0.5  # log-like sequential write runs


def test_vdi_working_set_drifts() -> None:
    tr = synthetic.generate("lun1", 80_000, seed=0, drift_interval=20_000, drift_share=1.0)
    chunk = 1 << 25
    hot_first = {c for c, k in zip(*np.unique(tr.offset[:20_000] // chunk, return_counts=True))
                 if k > 200}
    hot_last = {c for c, k in zip(*np.unique(tr.offset[60_000:] // chunk, return_counts=True))
                if k > 200}
    assert hot_first and hot_last and len(hot_first & hot_last) < len(hot_first) / 2


def test_vdi_arrivals_are_bursty(traces: dict) -> None:
    gaps = np.diff(traces["lun3"].time_us)
    assert gaps.std() / gaps.mean() > 1.5  # exponential would be 1
    gaps = np.diff(traces["ycsb-b"].time_us)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)


def test_rocksdb_reads_skewed_over_files_and_writes_sequential(traces: dict) -> None:
    tr = traces["ssd-02"]
    p = tr.source["params"]
    file_bytes = int(p["sst_file_mib"] * (1 << 20))
    files = int(p["footprint_gib"] * (1 << 30)) // file_bytes
    assert _top_share(tr.offset[tr.op == READ] // file_bytes, 0.1, files) > 0.4
    w = tr.op == WRITE
    off, size = tr.offset[w], tr.size[w]
    assert np.mean(off[1:] == off[:-1] + size[:-1]) > 0.95  # compaction runs of ~64 writes


@pytest.mark.parametrize("name", ["resnet50", "cosmoflow"])
def test_mlperf_sequential_epochs_and_checkpoints(traces: dict, name: str) -> None:
    tr = traces[name]
    p = tr.source["params"]
    r = tr.op == READ
    off, size = tr.offset[r], tr.size[r]
    assert np.mean(off[1:] == off[:-1] + size[:-1]) > 0.9  # mostly sequential
    # An epoch reads each file once: the first (dataset / 2) bytes read touch distinct pages.
    fp_pages = round(p["footprint_gib"] * (1 << 30) / PAGE_SIZE)
    file_pages = round(p["file_mib"] * (1 << 20) / PAGE_SIZE)
    files = (fp_pages - int(p["checkpoint_fraction"] * fp_pages)) // file_pages
    data = files * file_pages * PAGE_SIZE  # whole files; the checkpoint slots follow
    half = int(np.searchsorted(np.cumsum(size), data / 2))
    count = size[:half] // PAGE_SIZE
    first = np.repeat(off[:half] // PAGE_SIZE, count)
    pages = first + np.arange(len(first)) - np.repeat(np.cumsum(count) - count, count)
    assert len(np.unique(pages)) > 0.97 * len(pages)
    # Checkpoint writes: bursts of checkpoint_requests sequential writes after the dataset.
    w = ~r
    assert tr.offset[w].min() >= data and np.all(tr.offset[r] < data)
    assert np.sum(w[:p["checkpoint_requests"] * 3]) <= p["checkpoint_requests"]
    wo, ws = tr.offset[w], tr.size[w]
    assert np.mean(wo[1:] == wo[:-1] + ws[:-1]) > 0.95


# --- mixes -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mix_traces() -> dict:
    return {name: generate_mix(name, 30_000, seed=0) for name in MIXES}


def test_table5_components() -> None:
    assert list(MIXES) == [f"mix{i}" for i in range(1, 7)]
    assert MIXES["mix4"] == ("ssd-00", "ssd-04", "ycsb-a", "lun0")
    assert len(MIXES["mix6"]) == 8
    assert all(c in synthetic.TARGETS for parts in MIXES.values() for c in parts)


@pytest.mark.parametrize("name", list(MIXES))
def test_mix_structure(mix_traces: dict, name: str) -> None:
    tr = mix_traces[name]
    comps = MIXES[name]
    assert len(tr) == 30_000 and tr.name == name
    assert np.all(np.diff(tr.time_us) >= 0) and tr.time_us[0] >= 0
    assert set(np.unique(tr.stream)) == set(range(len(comps)))  # every component present
    regions = []
    for i, info in enumerate(tr.source["streams"]):
        assert info["workload"] == comps[i] and info["stream"] == i
        m = tr.stream == i
        lo, hi = info["region_offset"], info["region_offset"] + info["region_bytes"]
        assert tr.offset[m].min() >= lo and (tr.offset[m] + tr.size[m]).max() <= hi
        assert info["kept"] == int(m.sum())
        regions.append((lo, hi))
    regions.sort()
    assert all(a[1] <= b[0] for a, b in zip(regions, regions[1:]))  # disjoint


def test_mix_streams_keep_their_own_statistics(mix_traces: dict) -> None:
    tr = mix_traces["mix3"]  # YCSB-C + YCSB-F, similar rates: about half each
    for i, comp in enumerate(MIXES["mix3"]):
        m = tr.stream == i
        target = synthetic.TARGETS[comp]
        assert 100 * np.mean(tr.op[m] == READ) == pytest.approx(target.read_pct, rel=0.05)
        assert np.diff(tr.time_us[m]).mean() == pytest.approx(target.gap_us, rel=0.05)
    # Rate-proportional split: each stream's share matches its rate share.
    rates = np.array([1 / synthetic.TARGETS[c].gap_us for c in MIXES["mix3"]])
    share = np.bincount(tr.stream) / len(tr)
    np.testing.assert_allclose(share, rates / rates.sum(), atol=0.02)


def test_mix_is_concurrent(mix_traces: dict) -> None:
    tr = mix_traces["mix1"]  # ssd-02 (3.3 us) + lun4 (823 us)
    lun4 = tr.time_us[tr.stream == 1]
    assert lun4[0] < 0.2 * tr.time_us[-1] and lun4[-1] > 0.8 * tr.time_us[-1]


def test_mix_determinism_and_source() -> None:
    a = generate_mix("mix4", 5_000, seed=2)
    b = make_trace("MIX4", n=5_000, seed=2)
    c = generate_mix("mix4", 5_000, seed=3)
    for col in ("time_us", "op", "offset", "size", "stream"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    assert not np.array_equal(a.time_us, c.time_us)
    assert a.source["generator"] == "mix4" and a.source["n"] == 5_000
    assert [s["workload"] for s in a.source["streams"]] == list(MIXES["mix4"])


def test_custom_mix_and_footprint_scale() -> None:
    tr = make_mix(["ycsb-b", "ycsb-b"], 4_000, seed=0, footprint_scale=0.25, name="twins")
    assert tr.name == "twins" and set(np.unique(tr.stream)) == {0, 1}
    assert all(s["region_bytes"] == (1 << 30) for s in tr.source["streams"])
    with pytest.raises(ValueError):
        make_mix([], 10)
    with pytest.raises(ValueError, match="unknown mix"):
        generate_mix("mix7")
