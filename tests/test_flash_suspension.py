"""Program/erase suspension in the flash model: MQSim's semantics on a one-chip device
whose timing can be worked out by hand, the thresholds, the profile fields and the ssdconfig.xml
loader. The comparison with MQSim is in test_flash_mqsim.py (test_mqsim_suspension_*)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hss_gym.backends.flash import FlashProfileError, FlashSSD, load_profile

PAGE = 8192
XFER = 24.601             # us: an 8 KiB page over the 333 MT/s x 8-bit bus (in whole ns)
PROG_CMD = 0.361          # us: ONFI program command/address cycles (one plane)
READ_CMD = 0.29           # us
SUSP_CMD = 0.095          # us: suspend command (tCS + 3 tWC)


def _one_chip(suspension: str, **kw) -> "object":
    """mqsim-default timing on 1 channel x 1 chip x 2 dies x 1 plane: logical page 2k is on die 0,
    2k + 1 on die 1 (CWDP)."""
    return dataclasses.replace(load_profile("mqsim-default"), n_channels=1, chips_per_channel=1, dies_per_chip=2,
                               planes_per_die=1, blocks_per_plane=64, pages_per_block=64, suspension=suspension, **kw)


def _read_during_program(suspension: str, read_lpn: int, read_at: float, **kw) -> tuple[float, float]:
    """Pages 0 and 1 written first; at 5 ms page 2 (die 0) is written, and page read_lpn read at
    read_at (by a second stream). Returns the device latencies (us) of that write and that read,
    and the suspension counts."""
    ssd = FlashSSD(_one_chip(suspension, **kw), n_streams=2, queue_depth=16, precondition=None)
    ssd.submit([0.0, 0.0, 5000.0, read_at], [0, 0, 0, 1], [0, PAGE, 2 * PAGE, read_lpn * PAGE], [PAGE] * 4,
               [True, True, True, False])
    ssd.run_until(1e5)
    writes, reads = ssd.device_latencies(0), ssd.device_latencies(1)
    assert len(writes) == 3 and len(reads) == 1
    ssd._sim.check()
    return float(writes[2]), float(reads[0]), ssd.suspensions()


PROGRAM = PROG_CMD + XFER + 750.0          # the write's latency on an idle chip
READ = READ_CMD + 75.0 + XFER              # a read's on an idle chip


def test_without_suspension_a_read_waits_for_the_program():
    w, r, n = _read_during_program("none", 0, 5100.0)
    assert w == pytest.approx(PROGRAM, abs=0.01)
    assert r == pytest.approx(5000.0 + PROGRAM - 5100.0 + READ, abs=0.01)
    assert n == (0, 0)


def test_a_read_suspends_a_program_on_its_die():
    w, r, n = _read_during_program("program", 0, 5100.0)
    susp = SUSP_CMD + 100.0                # MQSim's default Suspend_Program_Time
    assert r == pytest.approx(susp + READ, abs=0.01)
    # the program resumes when the read's data is out, with the time it had left
    assert w == pytest.approx(PROGRAM + susp + READ, abs=0.01)
    assert n == (1, 0)


def test_a_read_on_the_other_die_runs_beside_the_program_without_suspending_it():
    w, r, n = _read_during_program("program", 1, 5100.0)
    assert r == pytest.approx(READ, abs=0.01)
    assert w == pytest.approx(PROGRAM, abs=0.01)
    assert n == (0, 0)


def test_no_suspension_when_less_than_the_preferred_time_is_left():
    # 5000 + 25.1 + 750 = 5775.1 us: at 5700 less than the default 100 us is left
    w, r, _ = _read_during_program("program", 0, 5700.0)
    assert r == pytest.approx(5000.0 + PROGRAM - 5700.0 + READ, abs=0.01)
    # a lower threshold lets it suspend, at a configured cost
    w, r, n = _read_during_program("program", 0, 5700.0, suspend_program_for_read_min_us=50.0,
                                   suspend_program_us=20.0)
    assert r == pytest.approx(SUSP_CMD + 20.0 + READ, abs=0.01) and n == (1, 0)


def test_erase_only_suspension_leaves_programs_alone():
    assert _read_during_program("erase", 0, 5100.0) == _read_during_program("none", 0, 5100.0)


def _gc_run(suspension: str) -> tuple[np.ndarray, tuple[int, int], float]:
    """Random overwrites of a small, full device (GC erases all the time) with a reader beside."""
    p = dataclasses.replace(load_profile("mqsim-default"), n_channels=1, chips_per_channel=2, dies_per_chip=1,
                            planes_per_die=1, blocks_per_plane=32, pages_per_block=32, suspension=suspension)
    ssd = FlashSSD(p, n_streams=2, queue_depth=[4, 1], precondition=0.8, seed=3)
    rng = np.random.default_rng(3)
    n = 3000
    pages = p.logical_pages
    ssd.submit(np.zeros(n), np.zeros(n, np.int32), rng.integers(0, pages, n) * PAGE, np.full(n, PAGE), np.ones(n, bool))
    ssd.submit(np.arange(n) * 400.0, np.ones(n, np.int32), rng.integers(0, pages, n) * PAGE, np.full(n, PAGE),
               np.zeros(n, bool))
    t = 0.0
    while True:
        t += 1e6
        if ssd.run_until(t).backlog.sum() == 0:
            break
        ssd._sim.check()
    assert ssd.totals().gc_runs_total > 50
    return ssd.latencies(1), ssd.suspensions(), ssd.write_amplification()


def test_erase_suspension_during_gc_shortens_the_reads_tail():
    off_lat, off_n, off_wa = _gc_run("none")
    on_lat, on_n, on_wa = _gc_run("erase")
    assert off_n == (0, 0) and on_n[0] == 0 and on_n[1] > 20
    # without it a read can wait for a whole 3.8 ms erase; with it the erase steps aside (700 us)
    assert off_lat.max() > 3800.0
    assert np.percentile(on_lat, 99.9) < np.percentile(off_lat, 99.9)
    assert on_wa > 1 and off_wa > 1


def test_profile_fields_are_checked():
    p = load_profile("mqsim-default")
    assert p.suspension == "none" and not p.program_suspension and not p.erase_suspension
    with pytest.raises(FlashProfileError, match="'suspension' must be one of"):
        dataclasses.replace(p, suspension="both")
    with pytest.raises(FlashProfileError, match="'suspend_erase_us' must be a finite number >= 0"):
        dataclasses.replace(p, suspend_erase_us=-1.0)
    q = dataclasses.replace(p, suspension="program_erase")
    assert q.program_suspension and q.erase_suspension


def test_ssdconfig_suspension_fields(tmp_path):
    from hss_gym.backends.flash.mqsim_anchor import mqsim_source

    src = mqsim_source()
    if src is None:
        pytest.skip("../shared/anchors/MQSim not found")
    text = (src / "ssdconfig.xml").read_text()
    prof = load_profile(src / "ssdconfig.xml")
    # MQSim's own file: erase suspension, 700 us to suspend an erase, 100 us a program
    assert (prof.suspension, prof.suspend_erase_us, prof.suspend_program_us) == ("erase", 700.0, 100.0)
    assert (prof.suspend_program_for_read_min_us, prof.suspend_erase_for_write_min_us) == (100.0, 700.0)
    f = tmp_path / "s.xml"
    f.write_text(text.replace(">ERASE<", ">program_erase<").replace(
        "<Preferred_suspend_erase_time_for_read>700000<", "<Preferred_suspend_erase_time_for_read>5<"))
    p = load_profile(f)
    # the correctly spelled field is ignored, as by MQSim (whose parser reads "Prefered_...")
    assert p.suspension == "program_erase" and p.suspend_erase_for_read_min_us == 700.0
    f.write_text(text.replace("<Preferred_suspend_erase_time_for_read>700000</Preferred_suspend_erase_time_for_read>",
                              "<Prefered_suspend_erase_time_for_read>5000</Prefered_suspend_erase_time_for_read>"))
    assert load_profile(f).suspend_erase_for_read_min_us == 5.0
    f.write_text(text.replace(">ERASE<", ">READ<"))
    with pytest.raises(FlashProfileError, match=r"line \d+: field <CMD_Suspension_Support> must be one of"):
        load_profile(f)
