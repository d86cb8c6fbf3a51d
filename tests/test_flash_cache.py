"""The DRAM data cache of the flash model: MQSim's Data_Cache_Manager_Flash_Advanced
semantics on a one-chip device whose timing can be worked out by hand (absorbed writes, read hits
and misses, back pressure, LRU eviction, partitioning), the profile fields and the ssdconfig.xml
loader. The comparison with MQSim is in test_flash_mqsim.py (test_mqsim_cache_*)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hss_gym.backends.flash import FlashProfileError, FlashSSD, load_profile

PAGE = 8192
DRAM_8K = 40.986          # us: MQSim's DRAM time for 8 KiB at 100 MT/s x 1 byte: tRCD + tCL + 4096 x 10 ns
DRAM_4K = 20.506          # tRCD + tCL + 2048 x 10 ns
PROGRAM = 0.361 + 24.601 + 750.0   # program command + 8 KiB over the 333 MT/s bus + program time
READ = 0.29 + 75.0 + 24.601        # read command + read time + 8 KiB data out
READ_4K = 0.29 + 75.0 + 12.3       # ... of 4 KiB


def _dev(mode: str = "write", planes: int = 1, **kw) -> "object":
    """mqsim-default timing on 1 channel x 1 chip x 1 die x `planes` planes, the cache of MQSim's
    ssdconfig.xml (100 MT/s x 1-byte DRAM, tRCD = tCL = tRP = 13 ns)."""
    return dataclasses.replace(load_profile("mqsim-default"), n_channels=1, chips_per_channel=1, dies_per_chip=1,
                               planes_per_die=planes, blocks_per_plane=64, pages_per_block=64, cache_mode=mode,
                               cache_dram_mtps=100.0, cache_dram_burst_bytes=1, **kw)


def _run(prof, reqs, n_streams: int = 1) -> FlashSSD:
    """reqs: (time_us, stream, offset, size, is_write) tuples, run to the end, FTL and cache checked."""
    ssd = FlashSSD(prof, n_streams=n_streams, queue_depth=64, precondition=None)
    for t, s, off, size, w in sorted(reqs, key=lambda r: r[0]):
        ssd.submit([t], [s], [off], [size], [w])
    ssd.run_until(1e6)
    ssd._sim.check()
    return ssd


def _lat(ssd: FlashSSD, stream: int = 0) -> list[float]:
    """Latencies in arrival order (one stream, requests one at a time or in FIFO order)."""
    return [round(float(x), 3) for x in ssd.latencies(stream)]


def test_a_write_is_absorbed_in_dram_and_written_back():
    ssd = _run(_dev(), [(0.0, 0, 0, PAGE, True)])
    assert _lat(ssd) == [pytest.approx(DRAM_8K, abs=1e-3)]
    assert ssd.cache_stats() == dict(read_hits=0, read_partial_hits=0, write_pages=1, writebacks=1, evictions=0, waits=0)
    assert int(ssd.totals().write_tx.sum()) == 1     # the write-back reached flash
    off = _run(_dev("off"), [(0.0, 0, 0, PAGE, True)])
    assert _lat(off) == [pytest.approx(PROGRAM, abs=1e-3)]


def test_read_hit_while_the_write_back_is_in_flight_and_miss_after():
    # a first-written (cold) page is written back at once and dropped from DRAM when that ends
    ssd = _run(_dev(), [(0.0, 0, 0, PAGE, True), (100.0, 0, 0, PAGE, False), (5000.0, 0, 0, PAGE, False)])
    lat = ssd.latencies(0)
    assert sorted(np.round(lat, 3)) == [pytest.approx(DRAM_8K, abs=1e-3)] * 2 + [pytest.approx(READ, abs=1e-3)]
    assert ssd.cache_stats()["read_hits"] == 1


def test_read_miss_costs_a_flash_read():
    ssd = _run(_dev(), [(0.0, 0, 5 * PAGE, PAGE, False)])
    assert _lat(ssd) == [pytest.approx(READ, abs=1e-3)]


def test_a_rewritten_page_stays_dirty_in_dram_and_a_partial_hit_reads_the_rest_from_flash():
    # 4 KiB at t=0 (cold: written back, then dropped); the same 4 KiB again at 2 ms (written within
    # the second: it stays in DRAM, no flash write); an 8 KiB read at 3 ms takes those 4 KiB from
    # DRAM (20.5 us) and the other 4 KiB from flash (87.6 us) at once
    ssd = _run(_dev(), [(0.0, 0, 0, 4096, True), (2000.0, 0, 0, 4096, True), (3000.0, 0, 0, PAGE, False)])
    w1, w2, r = ssd.latencies(0)
    assert (w1, w2) == (pytest.approx(DRAM_4K, abs=1e-3), pytest.approx(DRAM_4K, abs=1e-3))
    assert r == pytest.approx(READ_4K, abs=1e-3)
    st = ssd.cache_stats()
    assert (st["writebacks"], st["read_partial_hits"], int(ssd.totals().write_tx.sum())) == (1, 1, 1)


def test_writes_wait_for_write_back_room_back_pressure():
    # one plane: MQSim's back pressure allows one page (16 sectors) of write-backs in flight; the
    # second and third writes wait for the previous write-back (774.962 us each), then take their
    # DRAM time
    reqs = [(0.0, 0, k * PAGE, PAGE, True) for k in range(3)]
    ssd = _run(_dev(), reqs)
    assert _lat(ssd) == [pytest.approx(v, abs=2e-3) for v in (DRAM_8K, PROGRAM + DRAM_8K, 2 * PROGRAM + DRAM_8K)]
    assert ssd.cache_stats()["waits"] == 2
    off = _run(_dev("off"), reqs)
    assert _lat(off) == [pytest.approx(v, abs=2e-3) for v in (PROGRAM, 2 * PROGRAM, 3 * PROGRAM)]


def test_a_full_cache_evicts_its_lru_page_dram_read_first():
    # one page of cache: page 0 written (cold), rewritten at 2 ms (dirty, in DRAM); page 1 at 3 ms
    # evicts it: a DRAM read of page 0 (40.986 us), then page 1's DRAM write (40.986 us), so page 1
    # takes 81.972 us; page 0 reaches flash after its eviction, a read of it at 10 ms misses
    prof = _dev(planes=2, cache_capacity_bytes=PAGE)
    ssd = _run(prof, [(0.0, 0, 0, PAGE, True), (2000.0, 0, 0, PAGE, True), (3000.0, 0, PAGE, PAGE, True),
                      (10000.0, 0, 0, PAGE, False)])
    assert _lat(ssd) == [pytest.approx(v, abs=2e-3) for v in (DRAM_8K, DRAM_8K, 2 * DRAM_8K, READ)]
    st = ssd.cache_stats()
    assert (st["evictions"], st["writebacks"], st["read_hits"]) == (1, 2, 0)
    assert int(ssd.totals().write_tx.sum()) == 3


def test_dram_time_is_mqsims_estimate_quirks_included():
    # 12 KiB (more than a row of 8 KiB): MQSim charges whole pairs of rows (none here) plus the
    # remainder at the burst rate: 26 ns + 26 ns + 4096 / 10 ns = 0.461 us; 16 KiB: one pair of rows
    ssd = _run(_dev(planes=2), [(0.0, 0, 0, 12288, True), (5000.0, 0, 4 * PAGE, 2 * PAGE, True)])
    assert _lat(ssd) == [pytest.approx(0.461, abs=1e-3), pytest.approx(0.026 + 40.973 + 0.026, abs=1e-3)]


@pytest.mark.parametrize("sharing, hit", [("equal", True), ("shared", False)])
def test_equal_partitioning_keeps_a_streams_pages_from_the_others(sharing, hit):
    # two pages of cache; stream 0 keeps page 0 dirty in DRAM (written twice); stream 1 then fills
    # the cache with pages 8 and 9 (rewritten, so dirty): shared, they evict stream 0's page;
    # partitioned (one page each) they only evict each other
    prof = _dev(planes=2, cache_capacity_bytes=2 * PAGE, cache_sharing=sharing)
    reqs = [(0.0, 0, 0, PAGE, True), (2000.0, 0, 0, PAGE, True)]
    reqs += [(t, 1, p * PAGE, PAGE, True) for t, p in ((3000.0, 8), (3100.0, 9), (6000.0, 8), (6100.0, 9))]
    reqs += [(9000.0, 0, 0, PAGE, False)]
    ssd = _run(prof, reqs, n_streams=2)
    assert bool(ssd.latencies(0)[-1] == pytest.approx(DRAM_8K, abs=1e-3)) is hit


def test_read_caching_keeps_pages_read_from_flash():
    ssd = _run(_dev("read"), [(0.0, 0, 3 * PAGE, PAGE, False), (1000.0, 0, 3 * PAGE, PAGE, False),
                              (2000.0, 0, 0, PAGE, True)])
    assert _lat(ssd) == [pytest.approx(v, abs=1e-3) for v in (READ, DRAM_8K, PROGRAM)]
    assert ssd.cache_stats()["write_pages"] == 0     # read caching only: writes go to flash


def test_cache_off_by_default_and_fields_checked():
    for name in ("mqsim-default", "rlalloc", "fleetio"):
        p = load_profile(name)
        assert p.cache_mode == "off" and p.cache_pages == 0
    p = load_profile("mqsim-default")
    assert dataclasses.replace(p, cache_mode="write").cache_pages == 256 * 2**20 // PAGE
    with pytest.raises(FlashProfileError, match="'cache_mode' must be one of"):
        dataclasses.replace(p, cache_mode="writeback")
    with pytest.raises(FlashProfileError, match="'cache_sharing' must be one of"):
        dataclasses.replace(p, cache_sharing="split")
    with pytest.raises(FlashProfileError, match="'cache_dram_mtps' must be a positive number"):
        dataclasses.replace(p, cache_dram_mtps=0)
    with pytest.raises(FlashProfileError, match="'simple' is not modelled"):
        dataclasses.replace(p, cache_mode="write", cache_mechanism="simple")
    with pytest.raises(FlashProfileError, match="at least one page"):
        dataclasses.replace(p, cache_mode="write", cache_capacity_bytes=4096)
    dataclasses.replace(p, cache_mechanism="simple")  # accepted while the cache is off


def test_ssdconfig_cache_fields(tmp_path):
    from hss_gym.backends.flash.mqsim_anchor import mqsim_source
    from hss_gym.backends.flash.mqsim_xml import load_ssdconfig

    src = mqsim_source()
    if src is None:
        pytest.skip("../shared/anchors/MQSim not found")
    text = (src / "ssdconfig.xml").read_text()
    p = load_profile(src / "ssdconfig.xml")
    # MQSim's own file: a 256 MiB shared cache of a 100 MT/s x 1-byte DRAM; used only as a flow says
    assert (p.cache_mode, p.cache_sharing, p.cache_mechanism) == ("off", "shared", "advanced")
    assert (p.cache_capacity_bytes, p.cache_dram_mtps, p.cache_dram_burst_bytes) == (256 * 2**20, 100.0, 1)
    assert (p.cache_dram_row_bytes, p.cache_dram_trcd_ns, p.cache_dram_tcl_ns, p.cache_dram_trp_ns) == (8192, 13, 13, 13)
    assert load_ssdconfig(src / "ssdconfig.xml", caching_mode="WRITE_READ_CACHE").cache_mode == "write_read"
    with pytest.raises(FlashProfileError, match="caching_mode must be one of"):
        load_ssdconfig(src / "ssdconfig.xml", caching_mode="ON")
    f = tmp_path / "c.xml"
    f.write_text(text.replace(">SHARED<", ">EQUAL_PARTITIONING<"))
    assert load_profile(f).cache_sharing == "equal"
    # absent fields: MQSim's own defaults (Device_Parameter_Set.cpp), not its file's
    lines = [ln for ln in text.splitlines() if "Data_Cache_DRAM_Data_Rate" not in ln and "Data_Cache_Capacity" not in ln]
    f.write_text("\n".join(lines))
    q = load_profile(f)
    assert (q.cache_capacity_bytes, q.cache_dram_mtps) == (512 * 2**20, 800.0)
    f.write_text(text.replace(">SHARED<", ">PRIVATE<"))
    with pytest.raises(FlashProfileError, match=r"line \d+: field <Data_Cache_Sharing_Mode> must be one of"):
        load_profile(f)
