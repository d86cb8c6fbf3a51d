"""The flash model against MQSim: the same workloads through both simulators, per-flow
mean latency within 15% and p99 within 25% of MQSim's, GC write amplification within 20%.

MQSim is built once (a copy outside the repository, see hss_gym.backends.flash.mqsim_anchor) from
``../shared/anchors/MQSim``; the tests skip when that folder or g++ is absent.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from hss_gym.backends.flash.mqsim_anchor import PATCH_ANCHOR, build_mqsim, unavailable_reason

REASON = unavailable_reason()
needs_mqsim = pytest.mark.skipif(REASON is not None, reason=f"MQSim validation skipped: {REASON}")

FAST = ["tpcc-small", "read-qd1", "read-qd16", "write-qd1", "write-qd16", "mix-2flows"]
SLOW = ["gc-write"]  # MQSim's preconditioning and 150,000 writes: 16 s unloaded, minutes when the machine is busy


def _check(name, tmp_path):
    from hss_gym.benchmarks.flash_validation import run, table

    rows = run([name], workdir=tmp_path)
    assert rows, f"no results for scenario {name}"
    bad = [r for r in rows if not r["ok"]]
    assert not bad, "outside tolerance:\n" + table(bad)


@needs_mqsim
@pytest.mark.parametrize("name", FAST)
def test_mqsim_flows(name, tmp_path):
    _check(name, tmp_path)


@needs_mqsim
@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_mqsim_gc(name, tmp_path):
    _check(name, tmp_path)


@needs_mqsim
@pytest.mark.parametrize("name", ["susp-prog-off", "susp-prog-on"])
def test_mqsim_suspension_reads_beside_writes(name, tmp_path):
    """(a) a QD 4 reader beside a QD 32 writer, program suspension off and on, against
    MQSim with its suspension bugs fixed (mqsim_anchor.SUSPENSION_FIXES)."""
    _check(name, tmp_path)


@needs_mqsim
@pytest.mark.slow
def test_mqsim_suspension_erase_during_gc(tmp_path):
    """(b) a writer through GC with a QD 4 reader beside it all along, program and erase suspension
    on; both preconditioned as MQSim does (each flow's own pages first, its blocks laid out by
    precondition_layout="mqsim")."""
    _check("susp-erase-gc", tmp_path)


@needs_mqsim
def test_mqsim_cache_tpcc_small(tmp_path):
    """(c) tpcc-small with the DRAM data cache on (write caching), on MQSim's ssdconfig.xml as
    shipped (256 MiB, a slow 100 MT/s x 1-byte DRAM)."""
    _check("cache-tpcc-small", tmp_path)


@needs_mqsim
def test_mqsim_cache_write_burst(tmp_path):
    """(c) a burst of 8 KiB writes faster than flash programs them, with the cache on: paced by the
    write-backs and their back pressure (one page per plane in flight)."""
    _check("cache-write-burst", tmp_path)


@needs_mqsim
def test_mqsim_cache_two_streams(tmp_path):
    """(c) a QD 4 reader beside a QD 32 writer sharing the cache (write caching on for both): the
    writer's 16 KiB writes queue for the DRAM (41 us each), the reader for the write-backs."""
    _check("cache-2flows", tmp_path)


@needs_mqsim
@pytest.mark.xfail(strict=True, reason="MQSim's host interface, not in the model, is 2.6 of its 3.9 us per cached "
                   "8 KiB write (PCIe transfer of the data, NVMe queue messages); see docs/flash-model.md")
def test_mqsim_cache_light_writes(tmp_path):
    """(c) the same writes at a pace flash keeps up with: each is absorbed in 1.3 us of DRAM time in
    both simulators, and MQSim adds its PCIe link; kept so that a host-interface model shows up."""
    _check("cache-write-light", tmp_path)


def test_suspension_fixes_apply_to_mqsim_source():
    """Each of the five fixes matches MQSim's source exactly where it should (a changed MQSim
    fails here, not in a half-built copy)."""
    import re

    from hss_gym.backends.flash.mqsim_anchor import SUSPENSION_FIXES, mqsim_source

    src = mqsim_source()
    if src is None:
        pytest.skip(REASON)
    for rel, pattern, repl, why in SUSPENSION_FIXES:
        text = (src / rel).read_text()
        fixed, n = re.subn(pattern, repl, text, flags=re.S)
        assert n >= 1 and fixed != text, (rel, why)
    tsu = (src / "src/ssd/TSU_Priority_OutOfOrder.cpp").read_text()
    for rel, pattern, repl, why in SUSPENSION_FIXES:
        if "Expected_finish_time" in pattern or "suspensionRequired" in pattern:
            # the read's WRITING and ERASING cases and the write's ERASING case
            assert len(re.findall(pattern, tsu, flags=re.S)) == 3, why


def _fake_mqsim(root: Path, log: Path, fail: bool = False) -> Path:
    """A source tree shaped like MQSim's whose make takes a moment, logs each build to ``log`` and
    makes a binary only from the patched source (or fails)."""
    (root / "src" / "host").mkdir(parents=True)
    (root / "src" / "main.cpp").write_text("int main() { return 0; }\n")
    (root / "src" / "host" / "IO_Flow_Base.cpp").write_text(
        "void IO_Flow_Base::NVMe_consume_io_request(x) {\n" + PATCH_ANCHOR + "\n}\n")
    (root / "UPSTREAM_COMMIT").write_text("0123456789abcdef\n")
    make = "\tfalse" if fail else "\tgrep -q REQ src/host/IO_Flow_Base.cpp\n\tprintf '#!/bin/sh\\n' > $@ && chmod +x $@"
    (root / "Makefile").write_text(
        "all: checkdirs MQSim\ncheckdirs:\n\tmkdir -p build\n"
        f"MQSim:\n\techo build >> {log}\n\tsleep 0.5\n{make}\n")
    return root


@pytest.mark.skipif(shutil.which("make") is None, reason="make is needed")
def test_concurrent_builds_make_one_copy(tmp_path):
    """Two test suites side by side (as CI runs them) ask for MQSim at once: one build, the same
    binary for all, nothing half-built left behind."""
    log = tmp_path / "builds.log"
    src, cache = _fake_mqsim(tmp_path / "MQSim", log), tmp_path / "cache"
    got, errors = [], []

    def build() -> None:
        try:
            got.append(build_mqsim(cache, source=src))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(got)) == 1 and got[0].is_file()
    assert log.read_text().split() == ["build"]
    assert "REQ" in (got[0].parent / "src" / "host" / "IO_Flow_Base.cpp").read_text()
    assert sorted(p.name for p in cache.iterdir()) == ["MQSim-0123456789ab-latlog", "MQSim-0123456789ab-latlog.lock"]
    assert build_mqsim(cache, source=src) == got[0] and log.read_text().split() == ["build"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is needed")
def test_failed_build_says_why_and_leaves_nothing(tmp_path):
    src, cache = _fake_mqsim(tmp_path / "MQSim", tmp_path / "builds.log", fail=True), tmp_path / "cache"
    with pytest.raises(RuntimeError, match="building MQSim from .* failed"):
        build_mqsim(cache, source=src)
    assert [p.name for p in cache.iterdir()] == ["MQSim-0123456789ab-latlog.lock"]
