"""Columnar trace cache: exact round trip, transparent loading, versioning, damage."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from hss_gym.workloads import cache
from hss_gym.workloads.readers import convert, detect_format, iter_chunks, load_trace
from hss_gym.workloads.trace import Trace, TraceFormatError


def sample_trace() -> Trace:
    rng = np.random.default_rng(7)
    n = 1000
    return Trace(np.cumsum(rng.random(n) * 10), rng.integers(0, 2, n),
                 rng.integers(0, 1 << 40, n), rng.integers(1, 1 << 20, n),
                 rng.integers(0, 5, n), name="synthetic",
                 source={"kind": "file", "path": "/data/x.csv", "format": "msr",
                         "sha256": "ab" * 32, "skipped": 2, "dropped": {"blank IOType": 3},
                         "options": {"a": [1, 2]},
                         "latency_us": np.linspace(0.0, 1.0, n)}).validate()


def assert_equal_traces(a: Trace, b: Trace) -> None:
    for col in ("time_us", "op", "offset", "size", "stream"):
        got, want = getattr(a, col), getattr(b, col)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=col)


@pytest.mark.parametrize("mmap_mode", [True, False])
def test_round_trip_is_exact(tmp_path: Path, mmap_mode: bool) -> None:
    trace = sample_trace()
    path = cache.save_cache(trace, tmp_path / "t.hsstrace")
    loaded = cache.load_cache(path, mmap_mode=mmap_mode)
    assert_equal_traces(loaded, trace)
    assert loaded.name == "synthetic"
    np.testing.assert_array_equal(loaded.source["latency_us"], trace.source["latency_us"])
    kept = {k: v for k, v in loaded.source.items() if k not in ("latency_us", "cache")}
    assert kept == {k: v for k, v in trace.source.items() if k != "latency_us"}
    assert loaded.source["cache"] == {"path": str(path), "version": cache.VERSION}
    assert loaded.time_us.flags.writeable is not mmap_mode
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_load_trace_reads_a_cache_transparently(tmp_path: Path, shared_traces: Path) -> None:
    src = shared_traces / "tpcc-small.trace"
    dst = tmp_path / "tpcc.cache"
    parsed = convert(src, dst)
    assert detect_format(dst) == "cache"
    loaded = load_trace(dst)
    assert_equal_traces(loaded, parsed)
    assert loaded.source["sha256"] == parsed.source["sha256"]  # provenance of the original
    assert loaded.source["format"] == "mqsim"
    assert len(load_trace(dst, limit=10)) == 10
    assert load_trace(dst, name="renamed").name == "renamed"
    chunks = list(iter_chunks(dst, chunk_size=2000))
    assert [len(c) for c in chunks] == [2000, 2000, 2000, 999]
    assert chunks[1].source["first_request"] == 2000
    with pytest.raises(TraceFormatError, match="is an hss-gym trace cache"):
        load_trace(dst, gap_us=3)
    with pytest.raises(TraceFormatError, match="format='msr'"):
        load_trace(dst, "msr")
    with pytest.raises(TraceFormatError, match="not an hss-gym trace cache"):
        load_trace(src, "cache")


def test_unknown_version_is_refused(tmp_path: Path) -> None:
    path = cache.save_cache(sample_trace(), tmp_path / "t.hsstrace")
    raw = bytearray(path.read_bytes())
    raw[8:12] = struct.pack("<I", cache.VERSION + 1)
    path.write_bytes(bytes(raw))
    with pytest.raises(TraceFormatError, match=f"version {cache.VERSION + 1} is not supported"):
        cache.load_cache(path)


def test_damaged_cache_is_refused(tmp_path: Path) -> None:
    path = cache.save_cache(sample_trace(), tmp_path / "t.hsstrace")
    raw = path.read_bytes()
    (tmp_path / "short").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceFormatError, match="outside the file"):
        cache.load_cache(tmp_path / "short")
    hlen = struct.unpack("<I", raw[12:16])[0]
    header = json.loads(raw[16:16 + hlen])
    header["arrays"][0]["length"] = 5
    blob = json.dumps(header).encode().ljust(hlen)
    (tmp_path / "lying").write_bytes(raw[:16] + blob + raw[16 + hlen:])
    with pytest.raises(TraceFormatError, match="damaged trace cache header"):
        cache.load_cache(tmp_path / "lying")
    (tmp_path / "magic").write_bytes(b"NOTTRACE" + raw[8:])
    with pytest.raises(TraceFormatError, match="bad magic"):
        cache.load_cache(tmp_path / "magic")
    # a cache whose columns were edited into an invalid trace fails validation
    bad = bytearray(raw)
    size_entry = next(a for a in header["arrays"] if a["name"] == "size")
    start = -(-(16 + hlen) // 64) * 64 + size_entry["offset"]
    bad[start:start + 8] = (0).to_bytes(8, "little")
    (tmp_path / "invalid").write_bytes(bytes(bad))
    with pytest.raises(TraceFormatError, match="size must be > 0"):
        cache.load_cache(tmp_path / "invalid")


def test_unserialisable_source_is_a_clear_error(tmp_path: Path) -> None:
    trace = sample_trace()
    trace.source["callback"] = print
    with pytest.raises(TypeError, match="cannot be stored in a cache"):
        cache.save_cache(trace, tmp_path / "t.hsstrace")
    assert list(tmp_path.iterdir()) == []
