"""Workloads of L-QoCo (DAC'22 Table 4): request mixes, their offered-load process, real traces.

A workload is a :class:`Phase` sequence; each phase fixes the request mix (block size, I/O size,
read share, sequentiality) and says how much is offered each control period. The paper gives only
the mix of S-1..S-19 (Filebench/FIO/Vdbench runs) and says of R-A..R-E that they are customers'
traces that "differ in I/O type (random or sequential), hybrid I/O size (4KB to 512KB) and
read/write ratio"; the R-x mixes below are our reading of that sentence (documented in
docs/lqoco.md), not the customers' data.

Offered load: a two-state Markov-modulated rate, ``high`` x and ``low`` x the storage tier's
nominal flush bandwidth for the mix (what the tier can absorb in the background), switching after
geometric sojourns (mean ``on_s`` / ``off_s`` seconds), times a per-period log-normal wiggle.
Benchmark tools (S-x) issue at full speed, so by default both levels exceed the nominal bandwidth
(1.5x / 1.1x); the customers' classes (R-x) come in waves with lulls (:data:`BURSTY`: 2x / 0.5x).
The host is closed-loop: its writers and its readers each keep at most ``depth`` requests
outstanding (waiting in the host queue or at the storage tier); arrivals beyond that are not issued
(the benchmark threads block). The process draws from the episode's ``random.Random``: one
``random()`` at each phase start (the initial level), then per period one ``random()`` (the switch)
and one ``gauss()`` (the wiggle). It runs in C with the env's other per-period logic
(``backends/lqoco/lqoco_env.c``, which reproduces ``random.Random`` bit for bit); this module
holds its parameters (:class:`Burst`).

Real traces (``load_trace`` readers) are binned into periods (read/write bytes and mean sizes per
period); ``speedup`` compresses time, ``"auto"`` so that the trace's mean write rate equals
``load`` x the nominal flush bandwidth.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
from hss_gym.workloads.registry import get_trace
from hss_gym.workloads.trace import WRITE, Trace

KB = 1024


@dataclass(frozen=True)
class Mix:
    """The request mix of a workload (Table 4 columns)."""

    name: str
    block: int          # cache block size in bytes
    io: int             # request size in bytes
    read: float         # share of requests that are reads (Table 4 "R/W" column)
    sequential: bool = False
    io_max: int = 0     # hybrid sizes: requests uniformly in [io, io_max] (R-x); 0 = fixed


def _table4() -> dict[str, Mix]:
    rows: list[tuple[str, int, int, list[float]]] = [
        ("S-1", 512, 4 * KB, [0, .3, .5, .7]), ("S-5", 8 * KB, 32 * KB, [0, .3, .7]),
        ("S-8", 8 * KB, 256 * KB, [0, .3, .7]), ("S-11", 32 * KB, 32 * KB, [0, .3, .7]),
        ("S-14", 32 * KB, 256 * KB, [0, .3, .7]), ("S-17", 8 * KB, 8 * KB, [0, .3, .7]),
    ]
    out: dict[str, Mix] = {}
    for first, block, io, reads in rows:
        n0 = int(first[2:])
        for i, r in enumerate(reads):
            name = f"S-{n0 + i}"
            out[name] = Mix(name, block, io, r)
    # R-A..R-E: "Random or Sequential, hybrid I/O size (4KB to 512KB) and read/write ratio"
    out["R-A"] = Mix("R-A", 4 * KB, 4 * KB, 0.3, False, 64 * KB)
    out["R-B"] = Mix("R-B", 32 * KB, 128 * KB, 0.1, True, 512 * KB)
    out["R-C"] = Mix("R-C", 8 * KB, 8 * KB, 0.5, False, 32 * KB)
    out["R-D"] = Mix("R-D", 4 * KB, 4 * KB, 0.7, False, 16 * KB)
    out["R-E"] = Mix("R-E", 8 * KB, 16 * KB, 0.2, True, 256 * KB)
    return out


MIXES: dict[str, Mix] = _table4()
#: the adaptability sequence of §4.3 (Fig. 5)
ADAPT_SEQUENCE = ("S-17", "S-6", "S-18", "S-9", "S-18", "S-7", "S-18", "S-8", "S-19")


@dataclass(frozen=True)
class Burst:
    """The offered-load process, in multiples of the nominal flush bandwidth. The defaults are
    a benchmark tool's (always more than the tier absorbs, varying); :data:`BURSTY` is the
    real-world classes' (waves with lulls)."""

    high: float = 1.5
    low: float = 1.1
    on_s: float = 40.0
    off_s: float = 30.0
    wiggle: float = 0.1
    depth: int = 256

    def __post_init__(self) -> None:
        for f in ("high", "low", "on_s", "off_s", "depth"):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"burst option {f!r} must be a finite number > 0, got {v!r}")
        if not (0 <= self.wiggle < 1):
            raise ValueError(f"burst option 'wiggle' must be in [0, 1), got {self.wiggle!r}")


#: the load process of the real-world classes R-A..R-E (waves with lulls below the tier's bandwidth)
BURSTY = {"high": 2.0, "low": 0.5}


@dataclass
class Phase:
    """``periods`` control periods of one mix; ``trace_bins`` replaces the generator for traces:
    arrays (read_bytes, write_bytes, read_size, write_size) per period."""

    mix: Mix
    periods: int
    trace_bins: tuple[np.ndarray, ...] | None = None


def get_mix(name: str) -> Mix:
    """The mix of a Table-4 workload name (``"S-3"``, ``"R-B"``); ValueError lists the valid names."""
    key = name.upper().replace("_", "-")
    if key not in MIXES:
        raise ValueError(f"unknown L-QoCo workload {name!r}; valid: {', '.join(MIXES)}, "
                         f"'adapt' (the §4.3 sequence), a list of names, or a trace file path")
    return MIXES[key]


def parse_workload(spec: Any, periods: int, block: int = 4 * KB) -> list[Phase]:
    """Phases for a workload spec: a name, ``"adapt"``, a list of names / (name, periods) pairs
    (equal split of ``periods`` for bare names), a trace file path, or a ``Trace``."""

    if isinstance(spec, str) and spec.lower() == "adapt":
        spec = list(ADAPT_SEQUENCE)
    if isinstance(spec, Trace) or (isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec)):
        return [_trace_phase(spec, block)]
    if isinstance(spec, str):
        return [Phase(get_mix(spec), periods)]
    if isinstance(spec, Sequence) and len(spec) > 0:
        items = [(s, None) if isinstance(s, str) else tuple(s) for s in spec]
        bare = [i for i, (_, n) in enumerate(items) if n is None]
        fixed = sum(int(n) for _, n in items if n is not None)
        left = periods - fixed
        if bare and left < len(bare):
            raise ValueError(f"workload sequence: {periods} periods cannot be split over "
                             f"{len(bare)} phases after {fixed} fixed ones")
        phases = []
        for i, (name, n) in enumerate(items):
            if n is None:
                k = bare.index(i)
                n = left // len(bare) + (1 if k < left % len(bare) else 0)
            if int(n) <= 0:
                raise ValueError(f"workload sequence: phase {name!r} needs periods > 0, got {n}")
            phases.append(Phase(get_mix(name), int(n)))
        return phases
    raise ValueError(f"workload must be a name, 'adapt', a non-empty list or a trace path, got {spec!r}")


def _trace_phase(spec: Any, block: int) -> Phase:

    tr = get_trace(spec)
    t = (tr.time_us - tr.time_us.min()).astype(np.float64)
    size = tr.size.astype(np.float64)
    writes = tr.op == WRITE
    name = str(tr.source.get("path", tr.name))
    # raw bins are per trace second; the simulator rescales them to periods (see speedup)
    sec = (t * 1e-6).astype(np.int64)
    n = int(sec.max()) + 1
    wb = np.bincount(sec[writes], weights=size[writes], minlength=n)
    rb = np.bincount(sec[~writes], weights=size[~writes], minlength=n)
    wn = np.bincount(sec[writes], minlength=n)
    rn = np.bincount(sec[~writes], minlength=n)
    mean_io = float(size.mean())
    ws = np.where(wn > 0, wb / np.maximum(wn, 1), mean_io)
    rs = np.where(rn > 0, rb / np.maximum(rn, 1), mean_io)
    mix = Mix(f"trace:{os.path.basename(name)}", block, max(block, int(mean_io)),
              float((~writes).mean()))
    return Phase(mix, n, (rb, wb, rs, ws))


def scale_trace(phase: Phase, factor: float) -> Phase:
    """The trace phase re-binned so one period holds ``factor`` seconds of the trace (time
    compressed by ``factor / period_s``): per-period bytes scale with it."""
    assert phase.trace_bins is not None
    rb, wb, rs, ws = phase.trace_bins
    n = len(rb)
    m = max(1, int(math.ceil(n / factor)))
    idx = (np.arange(n) / factor).astype(np.int64)
    rb2 = np.bincount(idx, weights=rb, minlength=m)
    wb2 = np.bincount(idx, weights=wb, minlength=m)
    cnt_r = np.bincount(idx, weights=np.where(rb > 0, rb / rs, 0), minlength=m)
    cnt_w = np.bincount(idx, weights=np.where(wb > 0, wb / ws, 0), minlength=m)
    rs2 = np.where(cnt_r > 0, rb2 / np.maximum(cnt_r, 1e-9), phase.mix.io)
    ws2 = np.where(cnt_w > 0, wb2 / np.maximum(cnt_w, 1e-9), phase.mix.io)
    return replace(phase, periods=m, trace_bins=(rb2, wb2, rs2, ws2))
