"""Bad or unusual input gets a clear answer: every blkparse line form, format detection that
refuses to guess, the 4 PiB address limit, missing paths, FIFOs, and option validation."""
from __future__ import annotations

import gzip
import math
import os
import resource
import subprocess
import sys
import threading
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
import zstandard

import hss_gym
from hss_gym.config import make_config
from hss_gym.hss import HSS
from hss_gym.replay import replay
from hss_gym.workloads import make_trace
import hss_gym.workloads.readers
from hss_gym.workloads.readers import SkippedRowsWarning, detect_format, iter_chunks, load_trace
from hss_gym.workloads.readers import formats as readers_formats
from hss_gym.workloads.registry import get_trace
from hss_gym.workloads.trace import MAX_BYTES, READ, WRITE, Trace, TraceFormatError


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def line(seq: int, t: str, action: str, rwbs: str, rest: str, dev: str = "8,0") -> str:
    """One event line as blkparse's process_default prints it ("%3d,%-3d %2d %8d %5d.%09lu %5u
    %2s %3s " then the action's part)."""
    major, minor = dev.split(",")
    return f"{major:>3},{minor:<3} {1:2d} {seq:8d} {t:>15} {697:5d} {action:>2} {rwbs:>3} {rest}\n"


# One line of every form blkparse(1) prints (blkparse_fmt.c, process_default), as a real trace
# interleaves them: a write queued, merged, issued, completed; a read with -t elapsed times; a
# flush; a discard; packet commands; plug/unplug, remap, split, message, zone (un)plug lines.
EVERY_FORM = "".join([
    line(1, "0.000000000", "A", "W", "2048 + 8 <- (8,1) 0"),
    line(2, "0.000000100", "Q", "WS", "2048 + 8 [jbd2/sda1-8]"),
    line(3, "0.000000200", "G", "WS", "2048 + 8 [jbd2/sda1-8]"),
    line(4, "0.000000300", "P", "N", "[jbd2/sda1-8]"),
    line(5, "0.000000400", "Q", "WS", "2056 + 8 [jbd2/sda1-8]"),
    line(6, "0.000000500", "M", "WS", "2056 + 8 [jbd2/sda1-8]"),
    line(7, "0.000000600", "I", "WS", "2048 + 16 [jbd2/sda1-8]"),
    line(8, "0.000000700", "U", "N", "[jbd2/sda1-8] 1"),
    line(9, "0.000001000", "D", "WS", "2048 + 16 [jbd2/sda1-8]"),           # request 1
    line(10, "0.000002000", "Q", "RA", "4096 + 8 (    1000) [cat]"),          # -t: elapsed
    line(11, "0.000002500", "S", "RA", "[cat]"),
    line(12, "0.000003000", "D", "RA", "4096 + 8 (    1000) [cat]"),          # request 2
    line(13, "0.000004000", "X", "R", "8192 / 8200 [dd]"),
    line(14, "0.000005000", "Q", "FWS", "[kworker/0:1H]"),                    # flush, no data
    line(15, "0.000005100", "D", "FWS", "[kworker/0:1H]"),                    # dropped: no_data
    line(16, "0.000005200", "C", "FWS", "0 [0]"),                             # C without size
    line(17, "0.000006000", "D", "DS", "10000 + 2048 [fstrim]"),              # dropped: discard
    line(18, "0.000007000", "D", "N", "0 (00 ..) [kworker/u65:0]"),           # dropped: no_data
    line(19, "0.000007500", "D", "R", "8192 (28 00 00 00 ..) [sg_dd]"),       # dropped: packet
    line(20, "0.000007600", "D", "R", "8192 [sg_dd]"),                        # packet, no cdb
    line(21, "0.000007700", "C", "R", "(28 00 00 00 ..) [0]"),                # packet complete
    line(22, "0.000008000", "C", "WS", "2048 + 16 [0]"),                      # completes 1
    line(23, "0.000009000", "C", "RA", "4096 + 8 (    6000) [0]"),            # completes 2
    line(24, "0.000010000", "D", "W", "6000 + 8 [kworker]"),                  # request 3
    line(25, "0.000010500", "R", "W", "6000 + 8 [0]"),                        # requeued ...
    line(26, "0.000011000", "D", "W", "6000 + 8 [kworker]"),                  # ... and reissued
    line(27, "0.000012000", "C", "W", "6000 + 8 [-5]"),                       # an I/O error
    line(28, "0.000013000", "UT", "N", "[kworker] 2"),
    line(29, "0.000014000", "ZP", "N", "[kworker]"),
    line(30, "0.000014500", "ZU", "N", "[kworker] 1"),
    line(31, "0.000015000", "m", "N", "cfq697 insert_request"),
    line(32, "0.000016000", "D", "WFSM", "7000 + 1 [xfsaild]", dev="8,16"),  # another device
    "CPU1 (8,0):\n Reads Queued:           1,        4KiB\t Writes Queued:           2,        8KiB\n",
    "\nTotal (8,0):\nEvents (8,0): 31 entries\nSkips: 0 forward (0 -   0.0%)\n",
])


def test_blkparse_every_line_form(tmp_path: Path) -> None:
    path = write(tmp_path, "all.txt", EVERY_FORM)
    assert detect_format(path) == "blkparse"
    trace = load_trace(path)
    assert trace.op.tolist() == [WRITE, READ, WRITE, WRITE]
    assert trace.offset.tolist() == [2048 * 512, 4096 * 512, 6000 * 512, 7000 * 512]
    assert trace.size.tolist() == [16 * 512, 8 * 512, 8 * 512, 512]
    assert trace.time_us.tolist() == [1.0, 3.0, 10.0, 16.0]
    src = trace.source
    assert src["event"] == "D" and src["skipped"] == 0
    assert src["dropped"] == {"no_data": 2, "discard": 1, "packet_command": 2, "requeued": 1}
    assert src["events"]["D"] == 10 and src["events"]["Q"] == 4 and src["events"]["UT"] == 1
    assert src["devices"] == ["8,0", "8,16"]
    assert src["completions_paired"] == 3 and src["completion_errors"] == 1
    lat = src["latency_us"]
    assert lat[:3].tolist() == pytest.approx([7.0, 6.0, 2.0]) and math.isnan(lat[3])


def test_blkparse_queued_events_and_one_device(tmp_path: Path) -> None:
    path = write(tmp_path, "all.txt", EVERY_FORM)
    q = load_trace(path, event="Q")
    assert q.source["event"] == "Q"
    assert q.offset.tolist() == [2048 * 512, 2056 * 512, 4096 * 512]  # the bios, before merging
    assert q.source["dropped"] == {"no_data": 1}
    assert q.source["latency_us"][2] == pytest.approx(7.0) and math.isnan(q.source["latency_us"][0])
    assert load_trace(path, device="8,16").offset.tolist() == [7000 * 512]
    with pytest.raises(ValueError, match="event must be one of"):
        load_trace(path, event="X")
    with pytest.raises(ValueError, match="major,minor"):
        load_trace(path, device="sda")


def test_blkparse_without_issue_events_says_which_to_use(tmp_path: Path) -> None:
    path = write(tmp_path, "dm.txt", line(1, "0.000001000", "Q", "W", "8 + 8 [dd]", dev="253,0")
                 + line(2, "0.000002000", "C", "W", "8 + 8 [0]", dev="253,0"))
    with pytest.raises(TraceFormatError, match=r"zero requests.*1 Q events.*event='Q'"):
        load_trace(path)
    assert load_trace(path, event="Q").source["latency_us"].tolist() == [1.0]


def test_blkparse_real_sample_only_issue_events(shared_traces: Path) -> None:
    trace = load_trace(shared_traces / "blkparse-wiscsee.txt")
    assert trace.source["events"] == {"D": 677} and trace.source["skipped"] == 0
    assert len(trace) == 673 and trace.source["devices"] == ["8,33"]


def test_blkparse_bad_fields_name_line_and_field(tmp_path: Path) -> None:
    cases = [(line(1, "0.000001", "D", "Q", "8 + 8 [a]"), "RWBS"),
             (line(1, "0.000001", "D", "W", "8 + x [a]"), "nsectors"),
             (line(1, "0.000001", "D", "W", "nowhere [a]"), "sector"),
             (line(1, "0.000001", "D", "W", f"{MAX_BYTES // 512 - 4} + 8 [a]"), "sector")]
    for text, field in cases:
        path = write(tmp_path, "bad.txt", line(1, "0.0000005", "D", "W", "0 + 8 [a]") + text)
        with pytest.raises(TraceFormatError) as info:
            load_trace(path, "blkparse")
        assert (info.value.line, info.value.field) == (2, field), str(info.value)


def test_blkparse_line_cut_short_is_a_bad_row(tmp_path: Path) -> None:
    """The last line of a truncated blkparse file was skipped without a count (fewer than 7
    fields) or dropped as a packet command (``sector +`` without a count, or a bare number)."""
    first = line(1, "0.0000005", "D", "W", "0 + 8 [a]")
    cut = line(2, "0.000001", "D", "W", "2048 + 8 [a]")
    cases = [(cut[:cut.index("697")], "pid"), (cut[:cut.index("+") + 1], "nsectors"),
             (cut[:cut.index("+")], "sector")]
    for text, field in cases:
        path = write(tmp_path, "cut.txt", first + text.rstrip() + "\n")
        with pytest.raises(TraceFormatError, match="line 2") as info:
            load_trace(path)
        assert info.value.field == field, str(info.value)
        with pytest.warns(SkippedRowsWarning, match="skipped 1 malformed row"):
            trace = load_trace(path, skip_bad=True)
        assert len(trace) == 1 and trace.source["dropped"] == {}


# ------------------------------------------------------------------------------ detection


def test_unaligned_msr_offset_stays_heimdall(tmp_path: Path) -> None:
    """An MSR line whose byte offset is not a multiple of 512 must not turn the file into MQSim
    (which would multiply offsets by 512 and read milliseconds as nanoseconds)."""
    rows = "".join(f"{i * 1.5:.3f} 0 {i * 4096 + (7 if i == 3 else 0)} 4096 {i % 2}\n" for i in range(200))
    path = write(tmp_path, "msr.trace", rows)
    trace = load_trace(path)
    assert trace.source["format"] == "heimdall"
    assert trace.offset[3] == 3 * 4096 + 7 and trace.time_us[2] == 3000.0


def test_detection_tells_disksim_from_mqsim_and_heimdall(tmp_path: Path) -> None:
    # millisecond times with a fraction and block counts: DiskSim (MQSim's times are integer
    # nanoseconds, Heimdall's sizes are bytes, multiples of 512)
    path = write(tmp_path, "odd.trace", "0.5 0 4096 100 1\n1.5 0 8192 100 0\n")
    trace = load_trace(path)
    assert trace.source["format"] == "disksim"
    assert trace.time_us.tolist() == [500.0, 1500.0]
    assert trace.size.tolist() == [100 * 512, 100 * 512]
    assert trace.offset.tolist() == [4096 * 512, 8192 * 512]
    assert (trace.op == READ).tolist() == [True, False]
    assert load_trace(path, "heimdall").size.tolist() == [100, 100]


def test_detection_refuses_integer_times_that_fit_disksim_and_mqsim(tmp_path: Path) -> None:
    # integer times 1 unit apart: 1 ms (DiskSim) or 1 ns (MQSim); a guess would scale time 10^6
    path = write(tmp_path, "odd.trace", "1 0 4096 100 1\n2 0 8192 100 0\n3 0 8 8 1\n")
    with pytest.raises(TraceFormatError, match=r"ambiguous.*'mqsim' and 'disksim'|"
                                                 r"ambiguous.*'disksim' and 'mqsim'") as info:
        load_trace(path)
    assert info.value.path == str(path)
    assert load_trace(path, "disksim").time_us.tolist() == [1000.0, 2000.0, 3000.0]
    # flags is a bitmask: bit 0 is the read bit whatever the other bits say
    other = write(tmp_path, "flags.trace", "0.25 0 8 8 3\n0.5 0 8 8 2\n")
    assert (load_trace(other).op == READ).tolist() == [True, False]
    bad = write(tmp_path, "bad.trace", "0.25 0 8 8 1\n0.5 0 8 8 R\n")
    with pytest.raises(TraceFormatError, match=r"line 2.*flags.*bitmask"):
        load_trace(bad, "disksim")


def test_detection_refuses_a_tie(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from hss_gym.workloads.readers import formats
    for name in ("heimdall", "mqsim"):  # without the unit checks the two formats tie
        monkeypatch.setitem(formats.DELIMITED, name, replace(formats.DELIMITED[name], plausible=None))
    path = write(tmp_path, "x.trace", "1000 0 8 8 1\n")
    with pytest.raises(TraceFormatError, match=r"ambiguous trace format.*'heimdall' and 'mqsim'"):
        detect_format(path)


# ------------------------------------------------------------------------------ paths, limits


@pytest.mark.parametrize("content, message", [
    (b"", "is empty: no requests to read"), (b"\n \n\t\n", "holds no requests: its first 5 bytes are blank"),
    (b"\0" * 512, "is empty"),
])
def test_an_empty_trace_file_says_it_is_empty(tmp_path: Path, content: bytes, message: str) -> None:
    path = write(tmp_path, "empty.csv", content)
    for call in (lambda: load_trace(path), lambda: detect_format(path)):
        with pytest.raises(TraceFormatError, match=message) as info:
            call()
        assert "could not detect" not in str(info.value)


@pytest.mark.parametrize("block_bytes", [1 << 24, 64])
def test_limit_stops_before_a_malformed_line_past_it(tmp_path: Path, block_bytes: int) -> None:
    """load_trace(limit=N) reads N requests: a malformed line N+1 is never read, so it is no
    error (and not counted as skipped); within the limit it still is one, naming its line."""
    rows = [f"{128166372003061629 + i * 1000},hm,1,Read,{i * 4096},4096,100\n" for i in range(8)]
    rows[5] = rows[5].replace(",Read,20480,", ",Read,x,")
    path = write(tmp_path, "t.csv", "".join(rows))
    trace = load_trace(path, "msr", limit=5, block_bytes=block_bytes)
    assert len(trace) == 5 and trace.source["skipped"] == 0
    with pytest.raises(TraceFormatError, match="line 6"):
        load_trace(path, "msr", limit=6, block_bytes=block_bytes)
    with pytest.warns(SkippedRowsWarning, match="skipped 1 malformed row"):
        assert len(load_trace(path, "msr", limit=6, skip_bad=True, block_bytes=block_bytes)) == 6


def test_missing_trace_path_says_it_does_not_exist(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.csv")
    for call in (lambda: load_trace(missing), lambda: get_trace(missing),
                 lambda: next(iter_chunks(missing)), lambda: detect_format(missing)):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            call()
    with pytest.raises(ValueError, match="unknown workload 'ycsbz'"):
        get_trace("ycsbz")
    from hss_gym.benchmarks.suites import SuiteError, check_workload
    with pytest.raises(SuiteError, match="does not exist"):
        check_workload(missing)
    with pytest.raises(SuiteError, match="unknown workload"):
        check_workload("ycsbz")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def read() -> None:
        for call in (lambda: load_trace(fifo), lambda: next(iter_chunks(fifo)),
                     lambda: detect_format(fifo), lambda: get_trace(str(fifo), n=10)):
            try:
                call()
            except BaseException as e:  # noqa: BLE001 - collected and checked below
                errors.append(e)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock it, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert len(errors) == 4
    assert all(isinstance(e, TraceFormatError) and "FIFO" in str(e) for e in errors), errors


def test_offsets_at_4_pib_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="4 PiB"):
        Trace.from_arrays([0.0], [READ], [MAX_BYTES - 4096], [8192])
    ok = Trace.from_arrays([0.0], [READ], [MAX_BYTES - 8192], [4096])
    assert replay(ok, "perf_opt", "fast_only").metrics.requests == 1  # the core takes it
    rows = "".join(f"{i}.000 0 {i * 4096} 4096 1\n" for i in range(4))
    path = write(tmp_path, "far.trace", rows + f"5.000 0 {MAX_BYTES} 4096 1\n")
    with pytest.raises(TraceFormatError, match="4 PiB") as info:
        load_trace(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 5, "offset")
    fio = write(tmp_path, "f.iolog", f"fio version 2 iolog\nf add\nf write {MAX_BYTES - 1} 2\n")
    with pytest.raises(TraceFormatError, match="4 PiB") as info:
        load_trace(fio)
    assert info.value.line == 3


def test_time_error_prints_plain_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "back.trace", "2.000 0 0 4096 1\n1.000 0 0 4096 1\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path, "heimdall")
    assert "2000.0 us" in str(info.value) and "np." not in str(info.value)


# ------------------------------------------------------------------------------ options


def test_options_are_validated_by_name() -> None:
    with pytest.raises(ValueError, match=r"fast_fraction \(fractions\[0\]\) must be in \(0, 1\].*got 2.0"):
        make_config("perf_opt", fast_fraction=2.0)
    with pytest.raises(ValueError, match=r"fast_fraction.*got 1.5\b") as info:
        make_config("perf_opt", fast_fraction=np.float64(1.5))
    assert "np." not in str(info.value)
    with pytest.raises(ValueError, match=r"fractions\[1\] must be in \(0, 1\]"):
        make_config("tri", fractions=(0.1, 3.0))
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=100)
    with pytest.raises(ValueError, match="seed must be a non-negative integer.*-1"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match=r"n_requests must be an integer in \[1, 1_000_000_000\]"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=10**13)
    with pytest.raises(ValueError, match="n_requests"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=0)
    with pytest.raises(ValueError, match=r"\bn must be an integer"):
        make_trace("ycsb-b", n=10**13)
    with pytest.raises(ValueError, match="seed must be a non-negative"):
        make_trace("ycsb-b", n=10, seed=-1)


# ------------------------------------------------------------------------------ command line


def test_cli_missing_trace_and_failed_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hss_gym import cli
    missing = str(tmp_path / "gone.csv")
    assert cli.main(["bench", "--workloads", missing, "--out", str(tmp_path / "b"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "unknown workload" not in err, err
    out = tmp_path / "r"
    assert cli.main(["replay", "--workload", missing, "--out", str(out), "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = write(tmp_path, "bad.trace", "0.5 0 4096 100 1\n1 0 8 x 1\n")  # fails to load
    assert cli.main(["replay", "--workload", str(bad), "--out", str(out), "--quiet"]) == 2
    assert "pass format=" in capsys.readouterr().err
    assert not (out / "results.jsonl").exists()
    assert cli.main(["replay", "--workload", "ycsb-b", "--n", "300", "--config", "perf_opt",
                     "--out", str(out), "--quiet"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) >= 3


# ------------------------------------------------------------------- junk, padding, ordering

def tar_header(name: str) -> bytes:
    """A ustar header block as tar writes it (512 bytes: NUL-padded fields, octal numbers)."""
    block = (name.encode().ljust(100, b"\0") + b"0000644\0" + b"0001750\0" * 2
             + b"00000012345\0" + b"14177026255\0" + b"        " + b"0" + b"\0" * 100
             + b"ustar  \0" + b"ftp".ljust(32, b"\0") + b"ftp".ljust(32, b"\0"))
    return block.ljust(512, b"\0")


FIU_ROWS = ["89966527139 4218 syslogd 1360 8 W 8 0 c6d0f0e8e4e5b2cbd1a63e4e3e9e7d3b",
            "89966556373 4218 syslogd 1368 8 R 8 0 0de0b1ec9d2d5e2a2b7d2c1e4f1b3a7c",
            "89966604209 5632 nfsd 92656 16 W 8 0 8fbb0a0c3b2d1e9f7a6b5c4d3e2f1a0b"]


def fiu_in_a_tar(tmp_path: Path, rows: list[str] = FIU_ROWS, pad: int = 1536) -> Path:
    """An FIU SRCMap trace as cut out of its tar archive: two lines of tar-header junk (the
    header holds one line end in its name field), the rows, then the archive's zero padding."""
    raw = (tar_header("homes/hm\n_0.blkparse") + b"\n" + "\n".join(rows).encode() + b"\n"
           + b"\0" * pad)
    path = tmp_path / "homes-110108-112108.1.blkparse"
    path.write_bytes(raw)
    return path


def test_junk_before_the_first_record_and_nul_padding_are_counted(tmp_path: Path) -> None:
    path = fiu_in_a_tar(tmp_path)
    assert detect_format(path) == "fiu"
    with pytest.warns(hss_gym.workloads.readers.JunkWarning,
                      match=r"2 junk line\(s\) before the first record \(the first: file .*line 1:"
                            r" not a record \(1 fields, not 6 to 9\): 'homes/hm'\) and 1536 NUL "
                            r"padding byte\(s\)"):
        trace = load_trace(path)
    assert trace.source["format"] == "fiu"
    assert trace.source["junk_lines"] == 2 and trace.source["nul_padding"] == 1536
    assert trace.source["skipped"] == 0
    assert trace.offset.tolist() == [1360 * 512, 1368 * 512, 92656 * 512]
    assert trace.op.tolist() == [WRITE, READ, WRITE]
    assert trace.time_us.tolist() == [89966527.139, 89966556.373, 89966604.209]
    with pytest.warns(hss_gym.workloads.readers.JunkWarning):
        chunks = list(iter_chunks(path, chunk_size=1, block_bytes=64))
    assert np.concatenate([c.offset for c in chunks]).tolist() == trace.offset.tolist()
    assert chunks[-1].source["junk_lines"] == 2 and chunks[-1].source["nul_padding"] == 1536
    # a clean file says 0 and warns nothing
    clean = write(tmp_path, "clean.fiu", "\n".join(FIU_ROWS) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = load_trace(clean, "fiu")
    assert plain.source["junk_lines"] == 0 and plain.source["nul_padding"] == 0


def test_junk_is_only_what_comes_before_the_first_record(tmp_path: Path) -> None:
    # a malformed row in the middle is an error naming file and line, junk before it or not
    rows = FIU_ROWS[:2] + ["89966590000 5632 nfsd 92656 x W 8 0"] + FIU_ROWS[2:]
    path = fiu_in_a_tar(tmp_path, rows)
    with pytest.raises(TraceFormatError) as info:
        load_trace(path, "fiu")
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 5, "size")
    # a line shaped like a record with a bad value is malformed, even on line 1
    first = write(tmp_path, "first.fiu", "89966527139 4218 syslogd 1360 0 W 8 0\n"
                  + "\n".join(FIU_ROWS) + "\n")
    with pytest.raises(TraceFormatError, match="size must be > 0") as info:
        load_trace(first, "fiu")
    assert info.value.line == 1
    # junk that no record follows is malformed rows: the first one's error
    only = write(tmp_path, "only.fiu", "# a note\n\0\0\0\n")
    with pytest.raises(TraceFormatError, match=r"line 1: a comment: .# a note.") as info:
        load_trace(only, "fiu")
    assert info.value.line == 1
    # more junk than a preamble (the wrong format=?) is an error at its first line
    many = write(tmp_path, "many.fiu", "note\n" * (readers_formats.MAX_JUNK_LINES + 1)
                 + "\n".join(FIU_ROWS) + "\n")
    for block in (1 << 20, 64):  # in one block, or junk held over many blocks
        with pytest.raises(TraceFormatError, match=r"found 1|not a record \(1 fields") as info:
            load_trace(many, "fiu", block_bytes=block)
        assert info.value.line == 1
    with pytest.warns(SkippedRowsWarning, match="skipped 101 malformed"):
        assert len(load_trace(many, "fiu", skip_bad=True, block_bytes=64)) == 3
    # NULs are padding only at the very end: inside the text they are an error
    inside = write(tmp_path, "inside.fiu", FIU_ROWS[0] + "\n\0\0\n" + FIU_ROWS[1] + "\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(inside, "fiu")
    assert info.value.line == 2


def test_junk_before_a_header_and_glued_to_it(tmp_path: Path) -> None:
    rows = "version,time,op,size,lbn\n1,5633898,2a,512,1\n1,5633899,28,4096,2\n"
    glued = write(tmp_path, "cloud.csv", tar_header("cloudPhysicsIO.csv") + rows.encode()
                  + b"\0" * 700)
    with pytest.warns(hss_gym.workloads.readers.JunkWarning, match="1 junk line"):
        trace = load_trace(glued)   # detected: CloudPhysics needs its header, found after junk
    assert trace.source["format"] == "cloudphysics" and trace.source["header"] is True
    assert trace.source["junk_lines"] == 1 and trace.source["nul_padding"] == 700
    assert trace.size.tolist() == [512, 4096]
    noted = write(tmp_path, "noted.csv", "# exported 2016-02-22\n\0\n" + rows)
    with pytest.warns(hss_gym.workloads.readers.JunkWarning, match="2 junk line"):
        assert load_trace(noted).offset.tolist() == [512, 1024]
    named = write(tmp_path, "named.csv", tar_header("x.csv") + b"t;o;a;s\n0.5;R;8;512\n")
    with pytest.warns(hss_gym.workloads.readers.JunkWarning):
        trace = load_trace(named, "csv", columns={"time": "t", "op": "o", "offset": "a",
                                                   "size": "s"}, delimiter=";",
                           time_unit="s", offset_unit=1, size_unit=1)
    assert trace.time_us.tolist() == [500_000.0] and trace.offset.tolist() == [8]


def test_blkparse_junk_before_the_first_event(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(tar_header("run.txt") + b"\n" + EVERY_FORM.encode() + b"\0" * 512)
    assert detect_format(path) == "blkparse"
    with pytest.warns(hss_gym.workloads.readers.JunkWarning, match="1 junk line.*512 NUL"):
        trace = load_trace(path)
    assert trace.source["junk_lines"] == 1 and len(trace) == 4


def test_blkparse_of_several_cpus_is_sorted_by_default(tmp_path: Path) -> None:
    # per-CPU buffers merged: CPU 1's events come after CPU 0's later ones
    text = (line(1, "0.000001000", "D", "W", "8 + 8 [a]") + line(2, "0.000004000", "D", "W",
            "16 + 8 [a]") + line(1, "0.000002000", "D", "R", "24 + 8 [b]") + line(2,
            "0.000003000", "D", "R", "32 + 8 [b]") + line(3, "0.000004000", "D", "W", "40 + 8 [b]")
            + line(4, "0.000005000", "C", "R", "24 + 8 [0]"))
    path = write(tmp_path, "cpus.txt", text)
    trace = load_trace(path)
    assert trace.time_us.tolist() == [1.0, 2.0, 3.0, 4.0, 4.0]
    assert trace.offset.tolist() == [8 * 512, 24 * 512, 32 * 512, 16 * 512, 40 * 512]  # stable
    assert trace.source["sorted"] is True and trace.source["reordered"] == 2
    assert trace.source["latency_us"][1] == pytest.approx(3.0)  # follows its request
    with pytest.raises(TraceFormatError, match="goes backwards") as info:
        load_trace(path, sort=False)
    assert info.value.line == 3
    with pytest.raises(TraceFormatError, match="goes backwards"):
        list(iter_chunks(path))
    # an ordered file: sorted, nothing moved; other formats are not sorted unless asked
    assert load_trace(path, limit=2).source["reordered"] == 0
    mq = write(tmp_path, "m.trace", "1000 0 8 16 0\n3000 0 8 16 0\n")
    assert load_trace(mq, "mqsim").source["sorted"] is False
    with pytest.raises(ValueError, match="sort must be True, False or None"):
        load_trace(mq, "mqsim", sort="yes")


def test_implausible_values_are_not_answered_with_a_wrong_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that parse only as formats whose units they do not fit: the error does not suggest
    reading the file as one of them (that would rescale times or offsets silently)."""
    from dataclasses import replace
    monkeypatch.setitem(readers_formats.DELIMITED, "disksim",
                        replace(readers_formats.DELIMITED["disksim"], plausible=lambda b: False))
    path = write(tmp_path, "odd.trace", "0.5 0 8 100 1\n1.5 0 16 100 0\n")
    with pytest.raises(TraceFormatError, match=r"'heimdall' or 'mqsim' or 'disksim'.*would "
                                               r"rescale.*does not guess") as info:
        load_trace(path)
    assert "anyway" not in str(info.value)


# ------------------------------------------------- memory: bounded by what is read, not claimed

MSR_ROW = b"128166372003061629,hm,1,Read,4096,4096,100\n"

# the peak memory (ru_maxrss growth, MiB) and the outcome of reading ARGV[1] with limit ARGV[2]
_PEAK_SCRIPT = """
import resource, sys, time
from hss_gym.workloads.readers import load_trace
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    outcome = f"{len(load_trace(sys.argv[1], limit=int(sys.argv[2])))} requests"
except ValueError as exc:
    outcome = f"{type(exc).__name__}: {exc}"
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(grown, round(time.perf_counter() - start, 2), outcome, sep="\\t")
"""


def _bomb(path: Path, kind: str, piece: bytes, mib: int) -> Path:
    """``path``: one gzip member or zstd frame of ``piece`` repeated to ``mib`` MiB (streamed)."""
    chunk = piece * ((1 << 20) // len(piece))
    chunk += piece[:(1 << 20) - len(chunk)]
    comp = (zlib.compressobj(1, wbits=31) if kind == "gzip"
            else zstandard.ZstdCompressor(level=1).compressobj())
    with open(path, "wb") as fh:
        for _ in range(mib):
            fh.write(comp.compress(chunk))
        fh.write(comp.flush())
    return path


def _peak(path: Path, limit: int) -> tuple[int, float, str]:
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(path), str(limit)],
                          capture_output=True, text=True, timeout=120, check=True)
    grown, seconds, outcome = done.stdout.strip().split("\t", 2)
    return int(grown), float(seconds), outcome


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_limit_reads_a_compressed_bomb_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """A small file that decompresses to 384 MiB of valid rows, read with limit=1000: the
    decompression stops soon after the limit (bounded steps), so memory grows by far less than
    the decompressed size and the read is quick."""
    path = _bomb(tmp_path / f"rows.csv.{kind}", kind, MSR_ROW, 384)
    assert path.stat().st_size < 4 << 20
    grown, seconds, outcome = _peak(path, 1000)
    assert outcome == "1000 requests"
    assert grown < 128 and seconds < 10, (grown, seconds)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_line_that_never_ends_is_refused_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """A valid row, then 384 MiB without a line end: not held whole (that would be unbounded
    for a plain file too) but refused once it is longer than any record, naming its line."""
    path = tmp_path / f"junk.csv.{kind}"
    _bomb(path, kind, b"x", 384)
    head = MSR_ROW
    data = path.read_bytes()
    first = (gzip.compress(head) if kind == "gzip"  # multi-member / multi-frame
             else zstandard.ZstdCompressor().compress(head))
    path.write_bytes(first + data)
    grown, seconds, outcome = _peak(path, 1000)
    assert outcome.startswith("LongLineError") and "line 2" in outcome, outcome
    assert str(path) in outcome and "longer than" in outcome
    assert grown < 128 and seconds < 10, (grown, seconds)


def test_long_lines_plain_and_nul_padding(tmp_path: Path) -> None:
    """Plain files too: a line longer than max(block_bytes, MAX_LINE_BYTES) is an error naming
    its line; a long run of NUL bytes at the end is padding, counted but never held."""
    from hss_gym.workloads.readers._io import MAX_LINE_BYTES
    rows = MSR_ROW * 3
    for block_bytes in (64, 1 << 24):
        length = 2 * max(block_bytes, MAX_LINE_BYTES)
        long = write(tmp_path, "long.csv", rows + b"y" * length + b"\n" + MSR_ROW)
        with pytest.raises(TraceFormatError, match="line 4: a line longer than") as info:
            load_trace(long, "msr", block_bytes=block_bytes)
        assert str(long) in str(info.value)
    nuls = 3 * MAX_LINE_BYTES + 5
    padded = write(tmp_path, "padded.csv", rows + b"\0" * nuls)
    with pytest.warns(hss_gym.workloads.readers.JunkWarning, match=f"{nuls} NUL padding"):
        trace = load_trace(padded, "msr", block_bytes=64)
    assert len(trace) == 3 and trace.source["nul_padding"] == nuls
    glued = write(tmp_path, "glued.csv", rows + b"\0" * nuls + MSR_ROW)
    with pytest.raises(TraceFormatError, match="line 4: a line longer than"):
        load_trace(glued, "msr", block_bytes=64)


def test_out_of_memory_names_the_file_and_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A MemoryError while reading is never a bare one: load_trace and iter_chunks say which
    file and what limit to ask for, and the command line prints that, not a traceback."""
    from hss_gym import cli
    from hss_gym.workloads.readers import TraceMemoryError
    path = write(tmp_path, "t.csv", MSR_ROW * 400_000)  # more than the first block
    real = readers_formats.DelimitedParser.parse
    parsed: list[int] = []

    def parse(self: readers_formats.DelimitedParser, data: bytes | memoryview) -> object:
        if getattr(self, "parsed_once", False):  # each reader's second block
            raise MemoryError
        self.parsed_once = True  # type: ignore[attr-defined]
        block = real(self, data)
        parsed.append(len(block))
        return block

    monkeypatch.setattr(readers_formats.DelimitedParser, "parse", parse)
    with pytest.raises(TraceMemoryError, match=r"out of memory after reading (\d+) request") as info:
        load_trace(path, "msr", limit=399000)
    n = parsed[-1]
    assert info.value.count == n and str(info.value).startswith(
        f"file {path}: out of memory after reading {n} request(s) (limit=399000); read fewer "
        f"(load_trace(..., limit=N), hss-gym --n N, e.g. N={n // 2})")
    with pytest.raises(MemoryError, match=f"out of memory after reading {n} request"):
        list(iter_chunks(path, "msr", chunk_size=100_000))
    code = cli.main(["replay", "--workload", str(path), "--config", "perf_opt", "--n", "399000",
                     "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"file {path}: out of memory after reading {n} request(s) (limit=399000)" in err, err


# ------------------------------------------------------ one request larger than every device

HUGE = 16 << 40  # a 16 TiB write
TIB = 1 << 40  # a 1 TiB write: within perf_opt's capacity



def _refused_by_replay_and_env(trace: Trace, path: Path, message: str) -> None:
    """Replay (with the policies whose configurations differ: Fast-Only's ideal one too) and the
    env's reset refuse the trace, with ``message``."""
    for policy in ("lru", "fast_only", "slow_only"):
        with pytest.raises(ValueError, match=message):
            replay(trace, "perf_opt", policy=policy)
    env = hss_gym.parallel_env("perf_opt", workload=str(path))
    with pytest.raises(ValueError, match=message):
        env.reset(seed=0)

def test_a_request_larger_than_the_configuration_fails_fast(tmp_path: Path) -> None:
    """A request larger than the configuration's total capacity (the bounded devices plus the
    home device's nominal capacity) is refused before any per-page work, with a ValueError
    naming the file, the request, its size and the capacity: replay, the env, HSS.begin."""
    path = write(tmp_path, "huge.trace", f"0.5 1 0 {HUGE} 0\n1.0 0 0 4096 0\n")
    trace = load_trace(path)
    cap = make_config("perf_opt").total_capacity_pages(trace.footprint_pages()) * 4096
    assert cap < HUGE
    message = rf"file {path}, request 0: {HUGE} bytes \(16384\.0 GiB\) is larger than " \
              rf"configuration perf_opt's total capacity, {cap} bytes"
    start = time.perf_counter()
    _refused_by_replay_and_env(trace, path, message)
    hss = HSS("perf_opt", footprint_pages=trace.footprint_pages())
    with pytest.raises(ValueError, match=rf"request at offset 0: {HUGE} bytes .* larger than"):
        hss.begin(0.0, WRITE, 0, HUGE)
    assert time.perf_counter() - start < 2
    # a request the devices can hold is read and replayed as before
    ok = write(tmp_path, "ok.trace", "0.5 1 0 1048576 0\n1.0 0 0 4096 0\n")
    assert replay(load_trace(ok), "perf_opt").metrics


def test_a_request_touching_too_many_pages_is_refused_before_any_work(tmp_path: Path) -> None:
    """A request the devices could hold (1 TiB on perf_opt) but touching more pages than one
    request may (MAX_REQUEST_PAGES, 1 GiB: the core keeps state per page, so it used to take
    minutes and gigabytes) is refused before any per-page work, naming the file, the request and
    the limit: replay, the env, HSS.begin, and the core's begin and replay themselves. A request of
    exactly MAX_REQUEST_PAGES pages runs."""
    from hss_gym.hss import MAX_REQUEST_PAGES
    assert MAX_REQUEST_PAGES * 4096 == 1 << 30
    path = write(tmp_path, "tib.trace", f"0.5 1 0 4096 0\n1.0 1 4096 {TIB} 0\n")
    trace = load_trace(path)
    assert TIB < make_config("perf_opt").total_capacity_pages(trace.footprint_pages()) * 4096
    limit = rf"touch {TIB // 4096} pages, more than the {MAX_REQUEST_PAGES} \(1 GiB\) one request may touch"
    message = rf"file {path}, request 1: {TIB} bytes at offset 4096 \(1024\.0 GiB\) {limit}"
    start = time.perf_counter()
    _refused_by_replay_and_env(trace, path, message)
    hss = HSS("perf_opt", footprint_pages=trace.footprint_pages())
    with pytest.raises(ValueError, match=rf"request: {TIB} bytes at offset 4096 .* {limit}"):
        hss.begin(0.0, WRITE, 4096, TIB)
    unaligned = MAX_REQUEST_PAGES * 4096  # one page more from an unaligned offset
    with pytest.raises(ValueError, match=rf"touch {MAX_REQUEST_PAGES + 1} pages, more than"):
        hss.begin(0.0, WRITE, 1, unaligned)
    with pytest.raises(ValueError, match=rf"a request touching more than {MAX_REQUEST_PAGES} pages"):
        hss.core.begin(0.0, WRITE, 1, unaligned)  # the core's own bound, below the Python checks
    lat = np.empty(len(trace))
    with pytest.raises(ValueError, match=rf"request 1 touches more than {MAX_REQUEST_PAGES} pages"):
        hss.core.replay(trace.time_us, trace.op, trace.offset, trace.size, 0, lat)
    assert time.perf_counter() - start < 2
    hss.reset()
    assert hss.begin(0.0, WRITE, 0, unaligned) and hss.finish(1) > 0  # the most one may touch
    assert hss.counters()["pages_accessed"] == MAX_REQUEST_PAGES


@pytest.mark.parametrize("size", [HUGE, TIB])
def test_cli_refuses_a_huge_request_fast_in_bounded_memory(tmp_path: Path, size: int) -> None:
    """The command line: a clear error, exit status 2, quickly, within a 3 GB address space (it
    used to grow for minutes until the OOM killer or a MemoryError traceback ended it): for a
    request larger than the configuration and for one it could hold but touching too many pages."""
    path = write(tmp_path, "huge.trace", f"0.5 1 0 {size} 0\n1.0 0 0 4096 0\n")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "hss_gym.cli", "replay", "--workload", str(path),
                               "--config", "perf_opt", "--out", str(tmp_path / "r"), "--quiet"],
                              capture_output=True, text=True, timeout=30, preexec_fn=cap)
    except subprocess.TimeoutExpired:
        pytest.fail("replay of a 16 TiB request ran for 30 s")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and f"request 0: {size} bytes" in done.stderr
    assert time.perf_counter() - start < 10


def test_cli_says_out_of_memory_for_a_bare_memory_error(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A MemoryError without a message (not from a reader) still gets a sentence."""
    from hss_gym import cli

    def run(args: object) -> int:
        raise MemoryError

    monkeypatch.setattr(cli, "cmd_replay", run)
    assert cli.main(["replay", "--quiet"]) == 2
    assert capsys.readouterr().err == "hss-gym: error: out of memory; ask for fewer requests (--n)\n"
