"""The simulated HSS behaves like hardware and its API holds its contract."""
from __future__ import annotations

import numpy as np
import pytest

from hss_gym.backends import _core
from hss_gym.backends.sim import SimBackend, load_profile
from hss_gym.config import make_config
from hss_gym.hss import HSS, PAGE_META_BYTES
from hss_gym.replay import replay
from hss_gym.workloads import Trace

PAGE = 4096


def skewed_trace(n=20_000, gap_us=200.0, pages=20_000, seed=0, write_frac=0.5, npages=2):
    """Zipf-skewed random requests over `pages` pages: a small hot set, a long cold tail."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(gap_us, n))
    op = (rng.random(n) < write_frac).astype(np.uint8)
    page = (rng.zipf(1.2, n) * 7919) % pages
    return Trace.from_arrays(t, op, page * PAGE, np.full(n, npages * PAGE))


def test_page_metadata_is_16_bytes():
    assert PAGE_META_BYTES == 16


def test_reference_ordering_fast_lru_slow():
    tr = skewed_trace()
    means = {p: replay(tr, "perf_opt", p).metrics.mean_latency_us for p in ("fast_only", "lru", "slow_only")}
    assert means["fast_only"] < means["lru"] < means["slow_only"], means


def test_reference_metrics_sane():
    tr = skewed_trace()
    fast = replay(tr, "perf_opt", "fast_only").metrics
    slow = replay(tr, "perf_opt", "slow_only").metrics
    lru = replay(tr, "perf_opt", "lru").metrics
    assert fast.fast_hit_ratio == 1.0 and slow.fast_hit_ratio == 0.0
    assert 0.0 < lru.fast_hit_ratio < 1.0
    assert fast.write_amplification == 1.0 and fast.evictions == 0
    assert lru.evictions > 0 and lru.write_amplification > 1.0
    # every eviction and every fill (a first-touch read copied to the fast device) writes one page;
    # fills are necessary writes: WA = (host + filled + evicted bytes) / (host + filled bytes)
    host_written = tr.size[tr.op == 1].sum()
    assert lru.fills > 0 and fast.fills == 0  # Fast-Only's device is preloaded with the dataset
    necessary = host_written + lru.fills * PAGE
    assert lru.write_amplification == pytest.approx((necessary + lru.evictions * PAGE) / necessary)
    assert lru.migrated_pages_out[0] == lru.evictions == lru.migrated_pages_in[1]
    for m in (fast, slow, lru):
        assert m.requests == len(tr)
        assert m.mean_latency_us <= m.p99_latency_us <= m.p9999_latency_us
        assert m.throughput_rps > 0


def test_cost_opt_much_slower_than_perf_opt():
    tr = skewed_trace()
    perf = replay(tr, "perf_opt", "lru").metrics.mean_latency_us
    cost = replay(tr, "cost_opt", "lru").metrics.mean_latency_us
    assert cost > 5 * perf, (perf, cost)


def test_hdd_sequential_much_faster_than_random():
    n = 4000
    t = np.arange(n) * 20_000.0  # 20 ms apart: no queueing, pure service time
    seq = Trace.from_arrays(t, np.zeros(n), np.arange(n) * PAGE, np.full(n, PAGE))
    rnd = np.random.default_rng(1).permutation(n) * (1 << 20) * PAGE // 64
    rand = Trace.from_arrays(t, np.zeros(n), rnd, np.full(n, PAGE))
    s = replay(seq, "cost_opt", "slow_only").metrics.mean_latency_us
    r = replay(rand, "cost_opt", "slow_only").metrics.mean_latency_us
    assert r > 20 * s, (s, r)
    # and the random latency is a disk's: average seek + half a rotation, within a factor of 2
    assert 6_000 < r < 25_000


def test_latency_grows_with_arrival_rate():
    """With requests in flight beyond one per stream (queue_depth=32), they queue."""
    slow_arrivals = skewed_trace(gap_us=100.0)
    fast_arrivals = Trace.from_arrays(slow_arrivals.time_us / 50, slow_arrivals.op,
                                      slow_arrivals.offset, slow_arrivals.size)
    a = replay(slow_arrivals, "perf_opt", "slow_only", queue_depth=32).metrics.mean_latency_us
    b = replay(fast_arrivals, "perf_opt", "slow_only", queue_depth=32).metrics.mean_latency_us
    assert b > 1.5 * a, (a, b)


def test_host_queue_depth_bounds_the_replay():
    tr = skewed_trace(gap_us=1.0, n=5000)  # far beyond what an HDD sustains
    m = replay(tr, "cost_opt", "slow_only", queue_depth=4)
    hss_lat = m.latencies
    assert np.isfinite(hss_lat).all()
    # with 4 slots no request waits behind more than 3 others on the single-head HDD
    assert hss_lat.max() < 4 * 40_000


def test_closed_loop_puts_table4_workloads_on_the_papers_axis():
    """Harmonia Fig. 3/8 plot perf-opt latencies at 0-8x Fast-Only. Closed-loop replay of a
    Table-4 workload lands there; a 32-deep open-loop window measures queues far above it."""
    from hss_gym.workloads.registry import get_trace
    tr = get_trace("ycsb-b", n=20_000, seed=0)
    fast = replay(tr, "perf_opt", "fast_only").metrics.mean_latency_us
    slow = replay(tr, "perf_opt", "slow_only").metrics.mean_latency_us
    assert 2.0 < slow / fast < 8.0, (slow, fast)
    fast32 = replay(tr, "perf_opt", "fast_only", queue_depth=32).metrics.mean_latency_us
    slow32 = replay(tr, "perf_opt", "slow_only", queue_depth=32).metrics.mean_latency_us
    assert slow32 > 10 * slow and fast32 > 10 * fast  # queueing, not placement


def test_first_touch_reads_come_from_home_then_fill_the_fast_device():
    """Untouched data lives on the home device: a first read placed on the fast device is served
    by the home device (an HDD here) and copied to the fast one in the background; the next read
    hits the fast device. Preloaded (Fast-Only's ideal), the first read is fast already."""
    def reads(preloaded: bool) -> tuple[list[float], dict]:
        h = HSS("cost_opt", footprint_pages=100, preloaded=preloaded)
        lat = []
        for i, t in enumerate((0.0, 100_000.0, 200_000.0)):  # far apart: no queueing
            h.begin(t, 0, (7 + 50 * (i == 2)) * PAGE, PAGE)  # page 7, page 7 again, page 57
            lat.append(h.finish(0))
        return lat, h.counters()
    (first, again, other), c = reads(False)
    assert first > 1000 and other > 1000  # a disk read (ms)
    assert again < 100  # the Optane (µs)
    assert c["fill_pages"] == 2 and c["fast_pages"] == 1
    (first, again, other), c = reads(True)
    assert max(first, again, other) < 100 and c["fill_pages"] == 0


def test_default_replay_is_a_closed_loop_per_stream():
    """By default each stream has one request in flight (the papers' one thread per workload): a
    request arriving while the previous one is served issues when it completes, so its latency is
    its own service time, and a two-stream mix overlaps its streams."""
    tr = skewed_trace(gap_us=1.0, n=2000)  # arrivals far faster than the SATA SSD serves them
    closed = replay(tr, "perf_opt", "slow_only")
    assert HSS("perf_opt", footprint_pages=10).queue_depth == 1
    served = replay(skewed_trace(gap_us=10_000.0, n=2000), "perf_opt", "slow_only")  # never waits
    assert closed.metrics.mean_latency_us == pytest.approx(served.metrics.mean_latency_us, rel=0.05)
    assert closed.metrics.throughput_rps == pytest.approx(1e6 / closed.metrics.mean_latency_us, rel=0.05)
    open_ = replay(tr, "perf_opt", "slow_only", queue_depth=32)  # requests queue behind each other
    assert open_.metrics.mean_latency_us > 5 * closed.metrics.mean_latency_us
    order = np.argsort(np.concatenate([tr.time_us, tr.time_us + 0.5]), kind="stable")
    col = lambda a, b: np.concatenate([a, b])[order]  # noqa: E731
    two = Trace.from_arrays(col(tr.time_us, tr.time_us + 0.5), col(tr.op, tr.op),
                            col(tr.offset, tr.offset + (1 << 30)), col(tr.size, tr.size),
                            stream=col(np.zeros(len(tr), np.uint16), np.ones(len(tr), np.uint16)))
    assert two.n_streams() == 2 and HSS("perf_opt", footprint_pages=10, streams=2).queue_depth == 2
    mix = replay(two, "perf_opt", "slow_only")
    assert mix.metrics.throughput_rps > 1.5 * closed.metrics.throughput_rps  # the SSD serves both at once


def _migrate_every_step(tr: Trace, place: int, targets_every: int = 1, queue_depth: int | None = None) -> float:
    h = HSS("perf_opt", footprint_pages=tr.footprint_pages(), queue_size=10, min_interval=0,
            queue_depth=queue_depth)
    lat = []
    for i in range(len(tr)):
        h.begin(tr.time_us[i], int(tr.op[i]), int(tr.offset[i]), int(tr.size[i]))
        lat.append(h.finish(place))
        if i % targets_every == 0:
            page = h.candidate()
            if page is not None:
                info = h.page(page)
                h.enqueue(page, 1 - info["device"])
    return float(np.mean(lat)), h.counters()


def test_busy_migrations_hurt_and_idle_ones_mostly_do_not():
    busy = skewed_trace(gap_us=3.0, n=6000)   # no idle time: the queue overflows, moves run now
    idle = skewed_trace(gap_us=2000.0, n=3000)
    for tr, label in ((busy, "busy"), (idle, "idle")):
        h = HSS("perf_opt", footprint_pages=tr.footprint_pages(), queue_depth=32)  # open-loop-like
        base = h.run_fixed(tr, 1)[1].mean_latency_us
        with_moves, c = _migrate_every_step(tr, 1, queue_depth=32)
        assert c["migrations"] > 100, label
        if label == "busy":
            assert c["migrations_busy"] > 0
            assert with_moves > 1.2 * base, (base, with_moves)
        else:
            assert with_moves < 1.1 * base, (base, with_moves)


def test_same_seed_same_results_and_noise_is_seeded():
    tr = skewed_trace(n=5000)
    a = replay(tr, "tri", "lru", seed=3, noise_p=0.05, noise_sigma=1.0).latencies
    b = replay(tr, "tri", "lru", seed=3, noise_p=0.05, noise_sigma=1.0).latencies
    c = replay(tr, "tri", "lru", seed=4, noise_p=0.05, noise_sigma=1.0).latencies
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_ssd_gc_slows_writes_with_utilisation():
    m = load_profile("M")
    lat = []
    for used in (0.0, 0.99):
        be = SimBackend([m], [1000])
        h = _core.HSS(be.devices, [1000], 10, 16, 32, 1)
        h.reset(0)
        t = 0.0
        for p in range(int(used * 1000)):  # fill to the utilisation (spaced: no queueing)
            h.begin(t, 1, p * PAGE, PAGE)
            h.finish(0)
            t += 1000
        # the single device is home here, so occupy it via the counters the core keeps
        h.begin(t, 1, 5000 * PAGE, PAGE)
        lat.append(h.finish(0))
    assert lat[1] > 1.5 * lat[0], lat


def test_qlc_write_cliff():
    lssd = load_profile("LSSD")
    be = SimBackend([lssd], [10_000])  # SLC cache = 10% of 10,000 pages = 1,000 pages
    t, lats = 0.0, []
    for i in range(3000):
        end = be.io(0, 1, i * 32, 32, t)  # 128 KiB sequential writes back to back
        lats.append(end - t)
        t = end
    early, late = np.mean(lats[:20]), np.mean(lats[-200:])
    assert late > 4 * early, (early, late)
    # idle time refills the cache
    after_rest = be.io(0, 1, 0, 32, t + 60e6) - (t + 60e6)
    assert after_rest < 1.5 * early


def test_tri_and_quad_cascade_evictions():
    tr = skewed_trace(pages=40_000)
    for cfg in ("tri", "quad"):
        m = replay(tr, cfg, "lru").metrics
        n = make_config(cfg).n_devices
        assert all(m.migrated_pages_in[d] > 0 for d in range(1, n)), (cfg, m.migrated_pages_in)


def test_step_api_semantics():
    h = HSS("perf_opt", footprint_pages=1000)
    assert h.begin(0.0, 0, 0, PAGE) is True          # first touch by a read: decide
    h.finish(1)
    assert h.page(0)["device"] == 1
    assert h.begin(10.0, 0, 0, PAGE) is False        # read of a placed page: no decision
    h.finish()
    assert h.begin(20.0, 1, 0, PAGE) is True         # every write: decide
    h.finish(0)
    info = h.page(0)
    assert info["device"] == 0 and info["count"] == 3 and info["last_access"] == 3
    assert h.page(12345) is None
    with pytest.raises(RuntimeError, match="begin"):
        h.finish(0)
    h.begin(30.0, 1, PAGE, PAGE)
    with pytest.raises(ValueError, match="placement must be a device"):
        h.finish(5)


def test_migration_queue_runs_in_idle_time():
    h = HSS("perf_opt", footprint_pages=1000, min_interval=0)
    h.begin(0.0, 1, 0, PAGE)
    h.finish(1)
    assert h.enqueue(0, 0) is True
    assert h.enqueue(0, 0) is False                  # already queued
    assert h.page(0)["queued"] is True
    h.begin(1e6, 0, 8 * PAGE, PAGE)                  # a second later: idle time passed
    h.finish(1)
    assert h.page(0)["device"] == 0 and h.counters()["migrations"] == 1
    assert h.enqueue(0, 0) is False                  # "stay" is not a move


def test_clean_moves_the_lru_pages_down_in_idle_time_as_one_batch():
    """hss.clean(d, k): device d's k least recently used pages go to d + 1 in the next idle time,
    as one batch, counted as migrations (not evictions); one cleaning pending at a time."""
    h = HSS("perf_opt", footprint_pages=1000, min_interval=0)
    for i in range(8):                               # pages 0..7 on the fast device, 0 the oldest
        h.begin(float(i), 1, i * PAGE, PAGE)
        h.finish(0)
    busy = h.counters()["last_completion_us"]
    assert h.clean(0, 3) is True
    assert h.clean(0, 2) is False                    # one is pending
    assert [h.page(p)["device"] for p in range(8)] == [0] * 8
    h.begin(1e6, 0, 7 * PAGE, PAGE)                  # idle time passed: the cleaning ran
    h.finish(1)
    assert [h.page(p)["device"] for p in range(8)] == [1, 1, 1, 0, 0, 0, 0, 0]
    c = h.counters()
    assert c["migrations"] == 3 and c["evictions"] == 0 and c["used_pages"][0] == 5
    assert c["migrated_pages_out"][0] == 3 and busy < 1e6
    assert h.clean(0, 2) is True                     # pending again only after it ran
    with pytest.raises(ValueError, match="not the home device"):
        h.clean(1, 1)
    with pytest.raises(ValueError, match="k < 2"):
        h.clean(0, 0)
    with pytest.raises(ValueError, match="chunk, first < 2"):
        h.clean(0, 1, chunk=64, first=-1)


def test_clean_waits_for_idle_time():
    h = HSS("cost_opt", footprint_pages=4000, min_interval=0)
    h.begin(0.0, 1, 0, 64 * PAGE)                    # 64 pages on the fast device
    h.finish(0)
    h.begin(0.0, 1, 1000 * PAGE, 1024 * PAGE)        # a 4 MiB write keeps the HDD busy for ms
    h.finish(1)
    assert h.clean(0, 64) is True
    h.begin(10.0, 0, 0, PAGE)                        # arrives while the HDD is busy
    h.finish(0)
    assert h.counters()["migrations"] == 0           # still pending
    assert h.core.clean_pending
    h.begin(1e7, 0, 0, PAGE)
    h.finish(0)
    assert h.counters()["migrations"] == 64 and not h.core.clean_pending


def test_clean_depth_bounds_the_chunks_in_flight_into_the_home():
    """``clean_depth``: a cleaning's next chunk into the home starts in idle time only once the one
    ``depth`` chunks before it has completed, so a host read at the home waits behind fewer chunks
    (pmem: the home SSD has 6 servers, which take 5 chunks at once with no limit)."""
    latency, moved = {}, {}
    for depth in (0, 1, 3):
        h = HSS("pmem", footprint_pages=4000, min_interval=0)
        h.begin(0.0, 1, 0, 64 * PAGE)                # 64 pages on the fast device
        h.finish(0)
        h.begin(0.0, 1, 1000 * PAGE, PAGE)           # one at home, read below
        h.finish(1)
        h.core.clean_depth = depth
        assert h.core.clean_depth == depth
        assert h.clean(0, 64, chunk=4, first=4) is True
        h.begin(40.0, 0, 1000 * PAGE, PAGE)          # the cleaning ran in the 40 us before this read
        latency[depth], moved[depth] = h.finish(0), h.counters()["migrations"]
        h.begin(1e6, 0, 1000 * PAGE, PAGE)           # a long idle period: all of it runs
        h.finish(0)
        assert h.counters()["migrations"] == 64 and not h.core.clean_pending
        h.reset()
        assert h.core.clean_depth == 0
    assert latency[1] < latency[3] < latency[0] and latency[0] > 3 * latency[1], latency
    assert moved[1] < moved[3] < moved[0], moved
    for bad in (-1, 17):
        with pytest.raises(ValueError, match="clean_depth"):
            h.core.clean_depth = bad


def test_a_forced_cleaning_runs_the_pending_one_at_once():
    h = HSS("cost_opt", footprint_pages=4000, min_interval=0)
    h.begin(0.0, 1, 0, 64 * PAGE)
    h.finish(0)
    h.begin(0.0, 1, 1000 * PAGE, 1024 * PAGE)        # the HDD is busy for ms: no idle time
    h.finish(1)
    assert h.clean(0, 16) is True
    h.begin(10.0, 0, 0, PAGE)
    assert h.clean(0, 16) is False and h.counters()["migrations"] == 0
    assert h.clean(0, 16, force=True) is True        # the pending 16 ran now, 16 more are asked for
    h.finish(0)
    c = h.counters()
    assert c["migrations"] == 16 and c["used_pages"][0] == 48 and h.core.clean_pending


def test_cleaning_takes_pages_accessed_once_first_when_the_others_are_read_again():
    """The victim order adapts (as ARC): in LRU order while the cleaned pages read again are no
    more often the multiply-accessed ones; pages accessed once first once they are."""
    h = HSS("perf_opt", footprint_pages=10_000, min_interval=0)
    t = 0.0

    def access(op, page, dev=0):
        nonlocal t
        t += 1e4                                     # idle time between requests: cleanings run
        h.begin(t, op, page * PAGE, PAGE)
        h.finish(dev)

    for p in range(100):                             # a hot set (read twice) before 100 pages written once
        access(1, p)
        access(0, p)
    for p in range(1000, 1100):
        access(1, p)
    assert h.clean(0, 50)
    access(0, 5000, 1)
    assert [h.page(p)["device"] for p in (0, 49, 50, 1000)] == [1, 1, 0, 0]   # LRU: the hot set's oldest
    for p in range(50):                              # ... which is read again: misses
        access(0, p)
    assert h.counters()["clean_misses"] == 50 and h.counters()["cleaned_pages"] == 50
    assert h.clean(0, 50)
    access(0, 5001, 1)
    moved = [p for p in list(range(50, 100)) + list(range(1000, 1100)) if h.page(p)["device"] == 1]
    assert moved == list(range(1000, 1050)), moved   # now the pages written once go first


def test_no_migration_queue():
    h = HSS("perf_opt", footprint_pages=1000, queue_size=0)
    h.begin(0.0, 1, 0, PAGE)
    h.finish(1)
    assert h.enqueue(0, 0) is False


def test_scanner_skips_recent_and_finds_old_pages():
    h = HSS("perf_opt", footprint_pages=1000, min_interval=5)
    for i in range(3):
        h.begin(float(i), 1, i * PAGE, PAGE)
        h.finish(1)
    assert h.candidate() is None                     # all placed < 5 steps ago
    for i in range(3, 10):
        h.begin(float(i), 0, 100 * PAGE, PAGE)
        h.finish(1)
    assert h.candidate() in (0, 1, 2)


@pytest.mark.parametrize("kwargs, match", [
    ({"config": "perf_optt"}, "did you mean 'perf_opt'"),
    ({"config": "perf_opt", "fast_fraction": -0.1}, "fractions"),
    ({"config": "perf_opt", "queue_size": -1}, "queue_size"),
    ({"config": "perf_opt", "queue_depth": 0}, "queue_depth"),
    ({"config": ["H", "nope"]}, "unknown device 'nope'"),
    ({"config": "perf_opt", "bogus": 1}, "unknown config option"),
])
def test_bad_config_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_config(kwargs.pop("config"), **kwargs)


@pytest.mark.parametrize("field, value, match", [
    ("read_latency_us", -1, "read_latency_us"),
    ("capacity_gb", 0, "capacity_gb"),
    ("kind", "tape", "kind"),
    ("read_bandwidth_mbps", "fast", "read_bandwidth_mbps"),
])
def test_bad_profile_names_the_field(field, value, match):
    d = {"id": "X", "kind": "ssd", "capacity_gb": 100, "read_bandwidth_mbps": 500,
         "write_bandwidth_mbps": 500, "read_latency_us": 50, "write_latency_us": 50,
         "read_iops": 1e5, "write_iops": 1e5}
    d[field] = value
    with pytest.raises(ValueError, match=match):
        make_config(["H", d])


def test_user_profile_file(tmp_path):
    p = tmp_path / "nvme.json"
    p.write_text('{"id": "N", "kind": "ssd", "capacity_gb": 1000, "read_bandwidth_mbps": 3000,'
                 ' "write_bandwidth_mbps": 2000, "read_latency_us": 80, "write_latency_us": 20,'
                 ' "read_iops": 500000, "write_iops": 400000}')
    cfg = make_config(["H", str(p)])
    assert cfg.devices[1].id == "N" and cfg.n_devices == 2
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="invalid JSON at line 1"):
        make_config(["H", str(tmp_path / "broken.json")])


@pytest.mark.parametrize("col, value, match", [
    ("size", -4096, "size"), ("offset", -1, "offset"), ("op", 7, "op"),
])
def test_bad_trace_is_a_clear_error(col, value, match):
    arrays = {"time_us": [0.0, 1.0], "op": [0, 1], "offset": [0, 4096], "size": [4096, 4096]}
    arrays[col][1] = value
    with pytest.raises(ValueError, match=match):
        Trace.from_arrays(**arrays)


def test_empty_trace_and_footprint_are_clear_errors():
    empty = Trace(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="zero requests"):
        replay(empty)
    with pytest.raises(ValueError, match="footprint_pages"):
        HSS("perf_opt", footprint_pages=0)


def test_replay_rejects_bad_rows_in_native_path():
    h = HSS("perf_opt", footprint_pages=10)
    lat = np.empty(2)
    with pytest.raises(ValueError, match="request 1"):
        h.core.replay(np.array([0.0, 1.0]), np.array([0, 1], np.uint8), np.array([0, 0], np.int64),
                      np.array([4096, 0], np.int64), 0, lat)
    with pytest.raises(TypeError, match="offset"):
        h.core.replay(np.array([0.0]), np.array([0], np.uint8), np.array([0.0]),
                      np.array([4096], np.int64), 0, lat)


def test_memory_per_touched_page():
    n = 1 << 18
    tr = Trace.from_arrays(np.arange(n, dtype=float), np.ones(n), np.arange(n) * PAGE, np.full(n, PAGE))
    h = HSS("perf_opt", footprint_pages=n, capacities=(n, None))
    h.run_fixed(tr, 1)                         # home device: page table only
    assert h.memory_bytes() / n < 16.1
    h.run_fixed(tr, 0)                         # all on the fast device: + one 8-byte LRU entry
    assert h.memory_bytes() / n < 16.1 + 8 * 1.01


def test_real_trace_replay(shared_traces):
    from hss_gym.workloads.readers import load_trace
    tr = load_trace(shared_traces / "msr-excerpt-rw20.trace")
    assert len(tr) == 10_000
    ms = {p: replay(tr, "perf_opt", p).metrics for p in ("fast_only", "lru", "slow_only")}
    assert ms["fast_only"].mean_latency_us <= ms["lru"].mean_latency_us <= ms["slow_only"].mean_latency_us


def test_footprint_pages_counts_distinct_pages():
    """footprint_pages (a union of page ranges) equals the set of pages the requests touch."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        offset = rng.integers(0, 64, n) * 4096 + rng.integers(0, 4096, n) * rng.integers(0, 2, n)
        size = rng.integers(1, 20 * 4096, n)
        tr = Trace(np.arange(n, dtype=float), np.zeros(n, dtype=np.uint8), offset, size)
        pages = {p for o, s in zip(offset.tolist(), size.tolist()) for p in range(o // 4096, (o + s - 1) // 4096 + 1)}
        assert tr.footprint_pages() == len(pages)


def test_a_request_time_must_be_finite():
    """NaN or an infinite time would poison every later time: begin() refuses it, saying why,
    and the HSS takes the next request as if it had not been offered."""
    h = HSS("perf_opt", footprint_pages=100)
    for t in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ValueError, match="request time .*must be a finite"):
            h.begin(t, 0, 0, PAGE)
    h.begin(10.0, 0, 0, PAGE)
    assert np.isfinite(h.finish(0))
