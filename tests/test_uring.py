"""The real-device backend: ring unit tests on temp files, verify mode with many
migrations on a tmpfs file + a disk file, safety refusals, clear errors, no fd/memory growth,
the environment with ``backend="uring"``, and the behaviour when io_uring is unavailable."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hss_gym
from hss_gym.backends import real
from hss_gym.hss import HSS
from hss_gym.workloads.trace import Trace

WHY = real.unavailable_reason()
needs_ext = pytest.mark.skipif(WHY is not None and "not built" in WHY, reason=WHY or "")
needs_uring = pytest.mark.skipif(WHY is not None, reason=WHY or "")
SHM = Path("/dev/shm") if os.path.isdir("/dev/shm") else None
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fast(tmp_path):
    """A path on tmpfs (fast device), removed afterwards."""
    if SHM is None:
        pytest.skip("no /dev/shm")
    p = SHM / f"hss_test_{os.getpid()}_{tmp_path.name}.img"
    yield str(p)
    if p.exists():
        p.unlink()


@pytest.fixture
def slow(tmp_path):
    """A path on the disk filesystem of /tmp (slow device)."""
    return str(tmp_path / "slow.img")


def _held(path: str) -> list[str]:
    """This process's descriptors of the unlinked file once named ``path`` (/proc/self/fd links)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == f"{path} (deleted)":
                out.append(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            pass
    return out


def ext():
    from hss_gym.backends import _uring
    return _uring


def random_trace(n: int, span: int, seed: int = 0, write_frac: float = 0.5, max_pages: int = 4) -> Trace:
    rng = np.random.default_rng(seed)
    npg = rng.integers(1, max_pages + 1, n)
    pages = np.minimum(rng.integers(0, span, n), span - npg)
    op = (rng.random(n) < write_frac).astype(np.uint8)
    return Trace.from_arrays(np.arange(n) * 5.0, op, pages * 4096, npg * 4096)


def drive(h: HSS, tr: Trace, seed: int = 0, migrate: float = 0.7) -> None:
    """Random placements and migrations through the two-phase API."""
    rng = np.random.default_rng(seed)
    for t, o, off, sz in zip(tr.time_us.tolist(), tr.op.tolist(), tr.offset.tolist(), tr.size.tolist()):
        place = int(rng.integers(h.n_devices)) if h.begin(t, o, off, sz) else 0
        h.finish(place)
        c = h.candidate()
        if c is not None and rng.random() < migrate:
            h.enqueue(c, int(rng.integers(h.n_devices)))


# ------------------------------------------------------------------ stamps
@needs_ext
def test_stamp_roundtrip_and_detection():
    u = ext()
    buf = bytearray(4096)
    u.stamp_page(buf, 42, 7)
    assert u.check_page(bytes(buf), 42, 7) == 0
    assert u.check_page(bytes(buf), 42, 6) == 1  # older/newer version: lost update
    assert u.check_page(bytes(buf), 43, 7) == 1  # another page's data
    buf[1000] ^= 1
    assert u.check_page(bytes(buf), 42, 7) == 2  # corrupt
    assert u.check_page(bytes(4096), 42, 7) == 1  # never written (zeros)
    with pytest.raises(ValueError):
        u.check_page(b"x" * 100, 1, 1)


# ------------------------------------------------------------------ ring unit tests
@needs_uring
@pytest.mark.parametrize("engine", ["uring", "psync"])
def test_engine_bench_and_io(fast, slow, engine):
    b = real.RealBackend([fast, slow], [1 << 20, 1 << 20], engine=engine, queue_depth=8)
    try:
        eng = b.engine
        for dev in (0, 1):
            for write in (True, False):
                for qd in (1, 8):
                    lat = np.zeros(256, dtype=np.int64)
                    el = eng.bench(dev, write, 4096, qd, 256, False, 1, lat)
                    assert el > 0 and (lat > 0).all()
            assert eng.bench(dev, False, 64 << 10, 4, 64, True) > 0  # sequential, larger blocks
        st = b.engine_stats()
        assert [d["engine"] for d in st["devices"]] == [engine, engine]
        if engine == "uring":
            assert st["registered_buffers"] and st["registered_files"]
        t = b.io(1, 1, 3, 2, 100.0)  # one write of 2 pages
        assert t > 100.0
        assert b.io(1, 0, 3, 2, 0.0) > 0
        # created, then unlinked while open (a killed run leaves nothing): sized through the fd
        assert not os.path.exists(fast) and [os.stat(f).st_size for f in _held(fast)] == [1 << 20]
        with pytest.raises(ValueError, match="multiple of 4096"):
            eng.bench(0, False, 1000, 1, 1)
        with pytest.raises(OSError, match=r"slow.img at offset 1044480.*errno"):
            b.io(1, 0, 255, 2, 0.0)  # crosses the end: refused before any I/O
    finally:
        b.close()
    assert not os.path.exists(fast) and not os.path.exists(slow)  # created by us: removed


@needs_uring
def test_log_bounds_error_names_device_offset_errno(fast, slow):
    with real.RealBackend([fast, slow], [1 << 16, 1 << 16], engine="uring") as b:
        log = np.zeros(2, dtype=real._LOG_DTYPE)
        log[0] = (0, 100, 1, real.LOG_READ, 1, (0, 0))  # slot 100 > 16 pages
        log[1] = (0, 0, 1, real.LOG_END, 0, (0, 0))
        with pytest.raises(OSError) as ei:
            b.engine.execute(log.tobytes(), np.zeros(1), True)
        msg = str(ei.value)
        assert slow in msg and "offset 409600" in msg and "errno" in msg
    with real.RealBackend([fast], [1 << 16], engine="psync", overwrite=True) as b:
        with pytest.raises(ValueError, match="whole records"):
            b.engine.execute(b"123", np.zeros(1), True)


# ------------------------------------------------------------------ verify mode
@needs_uring
@pytest.mark.parametrize("engine", ["auto", "uring"])
def test_verify_random_workload_with_migrations(fast, slow, engine):
    span = 1500
    tr = random_trace(2500, span, seed=1)
    h = HSS("perf_opt", footprint_pages=tr.footprint_pages(), seed=0, backend="uring", paths=[fast, slow],
            backend_options={"verify": True, "span_pages": span, "engine": engine}, queue_size=4, min_interval=1)
    try:
        drive(h, tr)
        c = h.counters()
        st = h.real.engine_stats()
        assert c["migrations"] > 300 and c["evictions"] > 300 and st["migrated_pages"] > 1000
        assert st["verify_checked"] > 1000 and st["verify_errors"] == 0
        res = h.real.verify_all(h.core)
        assert res["checked"] > 1000 and res["lost"] == 0 and res["corrupt"] == 0, res
        # the whole-trace replay keeps up to queue_depth requests in flight
        lat, m = h.run_fixed(tr, 0)
        assert np.isfinite(lat).all() and (lat > 0).all() and m.mean_latency_us > 0
        res = h.real.verify_all(h.core)
        assert res["lost"] == 0 and res["corrupt"] == 0 and res["checked"] > 1000, res
    finally:
        h.close()


@needs_uring
def test_verify_detects_corrupted_and_lost_pages(fast, slow):
    tr = random_trace(1500, 800, seed=2, write_frac=0.8)
    h = HSS("perf_opt", footprint_pages=tr.footprint_pages(), seed=0, backend="uring", paths=[fast, slow],
            backend_options={"verify": True, "span_pages": 800}, queue_size=4, min_interval=1)
    try:
        drive(h, tr)
        assert h.real.verify_all(h.core)["corrupt"] == 0
        pages = np.frombuffer(h.real.engine.written_pages(), dtype=np.uint64)
        p0, p1 = int(pages[0]), int(pages[1])
        (d0, s0), (d1, s1) = h.core.where(p0), h.core.where(p1)
        fd = os.open(_held(h.real.paths[d0])[0], os.O_RDWR)  # the files are unlinked: by their fds
        os.pwrite(fd, b"\xff", s0 * 4096 + 2000)  # flip bytes inside page p0
        os.close(fd)
        res = h.real.verify_all(h.core)
        assert res["corrupt"] == 1 and res["lost"] == 0 and f"page {p0} " in res["message"]
        fd = os.open(_held(h.real.paths[d1])[0], os.O_RDWR)  # a stale copy: page p1 holds p0's bytes
        os.pwrite(fd, os.pread(fd, 4096, s1 * 4096) if d0 != d1 else b"", s1 * 4096)
        good = bytearray(4096)
        ext().stamp_page(good, p1, h.real.engine.version(p1) + 1)  # a version never written
        os.pwrite(fd, bytes(good), s1 * 4096)
        os.close(fd)
        res = h.real.verify_all(h.core)
        assert res["corrupt"] == 1 and res["lost"] == 1
        # a host read of the corrupted page raises during the run
        with pytest.raises(real.VerifyError, match=f"page {p0} "):
            h.begin(0.0, 0, p0 * 4096, 4096)
            h.finish(0)
    finally:
        h.close()


# ------------------------------------------------------------------ safety
def test_signature_detection():
    def img(off, magic):
        b = bytearray(real.SIGNATURE_BYTES)
        b[off:off + len(magic)] = magic
        return bytes(b)
    assert real.detect_signature(bytes(real.SIGNATURE_BYTES)) is None
    for off, magic, what in real.SIGNATURES:
        assert real.detect_signature(img(off, magic)) is not None, what
    assert "ext2/3/4" in real.detect_signature(img(1080, b"\x53\xef"))
    assert "GPT" in real.detect_signature(img(512, b"EFI PART"))
    assert "XFS" in real.detect_signature(img(0, b"XFSB"))
    assert "btrfs" in real.detect_signature(img(0x10040, b"_BHRfS_M"))


@needs_ext
def test_refuses_existing_nonempty_file_unless_overwrite(tmp_path):
    p = tmp_path / "data.img"
    p.write_bytes(b"precious")
    with pytest.raises(real.UnsafeDeviceError, match="overwrite=True"):
        real.RealBackend([str(p)], [1 << 16], engine="psync")
    assert p.read_bytes() == b"precious"
    # the C engine refuses it as well, whatever the Python layer does
    u = ext()
    with pytest.raises(OSError, match="overwrite=True"):
        u.Engine([str(p)], [1 << 16], [u.ENGINE_PSYNC], u.O_CREATE, 1, False, False)
    assert p.read_bytes() == b"precious"
    with real.RealBackend([str(p)], [1 << 16], engine="psync", overwrite=True) as b:
        assert b.created_files() == []
    assert p.exists()  # not ours: kept


@needs_ext
def test_refuses_other_file_types_and_bad_options(tmp_path):
    with pytest.raises(real.UnsafeDeviceError, match="neither"):
        real.RealBackend(["/dev/null"], [1 << 16], engine="psync")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        real.RealBackend([str(tmp_path / "no" / "dir.img")], [1 << 16])
    with pytest.raises(ValueError, match="multiple of 4096"):
        real.RealBackend([str(tmp_path / "a.img")], [5000])
    with pytest.raises(ValueError, match="engine"):
        real.RealBackend([str(tmp_path / "a.img")], [4096], engine="aio")
    with pytest.raises(ValueError, match="queue_depth"):
        real.RealBackend([str(tmp_path / "a.img")], [4096], queue_depth=0)
    with pytest.raises(ValueError, match="same file"):
        real.RealBackend([str(tmp_path / "a.img"), str(tmp_path / "a.img")], [4096, 4096], engine="psync")
    assert not (tmp_path / "a.img").exists()  # created then removed on the failed open


def _block_devices() -> list[str]:
    out = []
    for name in sorted(os.listdir("/dev")):
        p = f"/dev/{name}"
        try:
            if stat.S_ISBLK(os.stat(p).st_mode):
                out.append(p)
        except OSError:
            pass
    return out


@needs_ext
def test_refuses_block_device_without_permission():
    devs = _block_devices()
    if not devs:
        pytest.skip("no block device in /dev")
    # refused before anything is opened for writing
    with pytest.raises(real.UnsafeDeviceError, match="allow_block_device=True"):
        real.check_path(devs[0])
    u = ext()
    with pytest.raises(OSError, match="allow_block_device"):
        u.Engine([devs[0]], [4096], [u.ENGINE_PSYNC], 0, 1, False, False)


@needs_ext
def test_refuses_mounted_block_device_even_when_allowed():
    root = os.stat("/").st_dev
    for p in _block_devices():
        if os.stat(p).st_rdev == root:
            problems = real.block_device_problems(p)
            assert any("mounted at /" in x for x in problems), problems
            with pytest.raises(real.UnsafeDeviceError, match="force=True"):
                real.check_path(p, allow_block_device=True)
            return
    pytest.skip("the root filesystem's block device is not visible in /dev")


@needs_uring
def test_hss_refuses_requests_beyond_home_device(fast, slow):
    h = HSS("perf_opt", footprint_pages=100, backend="uring", paths=[fast, slow],
            backend_options={"span_pages": 100})
    try:
        with pytest.raises(ValueError, match="beyond the home device"):
            h.begin(0.0, 1, 100 * 4096, 4096)
    finally:
        h.close()
    with pytest.raises(ValueError, match="home"):
        HSS("perf_opt", footprint_pages=100, backend="uring", paths=[fast, slow])
    with pytest.raises(ValueError, match="paths"):
        HSS("perf_opt", footprint_pages=100, backend="uring", paths=[fast])
    with pytest.raises(ValueError, match="unknown backend option"):
        HSS("perf_opt", footprint_pages=100, backend="uring", paths=[fast, slow], backend_options={"x": 1})


# ------------------------------------------------------------------ resources
def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@needs_uring
def test_no_fd_or_memory_growth_over_1000_open_close(fast, slow):
    u = ext()
    def cycle(i: int) -> None:
        e = u.Engine([fast, slow], [1 << 16, 1 << 16], [u.ENGINE_URING, u.ENGINE_URING], u.O_CREATE, 1, i % 2 == 0, False)
        e.bench(0, True, 4096, 1, 4)
        e.close()
    for i in range(50):
        cycle(i)
    fds, rss = _fds(), _rss_kb()
    for i in range(1000):
        cycle(i)
    assert _fds() == fds
    assert _rss_kb() - rss < 8 * 1024  # kB
    assert not os.path.exists(fast)


# ------------------------------------------------------------------ environment
@needs_uring
def test_parallel_env_on_real_files(fast, slow):
    tr = random_trace(400, 2048, seed=3)
    env = hss_gym.parallel_env(config="perf_opt", workload=tr, backend="uring", paths=[fast, slow],
                               backend_options={"verify": True})
    try:
        for seed in (0, 1):  # a second episode reuses the backend (our files)
            env.reset(seed=seed)
            while env.agents:
                _, rewards, _, _, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
                assert infos["placement"]["latency_us"] > 0
            assert infos["placement"]["metrics"]["mean_latency_us"] > 0
            res = env._real.verify_all(env._hss.core)
            assert res["lost"] == 0 and res["corrupt"] == 0 and res["checked"] > 0
    finally:
        env.close()
    assert not os.path.exists(fast) and not os.path.exists(slow)


def test_env_backend_argument_errors():
    with pytest.raises(ValueError, match="'sim', 'uring'"):
        hss_gym.parallel_env(backend="nvme")
    with pytest.raises(ValueError, match="paths"):
        hss_gym.parallel_env(backend="uring")


def test_unavailable_extension_says_why(monkeypatch, tmp_path):
    def broken():
        raise real.UringUnavailable("the C extension hss_gym.backends._uring is not built (test)")
    monkeypatch.setattr(real, "_load_ext", broken)
    env = hss_gym.parallel_env(workload=random_trace(50, 100), backend="uring",
                               paths=[str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(real.UringUnavailable, match="not built"):
        env.reset(seed=0)
    sim = hss_gym.parallel_env(workload=random_trace(50, 100))  # the simulator is unaffected
    sim.reset(seed=0)


@needs_ext
def test_io_uring_refused_says_why(monkeypatch, tmp_path):
    u = ext()
    monkeypatch.setattr(u, "probe", lambda: "io_uring is disabled by sysctl kernel.io_uring_disabled=2")
    with pytest.raises(real.UringUnavailable, match="io_uring_disabled=2.*psync"):
        real.RealBackend([str(tmp_path / "a.img")], [4096], engine="uring")
    with real.RealBackend([str(tmp_path / "a.img")], [4096], engine="psync") as b:  # still usable
        assert b.io(0, 1, 0, 1, 0.0) > 0


def test_import_without_extension_in_subprocess(tmp_path):
    """`import hss_gym` and the simulator work when the extension cannot be imported."""
    code = ("import sys; sys.modules['hss_gym.backends._uring'] = None\n"
            "import hss_gym\nfrom hss_gym.backends.real import unavailable_reason\n"
            "env = hss_gym.parallel_env(n_requests=200); env.reset(seed=0)\n"
            "print(unavailable_reason())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "not built" in out


@needs_uring
def test_example_real_device_runs(capsys):
    import importlib.util
    spec = importlib.util.spec_from_file_location("hss_example_real_device", ROOT / "examples" / "real_device.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--n-requests", "300", "--verify", "--workload", "ycsb-b"])
    assert out["verify"]["lost"] == 0 and out["verify"]["corrupt"] == 0
    assert out["real"]["mean_latency_us"] > 0


# ------------------------------------------------------------------ calibration
@needs_ext
def test_calibrate_writes_a_loadable_profile(fast, tmp_path):
    from hss_gym.backends.calibrate import add_calibrate_arguments, run_calibrate
    from hss_gym.backends.sim import load_profile
    import argparse
    out = tmp_path / "fast.json"
    args = add_calibrate_arguments(argparse.ArgumentParser()).parse_args(
        ["--device", fast, "--out", str(out), "--size-mb", "4", "--seconds", "0.02", "--block-sizes", "4,64",
         "--queue-depths", "1,4", "--id", "SHM", "--measurements", str(tmp_path / "m.json")])
    assert run_calibrate(args) == 0
    prof = load_profile(str(out))
    assert prof.id == "SHM" and prof.read_latency_us > 0 and prof.write_iops > 0 and prof.read_bandwidth_mbps > 0
    assert len(__import__("json").loads((tmp_path / "m.json").read_text())) >= 8
    assert not os.path.exists(fast)
    cfg = hss_gym.config.make_config([str(out), "M"])  # usable in a configuration
    assert cfg.devices[0].id == "SHM"
    bad = add_calibrate_arguments(argparse.ArgumentParser()).parse_args(["--device", "/dev/null", "--out", str(out)])
    assert run_calibrate(bad) == 1
