"""Observation features (Harmonia Table 1; Sibyl's for ``hss/Placement-v0``) and their spaces.

Features are computed natively (``HSS.features`` in ``backends/core/module.c``) as bin indices and
scaled to [0, 1] as ``bin / (bins - 1)``; ``raw_bins=True`` gives the indices as ``MultiDiscrete``.

=========  ===============================================  ====================================
feature    meaning                                          bins
=========  ===============================================  ====================================
req_type   read (0) / write (1)                              2
req_size   request size in pages, log2 classes               8: 1, 2-3, 4-7, ..., >= 128 pages
acc_intr   requests since the page's last access             64: floor(2 log2(1 + x)), never = 63
acc_freq   the page's access count                           64: floor(4 log2(1 + x))
fast_cap   free space of device 0                            8: floor(8 x free fraction)
curr_dev   device holding the page                           N (a page never seen: the home device)
migr_intr  requests since the page was placed or migrated    64: floor(2 log2(1 + x)), never = 63
free_d     free space of device d, for d = 1 .. N-2          8 each (only with more than 2 devices)
=========  ===============================================  ====================================

For the placement agent the page is the request's first page; for the migration agent it is the
candidate page chosen by the scanner (``req_type``/``req_size`` then describe the current request).
Sibyl's six features are (req_size, req_type, acc_intr, acc_freq, fast_cap, curr_dev).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

#: values of the env option ``room_feature``: how the free-space features (fast_cap, free_d) are binned
ROOM_FEATURES = ("fraction", "fits", "binary")
HARMONIA_FEATURES = ("req_type", "req_size", "acc_intr", "acc_freq", "fast_cap", "curr_dev", "migr_intr")
SIBYL_FEATURES = ("req_size", "req_type", "acc_intr", "acc_freq", "fast_cap", "curr_dev")
_BINS = {"req_type": 2, "req_size": 8, "acc_intr": 64, "acc_freq": 64, "fast_cap": 8, "migr_intr": 64}


def feature_names(n_devices: int, kind: str = "harmonia") -> tuple[str, ...]:
    if kind == "sibyl":
        return SIBYL_FEATURES
    if kind != "harmonia":
        raise ValueError(f"unknown feature set {kind!r}; valid: 'harmonia', 'sibyl'")
    return HARMONIA_FEATURES + tuple(f"free_{d}" for d in range(1, n_devices - 1))


def feature_bins(n_devices: int, kind: str = "harmonia") -> np.ndarray:
    return np.array([n_devices if f == "curr_dev" else _BINS.get(f, 8)
                     for f in feature_names(n_devices, kind)], dtype=np.int64)


def observation_space(n_devices: int, kind: str = "harmonia", raw_bins: bool = False) -> spaces.Space:
    bins = feature_bins(n_devices, kind)
    if raw_bins:
        return spaces.MultiDiscrete(bins)
    return spaces.Box(0.0, 1.0, shape=(len(bins),), dtype=np.float32)
