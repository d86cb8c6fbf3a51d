"""Trace readers: real samples (exact counts from ../shared/traces/README.md), small fixtures
written from each published format (units!), compression, bad input, streaming."""
from __future__ import annotations

import gzip
import hashlib
import math
import multiprocessing
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import zstandard

from hss_gym.workloads.readers import (FORMATS, SkippedRowsWarning, detect_format, iter_chunks,
                                       load_trace)
from hss_gym.workloads.readers import _tokenize as tk
from hss_gym.workloads.trace import READ, WRITE, Trace, TraceFormatError

#: the units of a generic csv whose header names none (the csv format never guesses them)
BYTES_AND_SECONDS = {"time_unit": "s", "offset_unit": 1, "size_unit": 1}
ENGINES = ["numpy", pytest.param("c", marks=pytest.mark.skipif(
    tk.ACCELERATOR is None, reason="C tokenizer hss_gym.workloads._fastparse not built"))]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with each tokenizer engine (the C one only when it is built)."""
    if request.param == "numpy":
        monkeypatch.setattr(tk, "ACCELERATOR", None)
    return str(request.param)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def columns(trace: Trace) -> tuple[list[float], list[int], list[int], list[int]]:
    return (trace.time_us.tolist(), trace.op.tolist(), trace.offset.tolist(),
            trace.size.tolist())


def assert_same(a: Trace, b: Trace) -> None:
    for col in ("time_us", "op", "offset", "size", "stream"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)


# ------------------------------------------------------------------------------ real samples


def test_cloudphysics_sample(shared_traces: Path, engine: str) -> None:
    path = shared_traces / "cloudPhysicsIO.csv"
    trace = load_trace(path)
    assert trace.source["format"] == "cloudphysics" and trace.source["header"] is True
    assert len(trace) == 113_872
    assert int((trace.op == READ).sum()) == 46_974
    assert int((trace.op == WRITE).sum()) == 66_898
    assert round(float(trace.size.mean()), 1) == 36_936.0
    assert trace.time_us[0] == 5_633_898e6 and trace.time_us[-1] == 5_641_098e6
    assert int((np.diff(trace.time_us) == 0).sum()) == 107_118
    assert trace.offset[0] == 42_932_745 * 512 and trace.size[0] == 512
    assert trace.source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert trace.source["skipped"] == 0 and trace.source["dropped"] == {}
    assert trace.name == "cloudPhysicsIO"


def test_mqsim_sample(shared_traces: Path, engine: str) -> None:
    trace = load_trace(shared_traces / "tpcc-small.trace")
    assert trace.source["format"] == "mqsim"
    assert len(trace) == 6_999
    assert int((trace.op == WRITE).sum()) == 2_618
    assert int((trace.op == READ).sum()) == 4_381
    assert round(float(trace.size.mean()) / 512, 2) == 16.66
    assert trace.time_us[-1] - trace.time_us[0] == 136_489.0  # 136,489,000 ns
    assert trace.time_us[0] == 938_513.0                       # 938513000 ns, not shifted
    assert (trace.offset[:2] == [264_719_034 * 512, 197_570_570 * 512]).all()


def test_blkparse_sample(shared_traces: Path, engine: str) -> None:
    trace = load_trace(shared_traces / "blkparse-wiscsee.txt")
    assert trace.source["format"] == "blkparse"
    assert int((trace.op == READ).sum()) == 161
    assert int((trace.op == WRITE).sum()) == 512
    assert trace.source["dropped"] == {"no_data": 4}
    # the summary at the end of the file: Read Dispatches 644KiB, Write Dispatches 131072KiB
    assert int(trace.size[trace.op == READ].sum()) == 644 * 1024
    assert int(trace.size[trace.op == WRITE].sum()) == 131_072 * 1024
    assert trace.time_us[0] == pytest.approx(1368.096, abs=1e-9)  # 0.001368096 s
    assert trace.offset[0] == 540_544 * 512 and trace.size[0] == 8 * 512
    assert "latency_us" not in trace.source                       # the sample has no C events


def test_heimdall_sample(shared_traces: Path, engine: str) -> None:
    trace = load_trace(shared_traces / "msr-excerpt-rw20.trace")
    assert trace.source["format"] == "heimdall"
    assert len(trace) == 10_000
    assert int((trace.op == READ).sum()) == 2_020
    assert int((trace.op == WRITE).sum()) == 7_980
    assert trace.time_us[-1] == 242_904_693.0                     # 242,904.693 ms
    assert trace.time_us[1] == 223_412.0                          # 223.412 ms
    assert (trace.offset % 512 == 0).all() and (trace.size % 512 == 0).all()


@pytest.mark.parametrize("name", ["cloudPhysicsIO.csv", "tpcc-small.trace",
                                  "blkparse-wiscsee.txt", "msr-excerpt-rw20.trace"])
def test_samples_identical_across_engines_chunks_and_compression(
        shared_traces: Path, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shared_traces / name
    reference = load_trace(path)
    if tk.ACCELERATOR is not None:
        with monkeypatch.context() as m:
            m.setattr(tk, "ACCELERATOR", None)
            assert_same(load_trace(path), reference)
    assert_same(load_trace(path, block_bytes=4096), reference)
    chunks = list(iter_chunks(path, chunk_size=1000, block_bytes=10_000))
    assert [len(c) for c in chunks[:-1]] == [1000] * (len(chunks) - 1)
    assert [c.source["first_request"] for c in chunks] == list(range(0, len(reference), 1000))
    joined = Trace(*(np.concatenate([getattr(c, col) for c in chunks])
                     for col in ("time_us", "op", "offset", "size")))
    assert_same(joined, reference)
    assert chunks[0].source["sha256"] == reference.source["sha256"]
    raw = path.read_bytes()
    gz = write(tmp_path, name + ".gz", gzip.compress(raw))
    zst = write(tmp_path, name + ".zst", zstandard.ZstdCompressor().compress(raw))
    for packed, kind in ((gz, "gzip"), (zst, "zstd")):
        trace = load_trace(packed, block_bytes=50_000)
        assert_same(trace, reference)
        assert trace.source["compression"] == kind
        assert trace.source["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()
        assert trace.name == reference.name


# ------------------------------------------------------------------- compression edge cases


def test_compression_detected_by_magic_not_name(shared_traces: Path, tmp_path: Path) -> None:
    raw = (shared_traces / "tpcc-small.trace").read_bytes()
    hidden = write(tmp_path, "tpcc.txt", zstandard.ZstdCompressor().compress(raw))
    assert load_trace(hidden, "mqsim").source["compression"] == "zstd"
    multi = write(tmp_path, "multi.gz", gzip.compress(raw[:100_000]) + gzip.compress(raw[100_000:]))
    frames = zstandard.ZstdCompressor()
    multi_zst = write(tmp_path, "multi.zst", frames.compress(raw[:70_000])
                      + frames.compress(raw[70_000:]))
    plain = load_trace(shared_traces / "tpcc-small.trace")
    assert_same(load_trace(multi), plain)
    assert_same(load_trace(multi_zst), plain)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_truncated_stream_is_an_error(shared_traces: Path, tmp_path: Path, kind: str) -> None:
    raw = (shared_traces / "tpcc-small.trace").read_bytes()
    packed = gzip.compress(raw) if kind == "gzip" else zstandard.ZstdCompressor().compress(raw)
    path = write(tmp_path, "cut.trace", packed[: len(packed) // 2])
    with pytest.raises(TraceFormatError, match=f"truncated {kind}") as info:
        load_trace(path, "mqsim")
    assert info.value.path == str(path) and str(path) in str(info.value)


def test_corrupt_gzip_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.gz", b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    with pytest.raises(TraceFormatError, match="gzip") as info:
        load_trace(path, "mqsim")
    assert info.value.path == str(path)


# -------------------------------------------------------- fixtures from the published formats


def test_msr_cambridge(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "web_0.csv",
                 "128166372003061629,web,0,Read,3221225472,4096,15285\n"
                 "128166372016382155,web,0,Write,3221233664,512,6290\n")
    trace = load_trace(path)
    assert trace.source["format"] == "msr"
    assert trace.op.tolist() == [READ, WRITE]
    assert trace.offset.tolist() == [3_221_225_472, 3_221_233_664]
    assert trace.size.tolist() == [4096, 512]
    # times count from the first request, subtracted as integer 100 ns ticks: exact (through
    # float64 first, a filetime of ~1.3e16 µs is only resolved to 2 µs)
    assert trace.time_us.tolist() == [0.0, float(Fraction(128166372016382155 - 128166372003061629,
                                                           10))]
    assert trace.time_us[1] == 1_332_052.6
    assert trace.source["time_origin"] == "128166372003061629"


def test_systor17_header_and_blank_iotype(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "2016022219-LUN4.csv",
                 "Timestamp,Response,IOType,LUN,Offset,Size\r\n"
                 "1487304000.012345,0.000210,R,3,1024,4096\r\n"
                 "1487304000.012400,0.000100,,3,2048,8192\r\n"
                 "1487304000.5,0.0003,W,1,4096,512\r\n")
    trace = load_trace(path)
    assert trace.source["format"] == "systor17" and trace.source["header"] is True
    assert columns(trace) == ([1_487_304_000_012_345.0, 1_487_304_000_500_000.0], [READ, WRITE],
                              [1024, 4096], [4096, 512])
    assert trace.source["dropped"] == {"blank IOType": 1} and trace.source["skipped"] == 0


def test_alibaba(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "io_traces.csv",
                 "0,R,126703644672,4096,1577808000000067\n"
                 "3,W,8192,16384,1577808000000100\n")
    trace = load_trace(path)
    assert trace.source["format"] == "alibaba"
    assert columns(trace) == ([1_577_808_000_000_067.0, 1_577_808_000_000_100.0], [READ, WRITE],
                              [126_703_644_672, 8192], [4096, 16384])


def test_tencent_sectors(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "cbs.csv", "1538323200,57089024,8,1,1063\n1538323201,100,16,0,1063\n")
    trace = load_trace(path)
    assert trace.source["format"] == "tencent"
    assert columns(trace) == ([1_538_323_200e6, 1_538_323_201e6], [WRITE, READ],
                              [57_089_024 * 512, 100 * 512], [4096, 8192])


def test_fiu(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "homes.blkparse",
                 "89967404265337 4280 syslogd 1123 8 W 6 0 c6e1b6ae8a0fa2d37e3b3f5e21a3c68c\n"
                 "89967404265400 4281 nfsd 2048 16 R 6 0 0a8b2c3d4e5f60718293a4b5c6d7e8f9\n")
    trace = load_trace(path)
    assert trace.source["format"] == "fiu"
    assert columns(trace) == ([89_967_404_265.337, 89_967_404_265.4], [WRITE, READ],
                              [1123 * 512, 2048 * 512], [4096, 8192])


def test_spc_umass(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "Financial1.spc",
                 "0,303567,3584,w,0.000000\n1,55590,3072,R,0.026214\n2,1,512,r,0.5,extra\n")
    trace = load_trace(path)
    assert trace.source["format"] == "spc"
    assert columns(trace) == ([0.0, 26_214.0, 500_000.0], [WRITE, READ, READ],
                              [303_567 * 512, 55_590 * 512, 512], [3584, 3072, 512])


def test_mqsim_and_heimdall_told_apart(tmp_path: Path, engine: str) -> None:
    mqsim = write(tmp_path, "a.trace", "1000 0 8 16 0\n2500 1 24 8 1\n")
    heimdall = write(tmp_path, "b.trace", "0.000 0 4096 4096 1\n1.5 0 8192 512 0\n")
    assert columns(load_trace(mqsim)) == ([1.0, 2.5], [WRITE, READ], [4096, 12_288], [8192, 4096])
    trace = load_trace(heimdall)
    assert trace.source["format"] == "heimdall"
    assert columns(trace) == ([0.0, 1500.0], [READ, WRITE], [4096, 8192], [4096, 512])
    assert load_trace(heimdall, "mqsim").size.tolist() == [4096 * 512, 512 * 512]


def test_blkparse_pairs_completions_for_latency(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "run.txt", """\
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000001000   697  D   W 223490 + 8 [kjournald]
  8,0    3        3     0.000002500   697  D   R 1000 + 16 [cat]
  8,0    3        4     0.000010000     0  C   W 223490 + 8 [0]
  8,0    3        5     0.000012000   697  D   N 0 (00 ..) [kworker/u65:0]
  8,0    3        6     0.000020000     0  C   R 1000 + 16 [0]
  8,0    3        7     0.000030000   697  D FWS 0 + 0 [jbd2/sda1-8]
  8,0    3        8     0.000040000   697  D  DS 2048 + 8 [fstrim]
  8,0    3        9     0.000050000   697  D   R 5000 + 8 [cat]
CPU3 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB
""")
    trace = load_trace(path)
    assert trace.source["format"] == "blkparse"
    assert columns(trace) == ([1.0, 2.5, 50.0], [WRITE, READ, READ],
                              [223_490 * 512, 1000 * 512, 5000 * 512], [4096, 8192, 4096])
    latency = trace.source["latency_us"]
    assert latency[:2].tolist() == [9.0, 17.5] and math.isnan(latency[2])
    assert trace.source["dropped"] == {"no_data": 2, "discard": 1}
    assert trace.source["completions_paired"] == 2


def test_fio_v2_synthesises_times(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "job.iolog", """\
fio version 2 iolog
/dev/sdb add
/dev/sdb open
/dev/sdb write 0 4096
/dev/sdb read 4096 8192
/dev/sdb sync 0 0
/dev/sdb wait 1000 0
/dev/sdb trim 0 4096
/dev/sdb write 8192 4096
/dev/sdb close
""")
    trace = load_trace(path)
    assert trace.source["format"] == "fio" and trace.source["iolog_version"] == 2
    assert columns(trace) == ([0.0, 100.0, 1000.0], [WRITE, READ, WRITE], [0, 4096, 8192],
                              [4096, 8192, 4096])
    assert trace.source["dropped"] == {"sync": 1, "trim": 1}
    assert trace.source["files"] == ["/dev/sdb"]
    assert load_trace(path, gap_us=7.5).time_us.tolist() == [0.0, 7.5, 1000.0]


def test_fio_v3_timestamps(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "v3.log", """\
fio version 3 iolog
2 /dev/nvme0n1 add
872 /dev/nvme0n1 open
878 /dev/nvme0n1 write 0 16384
888 /dev/nvme0n1 read 16384 16384
900 /dev/nvme0n1 datasync 0 0
10001677 /dev/nvme0n1 close
""")
    trace = load_trace(path)
    assert columns(trace) == ([878.0, 888.0], [WRITE, READ], [0, 16_384], [16_384, 16_384])
    assert trace.source["dropped"] == {"datasync": 1}
    assert load_trace(path, time_unit="ms").time_us.tolist() == [878_000.0, 888_000.0]


def test_generic_csv_by_name_and_by_index(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "mine.txt", "ts;lba;len;kind\n0.5;10;8;READ\n1.25;20;16;write\n")
    expected = ([500_000.0, 1_250_000.0], [READ, WRITE], [5120, 10_240], [4096, 8192])
    by_name = load_trace(path, "csv", delimiter=";", time_unit="s", offset_unit=512, size_unit=512,
                         columns={"time": "ts", "offset": "lba", "size": "len", "op": "kind"})
    assert columns(by_name) == expected
    by_index = load_trace(path, "csv", delimiter=";", time_unit="s", offset_unit=512, size_unit=512,
                          columns={"time": 0, "offset": 1, "size": 2, "op": 3})
    assert columns(by_index) == expected and by_index.source["header"] is True
    spaced = write(tmp_path, "spaced.txt", "x 7 0 100 1024\ny 9 1 200 2048 tail\n")
    trace = load_trace(spaced, "csv", delimiter=None, time_unit="ms", header=False,
                       offset_unit=1, size_unit=1, columns={"time": 1, "op": 2, "offset": 3, "size": 4},
                       read_values=("0",), write_values=("1",))
    assert columns(trace) == ([7000.0, 9000.0], [READ, WRITE], [100, 200], [1024, 2048])
    assert trace.source["options"]["read_values"] == ["0"]


def test_generic_csv_option_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "x.csv", "t,o,s,op\n1,0,512,r\n")
    with pytest.raises(TypeError, match="columns"):
        load_trace(path, "csv")
    with pytest.raises(ValueError, match="time_unit"):
        load_trace(path, "csv", columns={"time": 0, "offset": 1, "size": 2, "op": 3},
                   time_unit="fortnight")
    with pytest.raises(TraceFormatError, match="not in the header") as info:
        load_trace(path, "csv", columns={"time": "when", "offset": 1, "size": 2, "op": 3},
                   time_unit="s", offset_unit=1, size_unit=1)
    assert info.value.field == "when" and info.value.path == str(path)
    with pytest.raises(TypeError, match="unknown option"):
        load_trace(path, "mqsim", gap_us=3)


# ------------------------------------------------------------------------------ detection


def test_detect_format(tmp_path: Path, shared_traces: Path) -> None:
    assert detect_format(shared_traces / "cloudPhysicsIO.csv") == "cloudphysics"
    assert detect_format(shared_traces / "tpcc-small.trace") == "mqsim"
    assert detect_format(shared_traces / "msr-excerpt-rw20.trace") == "heimdall"
    assert detect_format(shared_traces / "blkparse-wiscsee.txt") == "blkparse"
    assert detect_format(write(tmp_path, "a.iolog", "fio version 3 iolog\n1 f add\n")) == "fio"
    with pytest.raises(TraceFormatError, match="could not detect") as info:
        detect_format(write(tmp_path, "junk.txt", "hello world\n"))
    assert info.value.path == str(tmp_path / "junk.txt")
    assert set(FORMATS) >= {"msr", "systor17", "alibaba", "tencent", "fiu", "blkparse", "fio",
                            "mqsim", "spc", "cloudphysics", "heimdall", "csv", "cache"}


def test_cloudphysics_rows_without_header_are_not_guessed(tmp_path: Path) -> None:
    path = write(tmp_path, "rows.csv", "1,100,2a,512,7\n")
    with pytest.raises(TraceFormatError, match="could not detect"):
        load_trace(path)
    assert load_trace(path, "cloudphysics").offset.tolist() == [7 * 512]


# ------------------------------------------------------------------------------ bad input

CLOUD_HEADER = "version,time,op,size,lbn\n"


@pytest.mark.parametrize("row, field, message", [
    ("1,5633898,2a,5x12,42932745", "size", "expected an unsigned integer, got '5x12'"),
    ("1,5633898,2b,512,42932745", "op", "unknown op code '2b'"),
    ("1,56e3,2a,512,42932745", "time", "expected a decimal number"),
    ("1,5633898,2a,512", "lbn", "expected 5 fields separated by ',', found 4"),
    ("1,5633898,2a,0,42932745", "size", "size must be > 0"),
    ("1,5633898,2a,512,99999999999999999999", "lbn", "value too large"),
    ("1,5633898,2a,512,99999999999999999", "lbn", r"at or beyond 4 PiB"),
    ("1,5633898,2a,512,8796093022208", "lbn", r"at or beyond 4 PiB"),
    ("1,5633898,2a,4096,8796093022200", "size", r"ends at or beyond 4 PiB"),
])
def test_malformed_row_names_file_line_and_field(tmp_path: Path, engine: str, row: str,
                                                 field: str, message: str) -> None:
    path = write(tmp_path, "bad.csv", CLOUD_HEADER + "1,5633898,2a,512,1\n" + row + "\n"
                 "1,5633899,28,512,2\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert message in str(err) and f"file {path}" in str(err) and "line 3" in str(err)
    with pytest.warns(SkippedRowsWarning, match="skipped 1 malformed row"):
        trace = load_trace(path, skip_bad=True)
    assert trace.source["skipped"] == 1 and trace.offset.tolist() == [512, 1024]


def test_too_many_fields_and_first_error_wins(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "bad.csv", CLOUD_HEADER + "1,1,2a,512,1,9\n1,1,zz,512,1\n")
    with pytest.raises(TraceFormatError, match="found 6") as info:
        load_trace(path, "cloudphysics")
    assert info.value.line == 2 and info.value.field is None


def test_skip_bad_reports_counts_and_zero_requests(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "bad.csv", CLOUD_HEADER + "1,1,2a,x,1\n\n1,2,2a,512,y\n")
    with pytest.raises(TraceFormatError, match="zero requests") as info:
        load_trace(path, "cloudphysics", skip_bad=True)
    assert "2 malformed rows skipped" in str(info.value)
    with pytest.raises(TraceFormatError, match="zero requests"):
        load_trace(write(tmp_path, "empty.csv", ""), "msr")
    with pytest.raises(TraceFormatError, match="zero requests"):
        load_trace(write(tmp_path, "head.csv", CLOUD_HEADER), "cloudphysics")


def test_blank_lines_are_not_records(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "gaps.trace", "\n1000 0 8 16 0\n   \n\t\n2000 0 8 16 1")
    trace = load_trace(path, "mqsim")
    assert len(trace) == 2 and trace.source["skipped"] == 0


def test_time_going_backwards(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "order.trace", "1000 0 8 16 0\n3000 0 8 16 0\n2000 0 9 16 1\n")
    with pytest.raises(TraceFormatError, match="goes backwards") as info:
        load_trace(path, "mqsim")
    assert (info.value.line, info.value.field) == (3, "arrival_time")
    with pytest.raises(TraceFormatError, match="goes backwards"):
        list(iter_chunks(path, "mqsim", chunk_size=1))
    trace = load_trace(path, "mqsim", sort=True)
    assert trace.time_us.tolist() == [1.0, 2.0, 3.0] and trace.offset.tolist()[1] == 9 * 512
    assert trace.source["sorted"] is True


def test_limit_reads_the_head(shared_traces: Path) -> None:
    path = shared_traces / "cloudPhysicsIO.csv"
    head = load_trace(path, limit=1000, block_bytes=7000)
    assert len(head) == 1000 and head.source["limit"] == 1000
    assert_same(head, load_trace(path).slice(0, 1000))
    assert head.source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert sum(len(c) for c in iter_chunks(path, chunk_size=300, limit=1000)) == 1000
    with pytest.raises(ValueError, match="limit"):
        load_trace(path, limit=0)


def test_blkparse_and_fio_errors(tmp_path: Path) -> None:
    blk = write(tmp_path, "b.txt", "  8,0 3 1 0.000001 697 D W 10 + 8 [a]\n"
                                   "  8,0 3 2 0.0000x2 697 D W 20 + 8 [a]\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(blk, "blkparse")
    assert (info.value.line, info.value.field) == (2, "time")
    with pytest.warns(SkippedRowsWarning):
        assert load_trace(blk, "blkparse", skip_bad=True).source["skipped"] == 1
    fio = write(tmp_path, "f.log", "fio version 2 iolog\nf add\nf write 0 x\nf scribble 0 1\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(fio, "fio")
    assert (info.value.line, info.value.field) == (3, "length")
    with pytest.raises(TraceFormatError, match=r"zero requests \(2 malformed rows skipped"):
        load_trace(fio, "fio", skip_bad=True)
    with pytest.raises(TraceFormatError, match="not a fio iolog") as info:
        load_trace(write(tmp_path, "g.log", "f write 0 1\n"), "fio")
    assert info.value.line == 1


def test_iter_chunks_is_bounded_and_validated(shared_traces: Path) -> None:
    path = shared_traces / "cloudPhysicsIO.csv"
    chunks = iter_chunks(path, chunk_size=50_000, block_bytes=1 << 16, hash_file=False)
    first = next(chunks)
    assert len(first) == 50_000 and first.source["sha256"] is None
    assert first.source["chunk"] == 0 and first.source["format"] == "cloudphysics"
    assert [len(c) for c in chunks] == [50_000, 13_872]
    with pytest.raises(ValueError, match="chunk_size"):
        next(iter_chunks(path, chunk_size=0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_reading_in_a_forked_child(shared_traces: Path) -> None:
    """The helper thread that hashes large files is per process (RL libraries fork workers)."""
    path = shared_traces / "cloudPhysicsIO.csv"
    assert len(load_trace(path)) == 113_872  # starts the helper thread in this process
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(_count_requests, (str(path),)).get(timeout=60) == 113_872


def _count_requests(path: str) -> int:
    return len(load_trace(path))


def test_tab_separated_csv_with_crlf(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "t.tsv",
                 "time\top\toff\tlen\r\n1.5\tR\t0\t512\r\n\t\t\r\n2\tW\t8\t4096\r\n")
    trace = load_trace(path, "csv", delimiter="\t", columns={"time": 0, "op": 1, "offset": 2,
                                                              "size": 3}, **BYTES_AND_SECONDS)
    assert columns(trace) == ([1_500_000.0, 2_000_000.0], [READ, WRITE], [0, 8], [512, 4096])


# ------------------------------------------------------------- text variants of real files

BOM = b"\xef\xbb\xbf"

# (format, file name, text with a header where the format has one, requests)
VARIANT_SAMPLES = [
    ("msr", "web_0.csv", "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
                         "128166372003061629,web,0,Read,3221225472,4096,15285\n", 1),
    ("systor17", "LUN4.csv", "Timestamp,Response,IOType,LUN,Offset,Size\n"
                             "1487304000.012345,0.000210,R,3,1024,4096\n", 1),
    ("tencent", "cbs.csv", "1538323200,57089024,8,1,1063\n", 1),
    ("heimdall", "b.trace", "0.000 0 4096 4096 1\n1.5 0 8192 512 0\n", 2),
    ("blkparse", "run.txt",
     "  8,0    3        2     0.000001000   697  D   W 223490 + 8 [kjournald]\n", 1),
    ("fio", "job.iolog", "fio version 2 iolog\n/dev/sdb add\n/dev/sdb write 0 4096\n", 1),
]


@pytest.mark.parametrize("fmt, name, text, n", VARIANT_SAMPLES, ids=[s[0] for s in VARIANT_SAMPLES])
@pytest.mark.parametrize("packing", ["plain", "gzip", "zstd"])
def test_utf8_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path, engine: str, fmt: str,
                                                            name: str, text: str, n: int,
                                                            packing: str) -> None:
    """Windows tools start UTF-8 text with a BOM; it made the first field unparsable (or hid the
    format from detection)."""
    data = BOM + text.replace("\n", "\r\n").encode()
    raw = {"plain": data, "gzip": gzip.compress(data),
           "zstd": zstandard.ZstdCompressor().compress(data)}[packing]
    path = write(tmp_path, name, raw)
    trace = load_trace(path, block_bytes=7)
    assert trace.source["format"] == fmt and len(trace) == n and trace.source["skipped"] == 0
    assert trace.source["sha256"] == hashlib.sha256(raw).hexdigest()  # of the file as stored
    assert_same(trace, load_trace(write(tmp_path, "no-bom-" + name, text), fmt))


def test_byte_order_mark_and_header_names_in_generic_csv(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "mine.csv", BOM + b"ts,lba,len,kind\r\n0.5,10,8,r\r\n")
    trace = load_trace(path, "csv", columns={"time": "ts", "offset": "lba", "size": "len",
                                             "op": "kind"}, **BYTES_AND_SECONDS)
    assert columns(trace) == ([500_000.0], [READ], [10], [8])


def test_utf16_text_is_refused_saying_so(tmp_path: Path) -> None:
    text = "0.000 0 4096 4096 1\r\n"
    for encoding in ("utf-16", "utf-16-be"):
        data = ("\ufeff" if encoding.endswith("be") else "") + text
        path = write(tmp_path, "w.trace", data.encode(encoding))
        with pytest.raises(TraceFormatError, match="UTF-16") as info:
            load_trace(path, "heimdall")
        assert info.value.path == str(path)


@pytest.mark.parametrize("fmt, header, row", [
    ("msr", "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
     "128166372003061629,web,0,Read,3221225472,4096,15285"),
    ("systor17", "Timestamp,Response,IOType,LUN,Offset,Size", "1487304000.5,0.0003,W,1,4096,512"),
    ("cloudphysics", "version,time,op,size,lbn", "1,5633898,2a,512,1"),
])
def test_header_after_blank_lines(tmp_path: Path, engine: str, fmt: str, header: str,
                                  row: str) -> None:
    """A header preceded by blank lines was read as a malformed row (or, for CloudPhysics, whose
    rows alone are not guessed, hid the format from detection)."""
    bad = row.replace("5", "x", 1)
    path = write(tmp_path, "t.csv", f"\r\n  \n{header}\r\n{row}\r\n{row}\r\n{bad}\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert info.value.line == 6  # line numbers still count the blank lines and the header
    with pytest.warns(SkippedRowsWarning):
        trace = load_trace(path, skip_bad=True)
    assert trace.source["format"] == fmt and trace.source["header"] is True and len(trace) == 2


def test_generic_csv_header_names_after_a_blank_line(tmp_path: Path, engine: str) -> None:
    path = write(tmp_path, "mine.csv", "\nts,lba,len,kind\n0.5,10,8,r\n")
    trace = load_trace(path, "csv", columns={"time": "ts", "offset": "lba", "size": "len",
                                             "op": "kind"}, **BYTES_AND_SECONDS)
    assert columns(trace) == ([500_000.0], [READ], [10], [8])


@pytest.mark.parametrize("head, cut, field", [
    ("fio version 2 iolog\nf add\n", "f read 0", "length"),
    ("fio version 2 iolog\nf add\n", "f", "action"),
    ("fio version 3 iolog\n1 f add\n", "2 f read 0", "length"),
    ("fio version 3 iolog\n1 f add\n", "2", "filename"),
])
def test_fio_line_cut_short_names_the_missing_field(tmp_path: Path, head: str, cut: str,
                                                    field: str) -> None:
    """A truncated fio iolog line names the first missing field (it always said 'action')."""
    with pytest.raises(TraceFormatError, match="fields") as info:
        load_trace(write(tmp_path, "cut.iolog", head + cut), "fio")
    assert (info.value.line, info.value.field) == (3, field)


def test_dropped_rows_may_have_no_data(tmp_path: Path, engine: str) -> None:
    """A SYSTOR'17 row with a blank IOType (no data transfer, dropped) may say Size 0; it was a
    malformed row. A read or write of 0 bytes still is one."""
    header = "Timestamp,Response,IOType,LUN,Offset,Size\n"
    path = write(tmp_path, "LUN0.csv", header + "1.5,0.1,R,1,0,512\n2,0.1,,1,0,0\n3,0.1,W,1,8,512\n")
    trace = load_trace(path)
    assert trace.source["format"] == "systor17" and trace.source["dropped"] == {"blank IOType": 1}
    assert columns(trace) == ([1_500_000.0, 3_000_000.0], [READ, WRITE], [0, 8], [512, 512])
    zero = write(tmp_path, "LUN1.csv", header + "1.5,0.1,R,1,0,512\n2,0.1,W,1,0,0\n")
    with pytest.raises(TraceFormatError, match="size must be > 0") as info:
        load_trace(zero, "systor17")
    assert (info.value.line, info.value.field) == (3, "Size")
    flush = write(tmp_path, "c.txt", "1 r 0 512\n2 f 0 0\n")
    trace = load_trace(flush, "csv", delimiter=None, columns={"time": 0, "op": 1, "offset": 2,
                                                               "size": 3}, drop_values=("f",),
                       **BYTES_AND_SECONDS)
    assert len(trace) == 1 and trace.source["dropped"] == {"drop_values": 1}


def test_formats_module_hands_on_the_split_modules_names() -> None:
    """readers.formats keeps every public name it had before the split, as the very objects of
    the modules that now define them (protocol, delimited, table, blkparse, fio, detect)."""
    import importlib

    from hss_gym.workloads.readers import formats
    parts = [importlib.import_module(f"hss_gym.workloads.readers.{name}")
             for name in ("protocol", "delimited", "table", "blkparse", "fio", "detect")]
    for name in formats.__all__:
        assert any(vars(m).get(name) is getattr(formats, name) for m in parts), name
