"""Multi-programmed workloads: Harmonia Table 5's mixes of concurrent synthetic streams.

Each component runs as its own thread would: its own arrival process from time 0, its own seed
and its own disjoint region of the address space. The merged trace interleaves them by arrival
time (stable: ties keep component order, then each component's own order), and ``stream`` is the
component's index in the mix.

How ``n`` is split: ``n`` is the length of the *merged* trace. Concurrent components share one
time range, so component ``i`` contributes in proportion to its request rate ``1 / mean_gap_i``
(mix4's LUN0, at one request per 1.16 ms, contributes about 0.2% of the requests next to ssd-04 at
one per 3.6 us). Each component is generated with some headroom, the merge is cut at the earliest
time any component runs out of requests (so every component is active over the whole merged
trace), and the first ``n`` requests are kept; the headroom grows until that leaves ``n``.

Regions: component ``i`` occupies ``[base_i, base_i + footprint_i)`` with ``base_i`` the sum of
the previous footprints rounded up to a 1 GiB boundary; ``footprint_scale`` multiplies every
component's default footprint.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hss_gym._version import __version__
from hss_gym.workloads import synthetic
from hss_gym.workloads.trace import Trace

MIXES: dict[str, tuple[str, ...]] = {
    "mix1": ("ssd-02", "lun4"),
    "mix2": ("lun1", "ssd-04"),
    "mix3": ("ycsb-c", "ycsb-f"),
    "mix4": ("ssd-00", "ssd-04", "ycsb-a", "lun0"),
    "mix5": ("ssd-00", "lun0", "ycsb-c", "ycsb-f"),
    "mix6": ("ycsb-b", "ycsb-d", "lun0", "lun1", "lun4", "ssd-00", "ssd-02", "ssd-03"),
}

_GIB = 1 << 30
_MIN_PER_COMPONENT = 32  # headroom for slow components whose expected share is tiny


def make_mix(components: Sequence[str], n: int = 100_000, seed: int = 0, *,
             footprint_scale: float = 1.0, name: str = "mix") -> Trace:
    """Merge concurrent synthetic ``components`` into one ``n``-request trace (module docstring).

    Component ``i`` is generated from seed ``SeedSequence(seed).spawn(k)[i]``; ``source`` lists
    every component's workload, seed, generated and kept request counts and region.
    """

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not components:
        raise ValueError("a mix needs at least one component")
    if footprint_scale <= 0:
        raise ValueError(f"footprint_scale must be > 0, got {footprint_scale}")
    params = [synthetic.default_params(c) for c in components]
    for p in params:
        p["footprint_gib"] *= footprint_scale
    seeds = [int(s.generate_state(1, np.uint64)[0])
             for s in np.random.SeedSequence(seed).spawn(len(components))]
    rates = np.array([1.0 / p["mean_gap_us"] for p in params])
    share = rates / rates.sum()
    sizes = [int(np.ceil(p["footprint_gib"] * _GIB)) for p in params]
    bases = np.concatenate(([0], np.cumsum([-(-s // _GIB) * _GIB for s in sizes])[:-1]))

    headroom = 1.25
    while True:
        counts = [int(np.ceil(headroom * n * w)) + _MIN_PER_COMPONENT for w in share]
        parts = [synthetic.generate(c, k, s, **p)
                 for c, k, s, p in zip(components, counts, seeds, params)]
        cut = min(t.time_us[-1] for t in parts)
        time_us = np.concatenate([t.time_us for t in parts])
        order = np.argsort(time_us, kind="stable")
        kept = order[time_us[order] <= cut][:n]
        if len(kept) == n:
            break
        headroom *= 1.5

    stream = np.repeat(np.arange(len(parts), dtype=np.uint16), [len(t) for t in parts])
    offset = np.concatenate([t.offset + b for t, b in zip(parts, bases)])
    kept_per = np.bincount(stream[kept], minlength=len(parts))
    source = {
        "kind": "synthetic", "generator": name,
        "params": {"components": list(components), "footprint_scale": footprint_scale},
        "seed": seed, "n": n, "hss_gym_version": __version__,
        "streams": [{"stream": i, "workload": c, "seed": s, "generated": len(t),
                     "kept": int(kept_per[i]), "region_offset": int(b), "region_bytes": size,
                     "params": t.source["params"]}
                    for i, (c, s, t, b, size) in enumerate(zip(components, seeds, parts, bases,
                                                                sizes))],
    }
    return Trace(time_us[kept], np.concatenate([t.op for t in parts])[kept], offset[kept],
                 np.concatenate([t.size for t in parts])[kept], stream[kept], name=name,
                 source=source).validate()


def generate_mix(name: str, n: int = 100_000, seed: int = 0, *,
                 footprint_scale: float = 1.0) -> Trace:
    """Generate Table 5's mix ``name`` (``"mix1"`` .. ``"mix6"``) with ``n`` merged requests."""
    if name not in MIXES:
        raise ValueError(f"unknown mix {name!r}; valid: {', '.join(MIXES)}")
    return make_mix(MIXES[name], n, seed, footprint_scale=footprint_scale, name=name)

