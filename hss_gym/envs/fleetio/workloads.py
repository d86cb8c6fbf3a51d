"""FleetIO tenants: the vSSD workloads of Sun et al., ASPLOS'25 (Table 4, Table 5, training set).

A FleetIO step is a 2 s decision window, so a tenant is described by its *offered load per
tick* of the SSD model (100 ms by default), not request by request: read bytes, write bytes and mean request
size per tick. Three kinds of tenant produce that:

* :class:`PhasedWorkload` — the synthetic workloads. The paper publishes no per-workload
  statistics beyond Table 4's category (bandwidth-intensive / latency-sensitive), Fig. 6's four
  clustering features (read BW, write BW, LPA entropy, mean I/O size) and §4's qualitative facts
  (the bandwidth-intensive tenant dominates the SSD's bandwidth and its demand fluctuates, which
  is what makes harvesting pay; YCSB has better locality than VDI-Web). The parameters below are
  chosen to match those facts on the paper's device (16 channels x 64 MB/s): an ON/OFF Markov
  phase process (exponential phase lengths) with log-normal jitter per tick. They are
  assumptions, listed in ``docs/fleetio.md``, not measurements.
* Training workloads (``TRAINING``) — the paper pre-trains on LiveMaps, TPCE, SearchEngine and
  Batch Analytics, never evaluated on; ours are distinct parameter sets with those names.
* :class:`TraceWorkload` — one tenant per volume of a real multi-tenant block trace read with
  ``hss_gym.workloads.load_trace`` (Alibaba, Tencent CBS, MSR, ...): its requests are binned
  (10 ms; optionally time-compressed) and replayed cyclically from a seed-drawn start.

``MIXES`` are Table 5's collocations. ``window_features`` computes the §3.4 clustering features
(read BW, write BW, LPA entropy, mean size) over 10k-request windows of a request sample.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from hss_gym.workloads.registry import load_trace

MB = 1_000_000
KIB = 1024


class Tenant(Protocol):
    """The offered load of one vSSD, tick by tick."""

    name: str
    category: str  # "bandwidth" | "latency"

    def reset(self, rng: np.random.Generator) -> None: ...

    def ticks(self, n: int, tick_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Offered (read_Bps, write_Bps, mean_request_bytes) of the next ``n`` ticks of ``tick_s``."""

    def sample_requests(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """A request-level sample (time_us, is_write, lpa, size) for the clustering features."""


@dataclass(frozen=True)
class PhasedWorkload:
    """A synthetic tenant: ON/OFF phases of offered bandwidth (see the module docstring).

    ``on_MBps``/``off_MBps``: mean offered bandwidth in each phase; ``on_s``/``off_s``: mean
    phase lengths (exponential); ``read_frac``: fraction of bytes read; ``size_kib``: mean request
    size; ``jitter``: sigma of the per-tick log-normal noise; ``locality``: Zipf exponent of the
    logical page addresses (0 = uniform, high entropy; 1.2 = strong locality);
    ``seq``: fraction of requests that continue the previous one sequentially.
    """

    name: str
    category: str
    on_MBps: float
    off_MBps: float
    on_s: float
    off_s: float
    read_frac: float
    size_kib: float
    jitter: float = 0.25
    locality: float = 0.0
    seq: float = 0.0
    footprint_gib: float = 32.0

    def __post_init__(self) -> None:
        for f in ("on_MBps", "off_MBps", "on_s", "off_s", "size_kib", "footprint_gib"):
            if not getattr(self, f) > 0:
                raise ValueError(f"workload {self.name!r}: {f} must be > 0, got {getattr(self, f)}")
        if not 0 <= self.read_frac <= 1:
            raise ValueError(f"workload {self.name!r}: read_frac must be in [0, 1], got {self.read_frac}")
        if self.category not in ("bandwidth", "latency"):
            raise ValueError(f"workload {self.name!r}: category must be 'bandwidth' or 'latency'")

    def instance(self) -> "PhasedTenant":
        return PhasedTenant(self)


class PhasedTenant:
    """The running state (current phase, time left in it) of a :class:`PhasedWorkload`."""

    def __init__(self, spec: PhasedWorkload) -> None:
        self.spec = spec
        self.name = spec.name
        self.category = spec.category
        self._rng = np.random.default_rng(0)
        self._on = True
        self._left = 0.0

    def reset(self, rng: np.random.Generator) -> None:
        s = self.spec
        self._rng = rng
        self._on = bool(rng.random() < s.on_s / (s.on_s + s.off_s))
        self._left = float(rng.exponential(s.on_s if self._on else s.off_s))

    def ticks(self, n: int, tick_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, rng = self.spec, self._rng
        level = np.empty(n)
        for i in range(n):
            while self._left <= 0:
                self._on = not self._on
                self._left += float(rng.exponential(s.on_s if self._on else s.off_s))
            level[i] = s.on_MBps if self._on else s.off_MBps
            self._left -= tick_s
        bw = level * MB * rng.lognormal(-0.5 * s.jitter ** 2, s.jitter, n)
        size = np.full(n, s.size_kib * KIB)
        return bw * s.read_frac, bw * (1 - s.read_frac), size

    def sample_requests(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        s = self.spec
        self.reset(rng)
        counts: list[np.ndarray] = []
        total = 0
        while total < n:  # Poisson request counts per tick until n requests
            r, w, size = self.ticks(200, 0.05)
            c = rng.poisson((r + w) * 0.05 / size)
            counts.append(c)
            total += int(c.sum())
        cnt = np.concatenate(counts)
        tick = np.repeat(np.arange(len(cnt)), cnt)[:n]
        t = (tick + rng.random(n)) * 0.05
        t.sort()
        pages = int(s.footprint_gib * (1 << 30) // (16 * KIB))
        if s.locality > 0:
            lpa = (rng.zipf(1.0 + s.locality, n).astype(np.int64) * 2_654_435_761) % pages
        else:
            lpa = rng.integers(0, pages, n)
        npages = np.maximum(1, np.round(rng.exponential(s.size_kib, n) / 16)).astype(np.int64)
        seq = np.flatnonzero(rng.random(n - 1) < s.seq) + 1
        for i in seq:  # sequential runs continue the previous request
            lpa[i] = (lpa[i - 1] + npages[i - 1]) % pages
        return {"time_us": t * 1e6, "is_write": rng.random(n) >= s.read_frac,
                "lpa": lpa.astype(np.int64), "size": npages * 16 * KIB}


# Table 4 (evaluation). Device: 16 channels x 64 MB/s = 1024 MB/s; hardware isolation gives a
# vSSD of mix1 8 channels (512 MB/s), of mix4 4 channels (256 MB/s), of mix5 2 (128 MB/s).
# Bandwidth-intensive demand peaks above a half-device share and falls low between phases;
# latency-sensitive tenants use a small, bursty fraction of theirs.
TABLE4: dict[str, PhasedWorkload] = {w.name: w for w in (
    PhasedWorkload("terasort", "bandwidth", on_MBps=620, off_MBps=60, on_s=8, off_s=6,
                   read_frac=0.45, size_kib=512, jitter=0.3, locality=0.0, seq=0.9),
    PhasedWorkload("mlprep", "bandwidth", on_MBps=420, off_MBps=40, on_s=5, off_s=5,
                   read_frac=0.8, size_kib=256, jitter=0.35, locality=0.0, seq=0.7),
    PhasedWorkload("pagerank", "bandwidth", on_MBps=520, off_MBps=80, on_s=10, off_s=6,
                   read_frac=0.85, size_kib=128, jitter=0.3, locality=0.2, seq=0.5),
    PhasedWorkload("vdi-web", "latency", on_MBps=70, off_MBps=15, on_s=4, off_s=8,
                   read_frac=0.7, size_kib=12, jitter=0.4, locality=0.0, seq=0.1),
    PhasedWorkload("ycsb", "latency", on_MBps=50, off_MBps=20, on_s=6, off_s=6,
                   read_frac=0.9, size_kib=8, jitter=0.3, locality=1.2, seq=0.0),
)}

# Pre-training workloads (paper §3.8), never used in evaluation.
TRAINING: dict[str, PhasedWorkload] = {w.name: w for w in (
    PhasedWorkload("batch-analytics", "bandwidth", on_MBps=560, off_MBps=50, on_s=7, off_s=7,
                   read_frac=0.6, size_kib=384, jitter=0.3, locality=0.0, seq=0.8),
    PhasedWorkload("livemaps", "bandwidth", on_MBps=460, off_MBps=90, on_s=6, off_s=4,
                   read_frac=0.75, size_kib=192, jitter=0.35, locality=0.1, seq=0.6),
    PhasedWorkload("tpce", "latency", on_MBps=60, off_MBps=25, on_s=5, off_s=5,
                   read_frac=0.85, size_kib=8, jitter=0.35, locality=0.0, seq=0.0),
    PhasedWorkload("searchengine", "latency", on_MBps=80, off_MBps=20, on_s=3, off_s=7,
                   read_frac=0.95, size_kib=16, jitter=0.4, locality=0.0, seq=0.1),
)}

# Table 5 (evaluation mixes) and the training mixes (same sizes, training workloads only).
MIXES: dict[str, tuple[str, ...]] = {
    "mix1": ("vdi-web", "terasort"),
    "mix2": ("ycsb", "pagerank"),
    "mix3": ("vdi-web", "vdi-web", "terasort", "terasort"),
    "mix4": ("vdi-web", "ycsb", "terasort", "pagerank"),
    "mix5": ("vdi-web", "vdi-web", "vdi-web", "vdi-web", "terasort", "terasort", "pagerank", "mlprep"),
}
TRAIN_MIXES: dict[str, tuple[str, ...]] = {
    "train2a": ("tpce", "batch-analytics"),
    "train2b": ("searchengine", "livemaps"),
    "train4": ("tpce", "searchengine", "batch-analytics", "livemaps"),
    "train8": ("tpce", "tpce", "searchengine", "searchengine", "batch-analytics", "batch-analytics",
               "livemaps", "livemaps"),
}


def workload_names() -> list[str]:
    return list(TABLE4) + list(TRAINING)


def get_workload(name: str, **overrides: Any) -> PhasedWorkload:
    """A synthetic workload by name, with field ``overrides`` (e.g. ``on_MBps=700``)."""
    key = name.strip().lower().replace("_", "-")
    spec = TABLE4.get(key) or TRAINING.get(key)
    if spec is None:
        raise ValueError(f"unknown FleetIO workload {name!r}; valid: {', '.join(workload_names())}")
    try:
        return replace(spec, **overrides)
    except TypeError as e:
        raise ValueError(f"workload {name!r}: bad override ({e})") from None


def mix_workloads(mix: str | list[str] | tuple[str, ...]) -> list[str]:
    """The workload names of a mix name (Table 5 or training) or an explicit list of names."""
    if isinstance(mix, str):
        key = mix.strip().lower()
        if key in MIXES:
            return list(MIXES[key])
        if key in TRAIN_MIXES:
            return list(TRAIN_MIXES[key])
        raise ValueError(f"unknown FleetIO mix {mix!r}; valid: {', '.join(list(MIXES) + list(TRAIN_MIXES))}"
                         " or a list of workload names / Tenant objects")
    return list(mix)


class TraceWorkload:
    """One volume of a real block trace as a tenant (binned into 10 ms bins, replayed cyclically).

    ``time_scale`` divides inter-arrival times (2.0 replays twice as fast, doubling the offered
    bandwidth); ``category`` is the tenant's class for the metrics (bandwidth / latency).
    """

    def __init__(self, time_us: np.ndarray, is_write: np.ndarray, offset: np.ndarray,
                 size: np.ndarray, *, name: str, category: str = "latency",
                 time_scale: float = 1.0) -> None:
        if len(time_us) < 2:
            raise ValueError(f"trace tenant {name!r}: needs at least 2 requests, got {len(time_us)}")
        if time_scale <= 0:
            raise ValueError(f"trace tenant {name!r}: time_scale must be > 0, got {time_scale}")
        if category not in ("bandwidth", "latency"):
            raise ValueError(f"trace tenant {name!r}: category must be 'bandwidth' or 'latency'")
        self.name, self.category = name, category
        self.bin_s = 0.01
        t = (np.asarray(time_us, np.float64) - float(time_us[0])) / time_scale
        self._req = {"time_us": t, "is_write": np.asarray(is_write, bool),
                     "lpa": np.asarray(offset, np.int64) // (16 * KIB), "size": np.asarray(size, np.int64)}
        b = (t / (self.bin_s * 1e6)).astype(np.int64)
        n = int(b[-1]) + 1
        w = self._req["is_write"]
        sz = self._req["size"].astype(np.float64)
        self._r = np.bincount(b, sz * ~w, n)  # bytes per bin
        self._w = np.bincount(b, sz * w, n)
        self._cnt = np.bincount(b, None, n)
        self._mean_size = float(sz.mean())
        self._pos = 0

    def reset(self, rng: np.random.Generator) -> None:
        self._pos = int(rng.integers(0, len(self._r)))

    def ticks(self, n: int, tick_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = max(1, int(round(tick_s / self.bin_s)))
        idx = ((self._pos + np.arange(n * k)) % len(self._r)).reshape(n, k)
        self._pos = int((self._pos + n * k) % len(self._r))
        r, w, c = self._r[idx].sum(1), self._w[idx].sum(1), self._cnt[idx].sum(1)
        size = np.where(c > 0, (r + w) / np.maximum(c, 1), self._mean_size)
        return r / tick_s, w / tick_s, size

    def sample_requests(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        return {k: v[:n] for k, v in self._req.items()}


def trace_tenants(path: str, *, format: str | None = None, limit: int | None = None,
                  volumes: list[int] | None = None, category: str = "latency",
                  time_scale: float = 1.0) -> list[TraceWorkload]:
    """One tenant per volume (the trace's ``stream`` column: device / volume id) of a trace file.

    ``volumes`` picks which volume ids (default: every volume, in id order).
    """

    kw: dict[str, Any] = {} if limit is None else {"limit": limit}
    tr = load_trace(path, format=format, **kw)
    ids = np.unique(tr.stream) if volumes is None else np.asarray(volumes)
    out = []
    for v in ids:
        m = tr.stream == v
        if not m.any():
            raise ValueError(f"trace {path}: no requests of volume {int(v)}; volumes present: "
                             f"{sorted(int(x) for x in np.unique(tr.stream))}")
        out.append(TraceWorkload(tr.time_us[m], tr.op[m] == 1, tr.offset[m], tr.size[m],
                                 name=f"{tr.name}:vol{int(v)}", category=category,
                                 time_scale=time_scale))
    return out


def window_features(req: dict[str, np.ndarray], window: int = 10_000) -> np.ndarray:
    """§3.4's features per ``window``-request window: read MB/s, write MB/s, LPA entropy (bits),
    mean size (KiB). Returns shape (n_windows, 4); a trace shorter than a window gives one row."""
    n = len(req["time_us"])
    rows = []
    for a in range(0, max(n - window, 0) + 1, window):
        sl = slice(a, min(a + window, n))
        t = req["time_us"][sl]
        dur = max(float(t[-1] - t[0]), 1.0) / 1e6
        w = req["is_write"][sl]
        size = req["size"][sl].astype(np.float64)
        _, counts = np.unique(req["lpa"][sl], return_counts=True)
        p = counts / counts.sum()
        rows.append([size[~w].sum() / dur / MB, size[w].sum() / dur / MB,
                     float(-(p * np.log2(p)).sum()), size.mean() / KIB])
    return np.asarray(rows, np.float64)
