"""Synthetic generators for the 17 workloads of Harmonia Table 4, plus YCSB-A.

Each generator reproduces the three statistics the paper publishes per workload (read %, mean
request size, mean inter-arrival time) and adds an explicit *locality model* for its family, so
that placement and migration policies have something realistic to learn. The families and their
models (``docs/workloads.md`` explains the choices):

* ``vdi`` (SYSTOR'17 enterprise VDI LUNs ``lun0``..``lun4``): write-dominated; a hot set of a few %
  of the address space (``hot_extents`` extents) takes most writes; writes and reads come in short
  sequential runs (log-like); every ``drift_interval`` requests a share of the hot extents moves
  (working-set drift); bursty arrivals.
* ``rocksdb`` (``ssd-00``..``ssd-04``): the address space is a set of SST files; reads pick a
  file by a Zipf law and a page inside it by a milder Zipf law (hot keys within hot files), then
  continue in short sequential runs (iterators, compaction input); writes are long sequential
  runs starting at a file boundary (flush/compaction output).
* ``ycsb`` (``ycsb-a``..``ycsb-f``): records in fixed-size slots; keys drawn from YCSB's Zipfian
  generator (theta 0.99) scattered over the slots like YCSB's hashed keys; D reads the latest
  inserted keys; E reads short range scans (sequential runs of 1..100 records); F does
  read-modify-write (a read immediately followed by a write of the same record). Block writes that
  are not key writes go to a circular log region (the storage engine's WAL/compaction writes).
* ``mlperf`` (``resnet50``, ``cosmoflow``): each epoch reads every dataset file once, in a freshly
  shuffled file order, sequentially within a file; periodic checkpoints write a burst of
  sequential requests to one of two checkpoint slots; bursty (batch-wise) arrivals.

Common to all: request sizes are a log-normal rounded up to whole 4 KiB pages (at least one page,
at most ``max_size_kib``) whose location is solved so that the discrete mean equals the target;
writes may be ``write_size_ratio`` times larger on average than reads, with the overall mean kept;
gaps are exponential (``burst_fraction`` 0) or hyper-exponential (a fraction ``burst_fraction`` of
gaps are short, mean ``burst_gap_ratio`` x the overall mean, the rest long, which gives geometric
bursts of requests separated by idle periods); the number of reads is exactly
``round(read_fraction * n)`` (positions random; MLPerf: a fixed period of reads ending in a
checkpoint burst), so the read share does not fluctuate with ``n`` or the seed.

Everything is vectorised NumPy and deterministic for ``(name, n, seed, params)``; the returned
:class:`~hss_gym.workloads.trace.Trace` records all of them in ``source`` so it can be regenerated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from hss_gym._version import __version__
from hss_gym.workloads.trace import PAGE_SIZE, READ, WRITE, Trace

PAGES_PER_GIB = (1 << 30) // PAGE_SIZE
PAGES_PER_MIB = (1 << 20) // PAGE_SIZE


@dataclass(frozen=True)
class Target:
    """Published statistics a generator must reproduce (within 5%, see ``tests/test_synthetic``)."""

    read_pct: float
    size_kib: float
    gap_us: float
    source: str


_T4 = "Harmonia Table 4"
TARGETS: dict[str, Target] = {
    "lun0": Target(0.2, 31.7, 1163.9, _T4),
    "lun1": Target(0.3, 34.2, 1864.1, _T4),
    "lun2": Target(7.6, 31.1, 1418.9, _T4),
    "lun3": Target(3.5, 42.7, 734.5, _T4),
    "lun4": Target(0.5, 26.3, 823.1, _T4),
    "ssd-00": Target(79.9, 108.9, 66.4, _T4),
    "ssd-01": Target(73.5, 75.1, 40.7, _T4),
    "ssd-02": Target(79.9, 7.5, 3.3, _T4),
    "ssd-03": Target(79.9, 9.5, 3.5, _T4),
    "ssd-04": Target(79.9, 7.8, 3.6, _T4),
    # YCSB-A is used by mix4 but is not in Table 4: YCSB's 50/50 read/update mix, with the mean
    # size and gap of the five YCSB rows of Table 4 (45.9, 54.6, 36.1, 46.6, 53.1 KiB and
    # 9.3, 6.5, 8.5, 9.6, 6.6 us). An assumption of hss-gym, not a published number.
    "ycsb-a": Target(50.0, 47.3, 8.1, "assumption: YCSB 50/50 mix, mean of the YCSB rows"),
    "ycsb-b": Target(51.3, 45.9, 9.3, _T4),
    "ycsb-c": Target(47.6, 54.6, 6.5, _T4),
    "ycsb-d": Target(55.9, 36.1, 8.5, _T4),
    "ycsb-e": Target(52.1, 46.6, 9.6, _T4),
    "ycsb-f": Target(49.5, 53.1, 6.6, _T4),
    "resnet50": Target(80.0, 172.6, 500.1, _T4),
    "cosmoflow": Target(83.4, 180.1, 1023.8, _T4),
}

FAMILIES: dict[str, str] = {
    **{f"lun{i}": "vdi" for i in range(5)},
    **{f"ssd-0{i}": "rocksdb" for i in range(5)},
    **{f"ycsb-{c}": "ycsb" for c in "abcdef"},
    "resnet50": "mlperf", "cosmoflow": "mlperf",
}

_COMMON = {"max_size_kib": 1024.0, "write_size_ratio": 1.0, "burst_fraction": 0.0,
           "burst_gap_ratio": 0.1}

_FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "vdi": {"footprint_gib": 16.0, "size_sigma": 1.4, "burst_fraction": 0.8,
            "burst_gap_ratio": 0.05, "hot_fraction": 0.03, "hot_extents": 16,
            "hot_write_share": 0.85, "hot_read_share": 0.5, "write_run_mean": 8.0,
            "read_run_mean": 2.0, "drift_interval": 20_000, "drift_share": 0.25},
    "rocksdb": {"footprint_gib": 16.0, "size_sigma": 0.7, "sst_file_mib": 64.0,
                "file_theta": 0.9, "block_theta": 0.8, "read_run_mean": 1.25,
                "write_run_mean": 64.0},
    "ycsb": {"footprint_gib": 4.0, "size_sigma": 0.8, "record_kib": 64.0, "theta": 0.99,
             "log_fraction": 0.125, "request_distribution": "zipfian", "key_write": "update",
             "key_writes_per_read": 0.0, "max_scan_length": 0, "initial_fill": 0.9},
    "mlperf": {"footprint_gib": 8.0, "size_sigma": 0.3, "file_mib": 87.5,
               "checkpoint_requests": 512, "checkpoint_fraction": 0.0625,
               "burst_fraction": 0.7, "burst_gap_ratio": 0.2},
}

# Key writes per block read, derived from YCSB's core-workload operation proportions: every read
# (or scan request) is a key access, and key writes keep their YCSB ratio to key reads; the block
# writes left over are the engine's log/compaction writes. A: 0.5 update / 0.5 read; B: 0.05/0.95;
# C: read-only; D: 0.05 insert / 0.95 read; E: 0.05 insert / 0.95 scan of 50.5 records on average
# (uniform 1..100); F: 0.5 read + 0.5 read-modify-write, so half of the reads are RMW reads.
_OVERRIDES: dict[str, dict[str, Any]] = {
    "ssd-00": {"size_sigma": 1.0, "write_size_ratio": 2.0, "read_run_mean": 4.0,
               "write_run_mean": 256.0},
    "ssd-01": {"size_sigma": 1.0, "write_size_ratio": 2.0, "read_run_mean": 4.0,
               "write_run_mean": 256.0},
    "ycsb-a": {"key_writes_per_read": 1.0},
    "ycsb-b": {"key_writes_per_read": 0.05 / 0.95},
    "ycsb-d": {"request_distribution": "latest", "key_write": "insert",
               "key_writes_per_read": 0.05 / 0.95},
    "ycsb-e": {"key_write": "insert", "key_writes_per_read": 0.05 / (0.95 * 50.5),
               "max_scan_length": 100},
    "ycsb-f": {"key_write": "rmw", "key_writes_per_read": 0.5},
    # MLPerf Storage / DLIO configs: CosmoFlow has one 2,828,486-byte sample per file.
    "cosmoflow": {"file_mib": 2.7},
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "request_distribution": ("zipfian", "latest"),
    "key_write": ("update", "insert", "rmw"),
}


def workload_names() -> list[str]:
    """The synthetic single-stream workloads, in Table 4 order (YCSB-A before YCSB-B)."""
    return list(TARGETS)


def default_params(name: str) -> dict[str, Any]:
    """All parameters of workload ``name`` with their defaults (a fresh dict, safe to modify)."""
    if name not in TARGETS:
        raise ValueError(f"unknown synthetic workload {name!r}; valid: {', '.join(TARGETS)}")
    t = TARGETS[name]
    family = FAMILIES[name]
    return {"read_fraction": round(t.read_pct / 100.0, 6), "mean_size_kib": t.size_kib,
            "mean_gap_us": t.gap_us, **_COMMON, **_FAMILY_DEFAULTS[family],
            **_OVERRIDES.get(name, {})}


def resolve_params(name: str, **overrides: Any) -> dict[str, Any]:
    """Defaults of ``name`` updated with ``overrides``, type-converted and range-checked."""
    p = default_params(name)
    unknown = sorted(set(overrides) - set(p))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for workload {name!r}; "
                         f"valid: {', '.join(sorted(p))}")
    for key, value in overrides.items():
        default = p[key]
        if isinstance(default, str):
            if value not in _CHOICES[key]:
                raise ValueError(f"{key} must be one of {_CHOICES[key]}, got {value!r}")
            p[key] = value
        elif isinstance(default, int):
            p[key] = int(value)
        else:
            p[key] = float(value)
    _check(name, p)
    return p


def _check(name: str, p: dict[str, Any]) -> None:
    """Reject parameter combinations the generators cannot honour, naming the parameter."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ValueError(f"workload {name!r}: {what}")

    need(0.0 <= p["read_fraction"] <= 1.0, "read_fraction must be in [0, 1]")
    need(p["mean_gap_us"] > 0, "mean_gap_us must be > 0")
    need(p["size_sigma"] > 0, "size_sigma must be > 0")
    need(p["write_size_ratio"] > 0, "write_size_ratio must be > 0")
    need(0.0 <= p["burst_fraction"] < 1.0, "burst_fraction must be in [0, 1)")
    need(0.0 < p["burst_gap_ratio"] <= 1.0, "burst_gap_ratio must be in (0, 1]")
    max_pages = _pages(p["max_size_kib"] * 1024)
    need(max_pages >= 1, "max_size_kib must be >= 4")
    need(_pages(p["footprint_gib"] * (1 << 30)) >= 16 * max_pages,
         "footprint_gib must hold at least 16 maximum-size requests")
    mean_r, mean_w = _op_means(p)
    need(1.0 <= mean_r <= max_pages and 1.0 <= mean_w <= max_pages,
         f"mean read/write sizes {mean_r * 4:.1f}/{mean_w * 4:.1f} KiB must lie in "
         f"[4, max_size_kib={p['max_size_kib']}]")
    for key in ("hot_fraction", "file_theta", "block_theta", "theta", "log_fraction",
                "initial_fill", "checkpoint_fraction"):
        if key in p:
            need(0.0 < p[key] < 1.0, f"{key} must be in (0, 1)")
    for key in ("hot_write_share", "hot_read_share", "drift_share"):
        if key in p:
            need(0.0 <= p[key] <= 1.0, f"{key} must be in [0, 1]")
    for key in ("write_run_mean", "read_run_mean"):
        if key in p:
            need(p[key] >= 1.0, f"{key} must be >= 1")
    for key in ("hot_extents", "drift_interval", "checkpoint_requests"):
        if key in p:
            need(p[key] >= 1, f"{key} must be >= 1")
    for key in ("sst_file_mib", "record_kib", "file_mib", "key_writes_per_read"):
        if key in p:
            need(p[key] >= 0, f"{key} must be >= 0")
    if "max_scan_length" in p:
        need(p["max_scan_length"] >= 0, "max_scan_length must be >= 0")
    if "file_mib" in p:
        fp = _pages(p["footprint_gib"] * (1 << 30))
        need(fp - int(p["checkpoint_fraction"] * fp) >= _pages(p["file_mib"] * (1 << 20)),
             "the dataset region must hold at least one file of file_mib")


def _pages(nbytes: float) -> int:
    """Whole 4 KiB pages in ``nbytes`` (rounded to nearest)."""
    return int(round(nbytes / PAGE_SIZE))


# ---------------------------------------------------------------------------------------------
# Building blocks: sizes, gaps, Zipf keys, sequential runs.


def _op_means(p: dict[str, Any]) -> tuple[float, float]:
    """Mean read and write size in pages such that the overall mean is ``mean_size_kib``."""
    r = p["read_fraction"]
    mean = p["mean_size_kib"] * 1024 / PAGE_SIZE
    mean_r = mean / (r + (1.0 - r) * p["write_size_ratio"])
    return mean_r, mean_r * p["write_size_ratio"]


@lru_cache(maxsize=256)
def _size_cdf(mean_pages: float, sigma: float, max_pages: int) -> np.ndarray:
    """CDF over 1..max_pages of ``clip(ceil(LogNormal(mu, sigma)), 1, max_pages)``.

    ``mu`` is found by bisection so that the mean of this discrete law is ``mean_pages``; the law
    is computed exactly (no sampling), so the generated mean converges to the target.
    """
    ks = np.arange(1, max_pages, dtype=np.float64)  # upper edges of pages 1..max_pages-1
    logk = np.log(ks)
    erf = np.frompyfunc(math.erf, 1, 1)

    def cdf(mu: float) -> np.ndarray:
        inner = 0.5 * (1.0 + erf((logk - mu) / (sigma * math.sqrt(2.0))).astype(np.float64))
        return np.append(inner, 1.0)

    def mean_of(c: np.ndarray) -> float:
        return float(np.dot(np.arange(1, max_pages + 1), np.diff(c, prepend=0.0)))

    lo, hi = -20.0, math.log(max_pages) + 10 * sigma
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean_of(cdf(mid)) < mean_pages else (lo, mid)
    return cdf(0.5 * (lo + hi))


def _draw_pages(rng: np.random.Generator, k: int, mean_pages: float, sigma: float,
                max_pages: int) -> np.ndarray:
    """``k`` request sizes in pages from the discretised log-normal of :func:`_size_cdf`."""
    if mean_pages <= 1.0:
        return np.ones(k, dtype=np.int64)
    cdf = _size_cdf(round(mean_pages, 9), sigma, max_pages)
    return np.searchsorted(cdf, rng.random(k), side="right").astype(np.int64) + 1


def _sizes(rng: np.random.Generator, op: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """Per-request sizes in pages, reads and writes from their own means (see ``_op_means``)."""
    mean_r, mean_w = _op_means(p)
    max_pages = _pages(p["max_size_kib"] * 1024)
    sizes = np.empty(len(op), dtype=np.int64)
    is_read = op == READ
    sizes[is_read] = _draw_pages(rng, int(is_read.sum()), mean_r, p["size_sigma"], max_pages)
    sizes[~is_read] = _draw_pages(rng, int((~is_read).sum()), mean_w, p["size_sigma"], max_pages)
    return sizes


def _gaps(rng: np.random.Generator, k: int, p: dict[str, Any]) -> np.ndarray:
    """``k`` inter-arrival gaps (us) with mean ``mean_gap_us``: exponential or hyper-exponential."""
    mean, bf, ratio = p["mean_gap_us"], p["burst_fraction"], p["burst_gap_ratio"]
    gaps = rng.exponential(1.0, k)
    if bf == 0.0:
        return gaps * mean
    short = rng.random(k) < bf
    long_mean = mean * (1.0 - bf * ratio) / (1.0 - bf)
    return gaps * np.where(short, mean * ratio, long_mean)


def _exact_ops(rng: np.random.Generator, n: int, read_fraction: float) -> np.ndarray:
    """Op codes with exactly ``round(read_fraction * n)`` reads at random positions."""
    op = np.full(n, WRITE, dtype=np.uint8)
    op[rng.permutation(n)[:int(round(read_fraction * n))]] = READ
    return op


@lru_cache(maxsize=64)
def _zeta(n: int, theta: float) -> float:
    """``sum(i ** -theta for i in 1..n)``, summed in chunks to bound memory."""
    total, chunk = 0.0, 1 << 20
    for start in range(1, n + 1, chunk):
        i = np.arange(start, min(n + 1, start + chunk), dtype=np.float64)
        total += float(np.sum(i ** -theta))
    return total


def zipf_ranks(rng: np.random.Generator, k: int, n_items: int, theta: float) -> np.ndarray:
    """``k`` ranks in ``[0, n_items)``, rank 0 hottest, from YCSB's ZipfianGenerator.

    This is the closed-form method of Gray et al. (SIGMOD'94) that YCSB uses: O(1) memory and
    O(k) time after one O(n_items) zeta sum (cached).
    """
    if n_items <= 1:
        return np.zeros(k, dtype=np.int64)
    zetan = _zeta(n_items, theta)
    zeta2 = 1.0 + 0.5 ** theta
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n_items) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    u = rng.random(k)
    uz = u * zetan
    tail = np.floor(n_items * np.power(eta * u - eta + 1.0, alpha))
    ranks = np.where(uz < 1.0, 0.0, np.where(uz < zeta2, 1.0, tail))
    return np.clip(ranks, 0, n_items - 1).astype(np.int64)


def scatter(ranks: np.ndarray, n_items: int, shift: int) -> np.ndarray:
    """Map popularity ranks to item slots by the affine bijection ``(a*rank + shift) mod n``.

    ``a`` is the integer nearest ``0.618 * n`` that is coprime with ``n`` (golden-ratio
    spacing), so consecutive ranks land far apart, like YCSB's hashed keys, without a
    permutation table; callers draw ``shift`` once per trace so every access uses one map.
    """
    a = max(1, int(round(0.6180339887498949 * n_items)))
    while math.gcd(a, n_items) != 1:
        a += 1
    return (ranks * a + shift) % n_items


def _geometric_starts(rng: np.random.Generator, k: int, mean_len: float) -> np.ndarray:
    """Run-start mask over ``k`` requests with geometric run lengths of mean ``mean_len``."""
    new = rng.random(k) < 1.0 / mean_len
    if k:
        new[0] = True
    return new


def _starts_from_lengths(lengths: np.ndarray, k: int) -> np.ndarray:
    """Run-start mask over ``k`` requests for consecutive runs of the given lengths."""
    firsts = np.cumsum(lengths) - lengths
    new = np.zeros(k, dtype=bool)
    new[firsts[firsts < k]] = True
    return new


def _runs(npages: np.ndarray, new: np.ndarray, base: np.ndarray, span: np.ndarray,
          start: np.ndarray) -> np.ndarray:
    """Page offsets of requests grouped into sequential runs.

    Requests are in order; ``new`` marks the first request of each run. Run ``j`` begins at
    page ``base[j] + start[j]`` and each following request starts where the previous one ended,
    wrapping modulo ``span[j]`` inside ``[base[j], base[j] + span[j])``.
    """
    run = np.cumsum(new) - 1
    before = np.cumsum(npages) - npages
    within = before - before[np.flatnonzero(new)][run]
    return base[run] + (start[run] + within) % span[run]


# ---------------------------------------------------------------------------------------------
# Families. Each returns (op, page offset, size in pages) for n requests in a footprint of fp
# pages; generate() adds times and builds the Trace.

Parts = tuple[np.ndarray, np.ndarray, np.ndarray]


def _vdi(rng: np.random.Generator, n: int, p: dict[str, Any], fp: int) -> Parts:
    """SYSTOR'17 VDI LUN: hot extents with drift, short sequential runs, mostly writes."""
    op = _exact_ops(rng, n, p["read_fraction"])
    npages = _sizes(rng, op, p)
    n_ext = p["hot_extents"]
    ext_pages = max(1, int(p["hot_fraction"] * fp) // n_ext)
    epochs = (n - 1) // p["drift_interval"] + 1
    # Extent bases per drift epoch: each extent moves with probability drift_share per epoch.
    candidates = rng.integers(0, fp - ext_pages + 1, (epochs, n_ext))
    moved = rng.random((epochs, n_ext)) < p["drift_share"]
    moved[0] = True
    last_move = np.maximum.accumulate(np.where(moved, np.arange(epochs)[:, None], 0), axis=0)
    bases = candidates[last_move, np.arange(n_ext)]
    page = np.empty(n, dtype=np.int64)
    for code, run_mean, hot_share in ((WRITE, p["write_run_mean"], p["hot_write_share"]),
                                      (READ, p["read_run_mean"], p["hot_read_share"])):
        idx = np.flatnonzero(op == code)
        new = _geometric_starts(rng, len(idx), run_mean)
        runs = int(new.sum())
        hot = rng.random(runs) < hot_share
        hot_base = bases[idx[new] // p["drift_interval"], rng.integers(0, n_ext, runs)]
        base = np.where(hot, hot_base, 0)
        span = np.where(hot, ext_pages, fp)
        page[idx] = _runs(npages[idx], new, base, span, rng.integers(0, span))
    return op, page, npages


def _rocksdb(rng: np.random.Generator, n: int, p: dict[str, Any], fp: int) -> Parts:
    """RocksDB on SSD: Zipf-popular SST files and blocks for reads, sequential compaction writes."""
    op = _exact_ops(rng, n, p["read_fraction"])
    npages = _sizes(rng, op, p)
    file_pages = max(1, _pages(p["sst_file_mib"] * (1 << 20)))
    n_files = max(1, fp // file_pages)
    page = np.empty(n, dtype=np.int64)

    idx = np.flatnonzero(op == WRITE)
    new = _geometric_starts(rng, len(idx), p["write_run_mean"])
    runs = int(new.sum())
    start = rng.integers(0, n_files, runs) * file_pages
    page[idx] = _runs(npages[idx], new, np.zeros(runs, np.int64), np.full(runs, fp), start)

    idx = np.flatnonzero(op == READ)
    new = _geometric_starts(rng, len(idx), p["read_run_mean"])
    runs = int(new.sum())
    files = scatter(zipf_ranks(rng, runs, n_files, p["file_theta"]), n_files,
                    int(rng.integers(n_files)))
    blocks = scatter(zipf_ranks(rng, runs, file_pages, p["block_theta"]), file_pages,
                     int(rng.integers(file_pages)))
    start = files * file_pages + blocks
    page[idx] = _runs(npages[idx], new, np.zeros(runs, np.int64), np.full(runs, fp), start)
    return op, page, npages


def _rmw_ops(rng: np.random.Generator, n: int, read_fraction: float,
             pairs_per_read: float) -> tuple[np.ndarray, np.ndarray]:
    """Op codes where a share of the reads is immediately followed by a write (RMW pairs).

    Returns the ops and the indices of the pair reads; request ``i + 1`` is the pair's write.
    The read count is exact, as in :func:`_exact_ops`.
    """
    reads = int(round(read_fraction * n))
    writes = n - reads
    pairs = min(int(round(pairs_per_read * reads)), reads, writes)
    units = np.repeat(np.array([0, 1, 2], np.int8), [reads - pairs, writes - pairs, pairs])
    units = units[rng.permutation(len(units))]
    length = np.where(units == 2, 2, 1)
    first = np.cumsum(length) - length
    op = np.full(n, WRITE, dtype=np.uint8)
    op[first[units != 1]] = READ
    return op, first[units == 2]


def _ycsb(rng: np.random.Generator, n: int, p: dict[str, Any], fp: int) -> Parts:
    """YCSB over a key-value store: Zipf/latest keys in record slots, scans, RMW, log writes."""
    rec_pages = max(1, _pages(p["record_kib"] * 1024))
    log_pages = max(1, int(p["log_fraction"] * fp))
    slots = max(1, (fp - log_pages) // rec_pages)
    rmw = p["key_write"] == "rmw"
    if rmw:
        op, pair_reads = _rmw_ops(rng, n, p["read_fraction"], p["key_writes_per_read"])
    else:
        op = _exact_ops(rng, n, p["read_fraction"])
    npages = _sizes(rng, op, p)
    page = np.empty(n, dtype=np.int64)
    reads = np.flatnonzero(op == READ)
    writes = np.flatnonzero(op == WRITE)

    # Which writes are key writes (updates, inserts or the write half of an RMW pair).
    if rmw:
        npages[pair_reads + 1] = npages[pair_reads]
        key_writes = pair_reads + 1
    else:
        n_key = min(len(writes), int(round(p["key_writes_per_read"] * len(reads))))
        key_writes = np.sort(rng.permutation(writes)[:n_key])
    is_key_write = np.zeros(n, dtype=bool)
    is_key_write[key_writes] = True

    inserting = p["key_write"] == "insert"
    loaded = int(p["initial_fill"] * slots) if inserting else slots
    latest = p["request_distribution"] == "latest"
    shift = int(rng.integers(slots))

    def slot_of(keys: np.ndarray) -> np.ndarray:
        # "latest" keeps insertion order (recent keys are neighbours, like an append-ordered
        # store); otherwise keys are scattered over the slots like YCSB's hashed keys.
        return keys % slots if latest else scatter(keys, slots, shift)

    ranks = zipf_ranks(rng, len(reads), max(1, loaded), p["theta"])
    if latest:
        inserted_before = np.cumsum(is_key_write)[reads] - is_key_write[reads]
        keys = (loaded + inserted_before - 1 - ranks) % slots
    else:
        keys = ranks
    read_pages = slot_of(keys) * rec_pages
    if p["max_scan_length"] > 0:
        # Scans: runs of 1..max_scan_length consecutive reads starting at the chosen key.
        lengths = rng.integers(1, p["max_scan_length"] + 1, len(reads))
        new = _starts_from_lengths(lengths, len(reads))
        runs = int(new.sum())
        read_pages = _runs(npages[reads], new, np.zeros(runs, np.int64),
                           np.full(runs, slots * rec_pages), read_pages[new])
    page[reads] = read_pages

    if rmw:
        page[key_writes] = page[pair_reads]
    elif inserting:
        page[key_writes] = slot_of(loaded + np.arange(len(key_writes))) * rec_pages
    else:
        page[key_writes] = slot_of(zipf_ranks(rng, len(key_writes), slots, p["theta"])) \
            * rec_pages

    # Remaining writes: one circular append stream in the log region at the end of the space.
    log = np.flatnonzero((op == WRITE) & ~is_key_write)
    before = np.cumsum(npages[log]) - npages[log]
    page[log] = fp - log_pages + (int(rng.integers(log_pages)) + before) % log_pages
    return op, page, npages


def _mlperf(rng: np.random.Generator, n: int, p: dict[str, Any], fp: int) -> Parts:
    """MLPerf Storage training: epoch-shuffled sequential file reads, checkpoint write bursts."""
    # Checkpoints: the last ``burst`` requests of every period are writes.
    burst = p["checkpoint_requests"]
    if p["read_fraction"] >= 1.0:
        op = np.full(n, READ, dtype=np.uint8)
    else:
        period = max(burst, int(round(burst / (1.0 - p["read_fraction"]))))
        op = np.where(np.arange(n) % period >= period - burst, WRITE, READ).astype(np.uint8)
    npages = _sizes(rng, op, p)
    page = np.empty(n, dtype=np.int64)

    ckpt_pages = max(2, int(p["checkpoint_fraction"] * fp))
    slot_pages = ckpt_pages // 2
    file_pages = max(1, _pages(p["file_mib"] * (1 << 20)))
    n_files = max(1, (fp - ckpt_pages) // file_pages)
    data_pages = n_files * file_pages

    reads = np.flatnonzero(op == READ)
    pos = np.cumsum(npages[reads]) - npages[reads]  # position in the concatenated epochs
    epoch, within_epoch = np.divmod(pos, data_pages)
    n_epochs = int(epoch[-1]) + 1 if len(reads) else 1
    order = np.argsort(rng.random((n_epochs, n_files)), axis=1)  # a file order per epoch
    slot_in_epoch, within_file = np.divmod(within_epoch, file_pages)
    page[reads] = order[epoch, slot_in_epoch] * file_pages + within_file

    writes = np.flatnonzero(op == WRITE)
    new = np.zeros(len(writes), dtype=bool)
    new[np.flatnonzero(np.diff(writes, prepend=-2) != 1)] = True  # first write of each burst
    ckpt = np.arange(int(new.sum()))
    base = data_pages + (ckpt % 2) * slot_pages  # two slots, alternately overwritten
    page[writes] = _runs(npages[writes], new, base, np.full(len(ckpt), slot_pages),
                         np.zeros(len(ckpt), np.int64))
    return op, page, npages


_GENERATORS = {"vdi": _vdi, "rocksdb": _rocksdb, "ycsb": _ycsb, "mlperf": _mlperf}


def generate(name: str, n: int = 100_000, seed: int = 0, **params: Any) -> Trace:
    """Generate ``n`` requests of synthetic workload ``name`` (lower-case id, e.g. ``"ycsb-b"``).

    ``params`` override the defaults of :func:`default_params`. The result is validated, starts
    at time 0, has page-aligned offsets inside ``[0, footprint_gib)`` and stream 0, and its
    ``source`` holds everything needed to regenerate it exactly.
    """

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    p = resolve_params(name, **params)
    fp = _pages(p["footprint_gib"] * (1 << 30))
    rng = np.random.default_rng(seed)
    op, page, npages = _GENERATORS[FAMILIES[name]](rng, n, p, fp)
    page = np.minimum(page, fp - npages)  # a run or a large request never leaves the footprint
    time_us = np.zeros(n)
    np.cumsum(_gaps(rng, n - 1, p), out=time_us[1:])
    source = {"kind": "synthetic", "generator": name, "params": p, "seed": seed, "n": n,
              "hss_gym_version": __version__}
    return Trace(time_us, op, page * PAGE_SIZE, npages * PAGE_SIZE, None, name=name,
                 source=source).validate()
