"""Summary statistics of a trace: the numbers used to compare synthetic and real workloads.

:func:`describe` returns a plain dict (JSON-serialisable) and :func:`format_description` prints it.
Page-level statistics count 4 KiB pages: a request covers pages ``offset // 4096`` to
``(offset + size - 1) // 4096``, so unaligned real traces are handled.

Reuse distance
    The LRU stack distance of a page access is the number of *distinct* other pages accessed since
    the previous access to the same page (0 = immediate re-access; a first access is "cold"). The
    histogram uses log2 buckets: bucket 0 holds distance 0 and bucket ``k >= 1`` holds
    ``[2**(k-1), 2**k)``. A cache of ``C`` pages under LRU hits exactly the accesses with distance
    ``< C``, so the cumulative histogram is the LRU hit-ratio curve.

    Distances are computed exactly and vectorised in ``O(A log^2 A)`` for ``A`` page accesses: with
    ``prev``/``next`` the previous/next access to the same page, the distance of access ``t`` is
    ``#{j : prev(t) < j < t, next(j) > t}``, a 2-D dominance count that is split into an O(A)
    prefix term and a prefix-over-positions term answered level by level over dyadic blocks (one
    sort and one batched binary search per level, instead of a sequential Fenwick tree). When the
    trace has more than ``reuse_budget`` page accesses, pages are sampled spatially as in SHARDS
    (Waldspurger et al., FAST'15): a page is kept when a multiplicative hash of its number falls
    below ``rate * 2**24``; distances measured in the sample are divided by ``rate`` and each
    sampled access counts ``1 / rate`` accesses. ``reuse["sampling_rate"]`` says which was done.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hss_gym.workloads.trace import PAGE_SIZE, READ, Trace

_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)
_HASH_BITS = 24
_CHUNK_PAGES = 1 << 22  # page accesses expanded at a time when sampling


def _page_spans(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """First page and page count of every request."""
    first = trace.offset // PAGE_SIZE
    last = (trace.offset + trace.size - 1) // PAGE_SIZE
    return first, last - first + 1


def _union_pages(first: np.ndarray, count: np.ndarray) -> int:
    """Number of distinct pages covered by the page intervals ``[first, first + count)``."""
    if len(first) == 0:
        return 0
    order = np.argsort(first, kind="stable")
    start, end = first[order], first[order] + count[order]
    reach = np.maximum.accumulate(end)
    covered_before = np.concatenate(([start[0]], reach[:-1]))
    return int(np.maximum(0, end - np.maximum(start, covered_before)).sum())


def _top_share(first: np.ndarray, count: np.ndarray, fraction: float) -> float:
    """Share of page accesses that go to the ``fraction`` most-accessed distinct pages."""
    coords, inverse = np.unique(np.concatenate((first, first + count)), return_inverse=True)
    delta = np.zeros(len(coords), dtype=np.int64)
    np.add.at(delta, inverse, np.concatenate((np.ones(len(first), np.int64),
                                              -np.ones(len(first), np.int64))))
    level = np.cumsum(delta)[:-1]        # accesses of each page in [coords[i], coords[i+1])
    length = np.diff(coords)
    level, length = level[level > 0], length[level > 0]
    order = np.argsort(-level, kind="stable")
    level, length = level[order], length[order]
    want = int(np.ceil(fraction * length.sum()))
    taken = np.minimum(length, np.maximum(0, want - (np.cumsum(length) - length)))
    return float((taken * level).sum() / (level * length).sum())


def _page_accesses(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The page-access sequence: every request's pages in ascending order, requests in order."""
    total = int(count.sum())
    req = np.repeat(np.arange(len(first)), count)
    return first[req] + (np.arange(total) - (np.cumsum(count) - count)[req])


def _sampled_accesses(first: np.ndarray, count: np.ndarray, rate: float) -> np.ndarray:
    """The page-access sequence restricted to pages whose hash is below ``rate`` (SHARDS)."""
    if rate >= 1.0:
        return _page_accesses(first, count)
    threshold = np.uint64(int(rate * (1 << _HASH_BITS)))
    ends = np.cumsum(count)
    parts, lo = [], 0
    while lo < len(first):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - count[lo] + _CHUNK_PAGES)))
        pages = _page_accesses(first[lo:hi], count[lo:hi])
        h = (pages.astype(np.uint64) * _HASH_MULT) >> np.uint64(64 - _HASH_BITS)
        parts.append(pages[h < threshold])
        lo = hi
    return np.concatenate(parts)


def reuse_distances(pages: np.ndarray) -> np.ndarray:
    """Exact LRU stack distance of every access in ``pages`` (-1 for a first access).

    See the module docstring for the method; tested against a naive LRU stack.
    """
    pages = np.asarray(pages)
    n = len(pages)
    order = np.argsort(pages, kind="stable")
    same = pages[order[1:]] == pages[order[:-1]]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    t = np.flatnonzero(prev >= 0)  # the re-accesses
    # d(t) = #{j < t : next(j) > t} - #{j <= prev(t) : next(j) > t}. The first term is
    # t - #{j : next(j) <= t}, because next(j) <= t implies j < t.
    next_le = np.cumsum(np.bincount(nxt[nxt < n], minlength=n + 1))
    dist = t - next_le[t]
    # Second term: prefix [0, m) with m = prev(t) + 1 is a union of aligned dyadic blocks, one
    # per set bit k of m (block index (m >> k) - 1 at level k). Per level, sort the keys
    # (block, next) once and binary-search (block, t) for every query that uses that level.
    m = prev[t] + 1
    big = np.int64(n + 1)
    pos = np.arange(n, dtype=np.int64)
    for k in range(int(n).bit_length()):
        sel = np.flatnonzero((m >> k) & 1)
        if not sel.size:
            continue
        keys = np.sort((pos >> k) * big + nxt)
        block = (m[sel] >> k) - 1
        needle = block * big + t[sel]
        by_needle = np.argsort(needle)  # sorted needles make the searches cache-friendly
        at_most = np.empty_like(needle)
        at_most[by_needle] = np.searchsorted(keys, needle[by_needle], side="right")
        dist[sel] -= np.minimum((block + 1) << k, n) - at_most
    out = np.full(n, -1, dtype=np.int64)
    out[t] = dist
    return out


def _reuse_histogram(first: np.ndarray, count: np.ndarray, budget: int) -> dict[str, Any]:
    """Log2-bucketed reuse-distance histogram over page accesses (SHARDS-sampled past budget)."""
    total = int(count.sum())
    rate = 1.0 if total <= budget else budget / total
    pages = _sampled_accesses(first, count, rate)
    dist = reuse_distances(pages)
    warm = dist[dist >= 0] / rate
    buckets = np.where(warm < 1, 0, np.floor(np.log2(np.maximum(warm, 1))).astype(np.int64) + 1)
    hist = np.bincount(buckets.astype(np.int64), minlength=1)
    cold = int((dist < 0).sum())
    scale = (lambda x: x) if rate == 1.0 else (lambda x: round(float(x) / rate, 1))
    return {
        "bucket_low": [0] + [1 << (k - 1) for k in range(1, len(hist))],
        "bucket_high": [1 << k for k in range(len(hist))],
        "counts": [scale(int(c)) for c in hist],
        "cold": scale(cold),
        "page_accesses": total,
        "sampled_accesses": int(len(pages)),
        "sampling_rate": rate,
    }


def _quantiles(x: np.ndarray) -> dict[str, float]:
    """Mean, min, p50/p90/p99 and max of ``x`` (NaN when empty)."""
    if len(x) == 0:
        return {k: float("nan") for k in ("mean", "min", "p50", "p90", "p99", "max")}
    p50, p90, p99 = np.percentile(x, [50, 90, 99])
    return {"mean": float(x.mean()), "min": float(x.min()), "p50": float(p50),
            "p90": float(p90), "p99": float(p99), "max": float(x.max())}


def describe(trace: Trace, *, reuse_budget: int = 1 << 19) -> dict[str, Any]:
    """Summary statistics of ``trace`` as a JSON-serialisable dict.

    Keys: ``requests``, ``reads``, ``writes``, ``read_pct``, ``duration_us``, ``streams``
    (requests per stream id), ``size_bytes`` and ``gap_us`` (mean/min/p50/p90/p99/max; gaps also
    ``zero_fraction``), ``size_kib_mean``, ``footprint_pages``/``footprint_bytes`` (distinct 4 KiB
    pages touched), ``write_footprint_pages``/``_bytes`` and ``read_footprint_pages``/``_bytes``,
    ``page_accesses``, ``sequential_fraction`` (requests starting exactly where the previous
    request of the same stream ended), ``top10_page_share`` (share of page accesses that hit the
    10% most-accessed pages) and ``reuse`` (see the module docstring). ``reuse_budget`` bounds the
    page accesses used for the reuse histogram (about 1 s per million).
    """
    n = len(trace)
    if n == 0:
        raise ValueError("cannot describe an empty trace")
    is_read = trace.op == READ
    first, count = _page_spans(trace)
    gaps = np.diff(trace.time_us)
    streams, per_stream = np.unique(trace.stream, return_counts=True)
    by_stream = np.argsort(trace.stream, kind="stable")  # keeps arrival order per stream
    s, off = trace.stream[by_stream], trace.offset[by_stream]
    end = off + trace.size[by_stream]
    same_stream = s[1:] == s[:-1]
    sequential = int((same_stream & (off[1:] == end[:-1])).sum())
    footprint = _union_pages(first, count)
    write_fp = _union_pages(first[~is_read], count[~is_read])
    read_fp = _union_pages(first[is_read], count[is_read])
    return {
        "name": trace.name,
        "requests": n,
        "reads": int(is_read.sum()),
        "writes": int(n - is_read.sum()),
        "read_pct": 100.0 * float(is_read.mean()),
        "duration_us": float(trace.time_us[-1] - trace.time_us[0]),
        "streams": {int(k): int(v) for k, v in zip(streams, per_stream)},
        "size_bytes": _quantiles(trace.size.astype(np.float64)),
        "size_kib_mean": float(trace.size.mean() / 1024),
        "gap_us": {**_quantiles(gaps),
                   "zero_fraction": float((gaps == 0).mean()) if len(gaps) else float("nan")},
        "footprint_pages": footprint,
        "footprint_bytes": footprint * PAGE_SIZE,
        "write_footprint_pages": write_fp,
        "write_footprint_bytes": write_fp * PAGE_SIZE,
        "read_footprint_pages": read_fp,
        "read_footprint_bytes": read_fp * PAGE_SIZE,
        "page_accesses": int(count.sum()),
        "sequential_fraction": sequential / max(1, int(same_stream.sum())),
        "top10_page_share": _top_share(first, count, 0.1),
        "reuse": _reuse_histogram(first, count, reuse_budget),
    }


def _human_bytes(x: float) -> str:
    """``x`` bytes with a binary unit."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    while abs(x) >= 1024 and len(units) > 1:
        x /= 1024
        units.pop(0)
    return f"{x:.1f} {units[0]}"


def format_description(d: dict[str, Any]) -> str:
    """A human-readable multi-line rendering of :func:`describe`'s dict."""
    s, g, r = d["size_bytes"], d["gap_us"], d["reuse"]
    lines = [
        f"trace {d['name']}: {d['requests']:,} requests over {d['duration_us'] / 1e6:.3f} s, "
        f"{len(d['streams'])} stream(s)",
        f"  reads        {d['reads']:,} ({d['read_pct']:.2f}%), writes {d['writes']:,}",
        f"  size         mean {s['mean'] / 1024:.1f} KiB, p50 {s['p50'] / 1024:.1f}, "
        f"p90 {s['p90'] / 1024:.1f}, p99 {s['p99'] / 1024:.1f}, max {s['max'] / 1024:.1f} KiB",
        f"  gap          mean {g['mean']:.2f} us, p50 {g['p50']:.2f}, p90 {g['p90']:.2f}, "
        f"p99 {g['p99']:.2f} us, zero {100 * g['zero_fraction']:.1f}%",
        f"  footprint    {d['footprint_pages']:,} pages ({_human_bytes(d['footprint_bytes'])}); "
        f"written {_human_bytes(d['write_footprint_bytes'])}, "
        f"read {_human_bytes(d['read_footprint_bytes'])}",
        f"  locality     {100 * d['sequential_fraction']:.1f}% sequential, top 10% of pages get "
        f"{100 * d['top10_page_share']:.1f}% of {d['page_accesses']:,} page accesses",
        f"  reuse        cold {r['cold']:,}"
        + ("" if r["sampling_rate"] == 1.0 else f" (sampled at rate {r['sampling_rate']:.4f})"),
    ]
    for lo, hi, c in zip(r["bucket_low"], r["bucket_high"], r["counts"]):
        if c:
            lines.append(f"    [{lo:>9,}, {hi:>9,})  {c:,}")
    return "\n".join(lines)
