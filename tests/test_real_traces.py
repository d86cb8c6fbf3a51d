"""The real sample traces of ../shared/traces, read as a user would (format auto-detected): the
facts their README lists (request counts, reads/writes, mean sizes, first and last times), and
their first and last rows checked against the raw lines, parsed here independently with exact
arithmetic. Skipped, saying why, where the shared folder is absent (a user's clone)."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hss_gym.workloads.readers import detect_format, load_trace
from hss_gym.workloads.trace import READ, WRITE

Row = tuple[Fraction, int, int, int]  # time (µs, exact), op, offset, size (bytes)


def msr(line: str) -> Row:
    ts, _host, _disk, kind, offset, size, _resp = line.split(",")
    return Fraction(int(ts), 10), READ if kind == "Read" else WRITE, int(offset), int(size)


def disksim(line: str) -> Row:
    ms, _dev, block, count, flags = line.split()
    return (Fraction(ms) * 1000, READ if int(flags) & 1 else WRITE, int(block) * 512,
            int(count) * 512)


def mqsim(line: str) -> Row:
    ns, _dev, sector, count, kind = line.split()
    return Fraction(int(ns), 1000), READ if kind == "1" else WRITE, int(sector) * 512, int(count) * 512


def heimdall(line: str) -> Row:
    ms, _dev, offset, size, op = line.split()
    return Fraction(ms) * 1000, READ if op == "1" else WRITE, int(offset), int(size)


def cloudphysics(line: str) -> Row:
    _version, s, op, size, lbn = line.split(",")
    return Fraction(s) * 10**6, READ if op == "28" else WRITE, int(lbn) * 512, int(size)


def blkparse_issue(line: str) -> Row | None:
    f = line.split()
    if len(f) < 10 or f[5] != "D" or "N" in f[6] or f[8] != "+":
        return None
    return (Fraction(f[3]) * 10**6, READ if "R" in f[6] else WRITE, int(f[7]) * 512,
            int(f[9]) * 512)


# file -> (format, raw-line parser, lines that are not records, requests, reads, writes,
#          mean size in bytes (README's rounding), first and last time as written)
FACTS: dict[str, tuple[str, Callable[[str], Row | None], int, int, int, int, float, str, str]] = {
    "msr-rsrch_1.csv": ("msr", msr, 0, 13_780, 42, 13_738, 12_465.9, "0", "576557644379.1"),
    "msnfs-disksim.trace": ("disksim", disksim, 0, 149_999, 130_483, 19_516, 34.15 * 512,
                            "0.000", "143068.077"),
    "pcmark-disksim.trace": ("disksim", disksim, 0, 56_088, 41_848, 14_240, 222.48 * 512,
                             "15849.28847", "1482109.5416"),
    "postmark-disksim.trace": ("disksim", disksim, 0, 61_502, 51_149, 10_353, 446.81 * 512,
                               "7961.833", "498398.596"),
    "tpcc-small.trace": ("mqsim", mqsim, 0, 6_999, 4_381, 2_618, 16.66 * 512, "938513000",
                         "1075002000"),
    "msr-excerpt-rw20.trace": ("heimdall", heimdall, 0, 10_000, 2_020, 7_980, None, "",
                               "242904.693"),
    "cloudPhysicsIO.csv": ("cloudphysics", cloudphysics, 1, 113_872, 46_974, 66_898, 36_936.0,
                           "5633898", "5641098"),
    "blkparse-wiscsee.txt": ("blkparse", blkparse_issue, 0, 673, 161, 512, None, "", ""),
}
TIME_UNIT = {"msr": None, "disksim": 1000, "mqsim": Fraction(1, 1000), "heimdall": 1000,
             "cloudphysics": 10**6, "blkparse": 10**6}


def record_lines(path: Path, parse: Callable[[str], Row | None], skip: int) -> list[str]:
    """The lines of ``path`` that are requests (blkparse: issue events with data)."""
    lines = [line for line in path.read_text().splitlines()[skip:] if line.strip()]
    if parse is blkparse_issue:
        lines = [line for line in lines if parse(line) is not None]
    return lines


@pytest.mark.parametrize("name", sorted(FACTS))
def test_readme_facts_and_raw_lines(shared_traces: Path, name: str) -> None:
    fmt, parse, skip, n, reads, writes, mean, first, last = FACTS[name]
    path = shared_traces / name
    assert detect_format(path) == fmt
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # clean files: no junk, nothing skipped, no warning
        trace = load_trace(path)
    src = trace.source
    assert src["format"] == fmt and src["skipped"] == 0
    assert src["junk_lines"] == 0 and src["nul_padding"] == 0
    assert len(trace) == n
    assert int((trace.op == READ).sum()) == reads and int((trace.op == WRITE).sum()) == writes
    if mean is not None:
        digits = 1 if fmt in ("msr", "cloudphysics") else 2
        unit = 1 if fmt in ("msr", "cloudphysics") else 512
        assert round(float(trace.size.mean()) / unit, digits) == round(mean / unit, digits)
    lines = record_lines(path, parse, skip)
    assert len(lines) == n
    rows = {i: parse(lines[i]) for i in (0, 1, 2, n - 1)}
    origin = rows[0][0] if fmt == "msr" else Fraction(0)  # MSR: relative to the first request
    for i, row in rows.items():                           # first rows and the last, exactly
        assert row is not None
        t, op, offset, size = row
        assert trace.time_us[i] == float(t - origin), (name, i)
        assert (int(trace.op[i]), int(trace.offset[i]), int(trace.size[i])) == (op, offset, size)
    unit = TIME_UNIT[fmt]
    if first:
        assert trace.time_us[0] == float(Fraction(first) * (unit or 1))
    if last:
        assert trace.time_us[-1] == float(Fraction(last) * (unit or 1))
    duration = rows[n - 1][0] - rows[0][0]
    assert trace.time_us[-1] - trace.time_us[0] == pytest.approx(float(duration), abs=1e-6)


def test_msr_filetimes_are_exact_to_the_tick(shared_traces: Path) -> None:
    """Every MSR time is (Timestamp - first Timestamp) / 10 µs exactly: through float64 first,
    absolute filetimes (~1.28e17 ticks) lose up to 2 µs and distinct times collapse into ties."""
    path = shared_traces / "msr-rsrch_1.csv"
    trace = load_trace(path)
    ticks = [int(line.split(",", 1)[0]) for line in path.read_text().splitlines()]
    assert trace.source["time_origin"] == str(ticks[0]) == "128166481075232275"
    want = np.array([float(Fraction(t - ticks[0], 10)) for t in ticks])
    np.testing.assert_array_equal(trace.time_us, want)
    distinct = len(set(ticks))
    assert len(np.unique(trace.time_us)) == distinct
    assert len(np.unique(np.array(ticks, dtype=np.float64) / 10)) < distinct  # what float64 did
    first = path.read_text().splitlines()[0]
    assert first == "128166481075232275,rsrch,1,Write,281358336,45056,94872"
    assert (trace.time_us[0], int(trace.op[0]), int(trace.offset[0]), int(trace.size[0])) == (
        0.0, WRITE, 281_358_336, 45_056)
