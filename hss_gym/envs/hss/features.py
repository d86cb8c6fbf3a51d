"""Observation features (Harmonia Table 1; Sibyl's for ``hss/Placement-v0``) and their spaces.

The native core computes the features as bin indices and holds their one table of names, order
and bins (``backends/core/env.c``); this module reads it through ``feature_layout``. Observations
are the bins scaled to [0, 1] as ``bin / (bins - 1)``; ``raw_bins=True`` gives the indices as
``MultiDiscrete``. docs/hss.md ("Observations") describes each feature.

For the placement agent the page is the request's first page; for the migration agent it is the
candidate page chosen by the scanner (``req_type``/``req_size`` then describe the current request).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from gymnasium import spaces

from hss_gym.backends import _core

#: values of the env option ``room_feature``: how the free-space features (fast_cap, free_d) are binned
ROOM_FEATURES = ("fraction", "fits", "binary")
_ROOM_FLAGS = {"fraction": 0, "fits": _core.FEAT_FITS, "binary": _core.FEAT_FITS | _core.FEAT_BINARY}
_KINDS = ("harmonia", "sibyl")


def feature_flags(kind: str = "harmonia", room_feature: str = "fraction") -> int:
    """The core's feature flags for a feature set and a ``room_feature``."""
    if kind not in _KINDS:
        raise ValueError(f"unknown feature set {kind!r}; valid: 'harmonia', 'sibyl'")
    return (_core.FEAT_SIBYL if kind == "sibyl" else 0) | _ROOM_FLAGS[room_feature]


@lru_cache(maxsize=None)
def _layout(n_devices: int, kind: str) -> tuple[tuple[str, int], ...]:
    return _core.feature_layout(n_devices, feature_flags(kind))


def feature_names(n_devices: int, kind: str = "harmonia") -> tuple[str, ...]:
    return tuple(name for name, _ in _layout(n_devices, kind))


def feature_bins(n_devices: int, kind: str = "harmonia") -> np.ndarray:
    return np.array([bins for _, bins in _layout(n_devices, kind)], dtype=np.int64)


def observation_space(n_devices: int, kind: str = "harmonia", raw_bins: bool = False) -> spaces.Space:
    bins = feature_bins(n_devices, kind)
    if raw_bins:
        return spaces.MultiDiscrete(bins)
    return spaces.Box(0.0, 1.0, shape=(len(bins),), dtype=np.float32)
