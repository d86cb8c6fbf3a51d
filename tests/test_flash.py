"""The flash SSD model (backends/flash): API contract, accounting invariants, bad input."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from hss_gym.backends.flash import FlashProfileError, FlashSSD, WindowStats, load_profile, submit_trace
from hss_gym.workloads.trace import Trace

SMALL = dict(scale=1 / 64)


def _random(n, rng, cap, span_us, write_frac, streams=1, size=4096):
    t = np.sort(rng.uniform(0, span_us, n))
    off = rng.integers(0, cap // size, n) * size
    return t, rng.integers(0, streams, n), off, np.full(n, size), rng.random(n) < write_frac


@pytest.mark.parametrize("name", ["mqsim-default", "rlalloc", "fleetio"])
def test_profiles_load_and_derive(name):
    p = load_profile(name)
    assert p.n_units == p.n_channels * p.chips_per_channel
    assert p.logical_pages == int(p.physical_pages * (1 - p.op_ratio))
    s = load_profile(name, **SMALL)
    assert s.blocks_per_plane < p.blocks_per_plane and s.n_units == p.n_units and s.read_us == p.read_us
    assert s == p.scaled(1 / 64)


def test_rlalloc_profile_is_table_ii():
    p = load_profile("rlalloc")
    assert (p.n_channels, p.chips_per_channel, p.dies_per_chip, p.planes_per_die, p.blocks_per_plane,
            p.pages_per_block, p.page_size) == (8, 8, 2, 2, 2048, 64, 4096)
    assert p.physical_pages * p.page_size == 128 * 2**30


def test_window_accounting_and_totals():
    p = load_profile("mqsim-default", **SMALL)
    ssd = FlashSSD(p, n_streams=2, queue_depth=[4, 8], precondition=0.7, slo_us=[1000.0, 1e9])
    rng = np.random.default_rng(1)
    ssd.submit(*_random(3000, rng, p.logical_bytes, 300_000, 0.5, streams=2))
    windows = [ssd.run_until(t) for t in np.arange(1, 11) * 100_000.0] + [ssd.run_until(1e8)]
    assert all(isinstance(w, WindowStats) for w in windows)
    tot = ssd.totals()
    assert tot.completed.sum() == 3000 == sum(w.completed.sum() for w in windows)
    assert (tot.reads + tot.writes == tot.completed).all()
    assert tot.read_bytes.sum() + tot.write_bytes.sum() == 3000 * 4096
    assert len(ssd.latencies()) == 3000 and len(ssd.latencies(1)) == tot.completed[1]
    assert windows[-1].backlog.sum() == 0
    # a 4 KiB read cannot beat the array read plus the transfer of its data
    assert ssd.latencies().min() >= p.read_us + 4096 / p.channel_bandwidth_Bps * 1e6
    assert tot.slo_violations[1] == 0 and tot.slo_violations[0] > 0
    assert np.all((tot.channel_busy >= 0) & (tot.channel_busy <= 1))
    assert np.all((tot.unit_busy >= 0) & (tot.unit_busy <= 1))
    assert tot.write_amplification >= 1.0
    ssd.close()


def test_set_units_confines_writes():
    p = load_profile("mqsim-default", **SMALL)
    ssd = FlashSSD(p, n_streams=2, precondition=None)
    ssd.set_units(0, [0, 5])
    assert list(ssd.units(0)) == [0, 5] and len(ssd.units(1)) == p.n_units
    rng = np.random.default_rng(2)
    t, _, off, size, _ = _random(400, rng, p.logical_bytes, 100_000, 1.0)
    ssd.submit(t, np.zeros(400, dtype=np.int32), off, size, np.ones(400, bool))
    ssd.run_until(1e7)
    valid = ssd.totals().unit_valid_frac
    assert valid[[0, 5]].sum() > 0 and np.delete(valid, [0, 5]).sum() == 0


def test_bad_input_errors(tmp_path):
    p = load_profile("mqsim-default", **SMALL)
    ssd = FlashSSD(p, n_streams=2, precondition=None)
    with pytest.raises(ValueError, match="unit 32 does not exist"):
        ssd.set_units(0, [1, 32])
    with pytest.raises(ValueError, match="stream 2 does not exist"):
        ssd.set_units(2, [0])
    with pytest.raises(ValueError, match="past the logical capacity"):
        ssd.submit([0.0], [0], [p.logical_bytes - 4096], [8192], [False])
    with pytest.raises(ValueError, match="priority level 3"):
        ssd.set_priority(0, 3)
    with pytest.raises(FlashProfileError, match="blocks_per_plane"):
        load_profile("mqsim-default").__class__(**{**load_profile("mqsim-default").__dict__, "blocks_per_plane": 0})
    d = json.loads((load_profile.__globals__["PROFILE_DIR"] / "rlalloc.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**d, "chanels": 3}))
    with pytest.raises(FlashProfileError, match="unknown field.*chanels"):
        load_profile(bad)
    d.pop("read_us")
    bad.write_text(json.dumps(d))
    with pytest.raises(FlashProfileError, match="missing field.*read_us"):
        load_profile(bad)
    with pytest.raises(FlashProfileError, match="no flash profile"):
        load_profile("nope")


def test_submit_trace_maps_streams():
    p = load_profile("mqsim-default", **SMALL)
    ssd = FlashSSD(p, n_streams=2, precondition=0.5)
    n = 200
    tr = Trace(np.arange(n) * 50.0, np.zeros(n, np.uint8), np.arange(n) * 8192, np.full(n, 8192),
               stream=np.where(np.arange(n) % 2, 7, 3))
    submit_trace(ssd, tr, streams={3: 0, 7: 1})
    ssd.run_until(1e6)
    assert list(ssd.totals().completed) == [100, 100]
    with pytest.raises(ValueError, match="no entry in the stream map"):
        submit_trace(ssd, tr, streams={3: 0})
    far = Trace([0.0], [0], [p.logical_bytes], [4096])
    with pytest.raises(ValueError, match="past the device's logical capacity"):
        submit_trace(ssd, far)


def test_gc_runs_and_state_stays_consistent():
    # small blocks so that GC starts within a short run
    p = dataclasses.replace(load_profile("mqsim-default"), blocks_per_plane=64, pages_per_block=32)
    ssd = FlashSSD(p, n_streams=2, queue_depth=16, precondition=0.85)
    rng = np.random.default_rng(3)
    n = 40000
    ssd.submit(*_random(n, rng, p.logical_bytes, 2_000_000, 1.0, streams=2, size=8192))
    ws = [ssd.run_until(t) for t in np.arange(1, 21) * 1e6] + [ssd.run_until(1e9)]
    ssd._sim.check()  # mapping, reverse map, valid counts and free blocks agree
    tot = ssd.totals()
    assert tot.completed.sum() == n
    assert tot.gc_runs_total > 0 and tot.gc_moved_pages.sum() > 0
    assert tot.write_amplification == pytest.approx(1 + tot.gc_moved_pages.sum() / tot.write_tx.sum())
    assert any(w.in_gc.any() for w in ws)
    assert (ssd.device_latencies() <= ssd.latencies() + 1e-9).all()


def test_priority_serves_high_first():
    p = load_profile("mqsim-default", **SMALL)
    ssd = FlashSSD(p, n_streams=2, queue_depth=64, precondition=0.5)
    ssd.set_priority(0, 2)
    ssd.set_priority(1, 0)
    rng = np.random.default_rng(4)
    n = 20000
    t, _, off, size, _ = _random(n, rng, p.logical_bytes, 20_000, 0.0)
    ssd.submit(t, np.arange(n) % 2, off, size, np.zeros(n, bool))
    ssd.run_until(1e7)
    hi, lo = ssd.device_latencies(0).mean(), ssd.device_latencies(1).mean()
    assert hi < 0.8 * lo


def test_partial_page_write_reads_old_data_first():
    p = load_profile("mqsim-default", **SMALL)  # 8 KiB pages
    ssd = FlashSSD(p, n_streams=1, queue_depth=1, precondition=None)
    # first half of page 0 (nothing to read), second half (reads the first), first half again
    ssd.submit([0.0, 0.0, 0.0], [0, 0, 0], [0, 4096, 0], [4096, 4096, 4096], [True, True, True])
    ssd.run_until(1e5)
    first, second, third = ssd.device_latencies()
    # a 4 KiB write to a page whose other 4 KiB are on flash first reads them (one array read more)
    assert second - first == pytest.approx(p.read_us, rel=0.25)
    assert third == pytest.approx(second)


def test_mqsim_ssdconfig_loader(tmp_path):
    from hss_gym.backends.flash.mqsim_anchor import mqsim_source

    src = mqsim_source()
    if src is None:
        pytest.skip("../shared/anchors/MQSim not found: the ssdconfig.xml loader is checked on MQSim's own file")
    prof = load_profile(src / "ssdconfig.xml")
    ref = load_profile("mqsim-default")
    fields = ("n_channels", "chips_per_channel", "dies_per_chip", "planes_per_die", "blocks_per_plane",
              "pages_per_block", "page_size", "op_ratio", "gc_threshold", "read_us", "program_us", "erase_us",
              "channel_mtps", "channel_width_bytes")
    assert all(getattr(prof, f) == getattr(ref, f) for f in fields)
    text = (src / "ssdconfig.xml").read_text()
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace("<Chip_No_Per_Channel>", "<Chips_Per_Channel>").replace("</Chip_No_Per_Channel>", "</Chips_Per_Channel>"))
    with pytest.raises(FlashProfileError, match=r"line \d+: unknown field <Chips_Per_Channel>"):
        load_profile(bad)
    bad.write_text(text.replace("<Block_No_Per_Plane>2048<", "<Block_No_Per_Plane>many<"))
    with pytest.raises(FlashProfileError, match="Block_No_Per_Plane> must be a number"):
        load_profile(bad)


def test_stream_ranges_lay_out_preconditioned_data_on_the_streams_units():
    p = load_profile("fleetio", **SMALL)
    quarter = p.logical_bytes // 4
    units = [list(range(16 * k, 16 * k + 16)) for k in range(4)]
    ssd = FlashSSD(p, n_streams=4, precondition=0.7, stream_units=units,
                   stream_ranges=[(k * quarter, (k + 1) * quarter) for k in range(4)])
    valid = ssd.totals().unit_valid_frac
    assert valid.min() > 0.5 and abs(valid.max() - valid.min()) < 0.05
    ssd._sim.check()
    # stream 2 reads only its own range: only its own units' chips (and channels) work
    rng = np.random.default_rng(5)
    n = 500
    off = 2 * quarter + rng.integers(0, quarter // 16384, n) * 16384
    ssd.submit(np.arange(n) * 100.0, np.full(n, 2), off, np.full(n, 16384), np.zeros(n, bool))
    ssd.run_until(1e6)
    busy = ssd.totals().unit_busy
    assert busy[32:48].min() > 0 and np.delete(busy, range(32, 48)).max() == 0
    with pytest.raises(ValueError, match="overlap"):
        FlashSSD(p, n_streams=2, precondition=0.5, stream_ranges=[(0, 2 * quarter), (quarter, 3 * quarter)])
    with pytest.raises(ValueError, match="stream_ranges"):
        FlashSSD(p, n_streams=2, precondition=0.5, stream_ranges=[(0, 4 * quarter + 1), None])


def _mqsim_blocks_oracle(assigned: int, B: int, G: int, thr: int, occupancy: float, op: float,
                         share: float = 1.0) -> int:
    """Blocks MQSim's preconditioning consumes in a plane for one stream's assigned pages
    (FTL::Perform_precondition, Utils::Euler_estimation and Allocate_address_for_preconditioning,
    transcribed from MQSim's source independently of the C model)."""
    from math import comb

    rho = occupancy * (1 - op) / (1 - thr / B)
    mu = [comb(G, i) * rho ** i * (1 - rho) ** (G - i) for i in range(G + 1)]
    w0 = [1.0] + [sum(mu[i:]) for i in range(1, G + 2)]
    w = [1.0] + [0.0] * (G + 1)
    diff, itr = 1e14, 0
    while itr < 10000 and diff > 1e-10:
        sigma = sum(w0[j] ** 30 for j in range(1, G + 1))
        for i in range(1, G):
            w[i] = w0[i] + 0.001 * (1 - w0[i] ** 30 - (G - sigma) * ((i * (w0[i] - w0[i + 1])) / (G * rho)))
        diff = max([abs(w[0] - w0[0])] + [abs(w[i] - w0[i]) for i in range(1, G + 1)])
        w0[1:] = w[1:]
        itr += 1
    dist = [w0[i] - w0[i + 1] for i in range(G + 1)]
    goal = int((B - thr // 2) * share)
    model, real = sum(p * i / G for i, p in enumerate(dist)), assigned / (goal * G)
    adj = list(dist)
    if abs(model - real) * G > 0.9999:
        d = int((real - model) * G)
        adj = ([0.0] * d + dist[:G - d] if d > 0 else dist[-d:G] + [0.0] * -d) + [dist[G]]
    total = sum(v * int(adj[v] * goal) for v in range(G + 1))
    need, left, remaining, used, v = max(0, assigned - total), assigned, goal, 0, G
    while v >= 0:
        k = int(adj[v] * goal)
        if k > 0 and need > 0:
            k, need = k + -(-need // v), 0
        k = min(k, remaining)
        remaining -= k
        for _ in range(k):
            v = min(v, left)
            left -= v
            used += 1
        v -= 1
    assert left == 0
    return used


def test_precondition_pages_and_mqsim_layout():
    """precondition= an array of logical pages maps exactly those; precondition_layout="mqsim" uses
    as many blocks per plane as MQSim's preconditioning (checked against a transcription of it)."""
    p = dataclasses.replace(load_profile("rlalloc"), n_channels=2, chips_per_channel=2, dies_per_chip=1,
                            planes_per_die=2, blocks_per_plane=256, pages_per_block=64, op_ratio=0.07,
                            gc_threshold=0.05)
    n_planes, unit_pages = 8, 2 * 256 * 64
    logical = int(n_planes * 256 * 64 * (1 - 0.07))
    pages = np.arange(int(0.7 * logical) // n_planes * n_planes)  # CWDP: as many in every plane
    for layout in ("linear", "mqsim"):
        ssd = FlashSSD(p, precondition=pages, map_unwritten_reads=True, precondition_layout=layout)
        ssd._sim.check()
        tot = ssd.totals()
        assert round(float((tot.unit_valid_frac * unit_pages).sum())) == len(pages)
        if layout == "mqsim":
            used = _mqsim_blocks_oracle(len(pages) // n_planes, 256, 64, 12, len(pages) / logical, 0.07)
            assert list(tot.unit_free_blocks) == [2 * (256 - used)] * 4
        else:
            assert list(tot.unit_free_blocks) == [2 * (12 + 1)] * 4  # the GC threshold and a frontier
        # reads of preconditioned pages find data; reads of others map new pages (MQSim's reads)
        for first, grows in ((0, False), (len(pages), True)):
            before = float((ssd.totals().unit_valid_frac * unit_pages).sum())
            off = (first + np.arange(50)) * p.page_size
            ssd.submit(np.zeros(50), np.zeros(50, np.int32), off, np.full(50, p.page_size), np.zeros(50, bool))
            ssd.run_until(ssd.now_us + 1e6)
            after = float((ssd.totals().unit_valid_frac * unit_pages).sum())
            assert after - before == (50 if grows else 0)
        ssd.close()
    # two streams in their own halves: each its own blocks over half of every plane
    half = logical // 2 // n_planes * n_planes
    k = int(0.7 * half) // n_planes * n_planes
    two = np.concatenate([np.arange(k), half + np.arange(k)])
    ssd = FlashSSD(p, n_streams=2, precondition=two, precondition_layout="mqsim",
                   stream_ranges=[(0, half * p.page_size), (half * p.page_size, 2 * half * p.page_size)])
    ssd._sim.check()
    used = 2 * _mqsim_blocks_oracle(k // n_planes, 256, 64, 12, k / half, 0.07, share=0.5)
    assert list(ssd.totals().unit_free_blocks) == [2 * (256 - used)] * 4
    ssd.close()
    with pytest.raises(ValueError, match="page numbers must be in"):
        FlashSSD(p, precondition=np.array([0, logical]))
    with pytest.raises(ValueError, match="1-D array of logical page numbers"):
        FlashSSD(p, precondition=np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="do not fit in its share of the plane's blocks as MQSim lays them out"):
        FlashSSD(p, precondition=0.95, precondition_layout="mqsim")  # MQSim's own algorithm fails there too
    with pytest.raises(ValueError, match="precondition_layout must be one of"):
        FlashSSD(p, precondition=0.5, precondition_layout="greedy")
    with pytest.raises(ValueError, match="precondition_layout must be one of"):
        FlashSSD(p, precondition=None, precondition_layout="greedy")  # checked even with nothing to lay out
