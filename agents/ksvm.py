"""K-SVM: k-means-assisted SVM migration (Shetti, Li and Du, "Machine Learning-based Adaptive
Migration Algorithm for Hybrid Storage Systems", ACM TOS 2019; as evaluated in Harmonia §3.3).

What it does
  * **Placement** (:class:`~hss_gym.agents.heuristics.FastUntilFull`): incoming data goes to the
    fast device until it is 100% full, then to the slow device (Harmonia §3.3).
  * **Migration** (:class:`KSVMMigration`): every ``interval`` (1000) requests, on the critical
    path, the pages accessed in the last ``n_intervals`` intervals are described by their access
    frequency per interval (``log1p`` of the counts). k-means (``k`` = number of devices)
    clusters a sample of them; clusters ranked by centroid frequency give each sampled page a
    device label (hottest cluster -> device 0); an SVM (``SVC``, RBF kernel, or ``LinearSVC``)
    trained on those labels classifies every tracked page into a device. Each device's share is
    cut to its capacity (hottest first) and the pages whose class differs from their current
    device are moved at once with ``env.hss.move`` (demotions, then promotions), delaying the
    request that triggered the interval — the paper's critical-path bulk migration. During the
    interval the migration agent of the environment is answered with "stay".

What it simplifies
  * Features are per-page access counts over the last few fixed intervals only (the paper also
    considers request sizes and recency); the SVM is refitted at every interval on k-means labels
    of a sample (``kmeans_samples``/``svm_samples`` pages) instead of being trained once offline.
  * At most ``max_pages`` pages are tracked (most recently/frequently accessed); pages idle for
    the whole window are forgotten and leave the fast device by LRU eviction when promotions
    need their space. ``max_moves`` bounds the pages moved per interval (``None``: unbounded).

``KSVM`` is placement + migration; ``KSVMMigration`` alone (``agents = ("migration",)``) pairs
with another placement policy through :class:`hss_gym.agents.base.Combined` (Sibyl+K-SVM).
scikit-learn is imported here only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.cluster import KMeans
from sklearn.svm import SVC, LinearSVC

from hss_gym.agents.base import Combined
from hss_gym.agents.heuristics import FastUntilFull, PageHistory, PeriodicMigration, unique_rows
from hss_gym.agents.sibyl import Sibyl
from hss_gym.envs.hss.env import HSSParallelEnv


class KSVMMigration(PeriodicMigration):
    """K-SVM's migration half: bulk critical-path migration every ``interval`` requests.

    ``interval`` (1000 requests), ``n_intervals`` (4: the feature window), ``max_pages`` (32768
    tracked pages), ``kmeans_samples`` (2000), ``svm_samples`` (1000), ``kernel`` ("rbf" or
    "linear"), ``C`` (1.0), ``max_moves`` (512 pages per interval, ``None`` unbounded),
    ``demote_cold`` (True: spare budget also demotes pages classified cold), ``seed`` (0; mixed
    with the episode seed).
    """

    name = "k_svm_migration"

    def __init__(self, interval: int = 1000, n_intervals: int = 4, max_pages: int = 32768,
                 kmeans_samples: int = 2000, svm_samples: int = 1000, kernel: str = "rbf",
                 C: float = 1.0, max_moves: int | None = 512, demote_cold: bool = True,
                 seed: int = 0) -> None:
        if kernel not in ("rbf", "linear"):
            raise ValueError(f"kernel must be 'rbf' or 'linear', got {kernel!r}")
        if kmeans_samples < 2 or svm_samples < 2:
            raise ValueError("kmeans_samples and svm_samples must be >= 2")
        super().__init__(interval, PageHistory(n_intervals, max_pages), max_moves, demote_cold, seed)
        self.kernel, self.C = kernel, float(C)
        self.kmeans_samples, self.svm_samples = int(kmeans_samples), int(svm_samples)

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.n_dev = env.cfg.n_devices
        self.last_targets: np.ndarray | None = None

    # -- the learned part ------------------------------------------------------------------
    def classify(self, features: np.ndarray) -> np.ndarray:
        """Device class of each row of ``features`` (k-means labels a sample, an SVM learns
        them and classifies all rows)."""
        n, k = len(features), max(2, self.n_dev)
        rng = self._rng
        idx = rng.choice(n, self.kmeans_samples, replace=False) if n > self.kmeans_samples else np.arange(n)
        sample = features[idx]
        if len(unique_rows(sample)[0]) < k:  # too few distinct points to cluster
            return np.full(n, self.n_dev - 1, dtype=np.int64)
        km = KMeans(n_clusters=k, n_init=3, random_state=int(rng.integers(2**31))).fit(sample)
        rank = np.empty(k, dtype=np.int64)  # cluster -> device, hottest cluster first
        rank[np.argsort(-km.cluster_centers_.sum(axis=1), kind="stable")] = np.arange(k)
        labels = np.minimum(rank[km.labels_], self.n_dev - 1)
        if len(np.unique(labels)) < 2:
            return np.full(n, labels[0], dtype=np.int64)
        j = rng.choice(len(idx), self.svm_samples, replace=False) if len(idx) > self.svm_samples else np.arange(len(idx))
        if len(np.unique(labels[j])) < 2:  # the SVM's subsample drew one class: use the k-means labels
            j = np.arange(len(idx))
        if self.kernel == "rbf":
            clf = SVC(kernel="rbf", C=self.C, gamma="scale")
        else:
            clf = LinearSVC(C=self.C)
        clf.fit(sample[j], labels[j])
        # The SVM classifies each row on its own and the features are binned counts, so most
        # tracked pages share a row: classify the distinct rows only (same classes, far fewer
        # kernel evaluations).
        rows, inverse = unique_rows(features)
        return clf.predict(rows).astype(np.int64)[inverse]

    def migrate(self) -> int:
        """Classify the tracked pages and move them to their devices now; pages moved."""
        h = self.history
        if len(h.pages) < 2:
            return 0
        features = np.log1p(h.counts)
        target = self.classify(features)
        score = features @ (2.0 ** np.arange(features.shape[1]))  # recency-weighted frequency
        self.last_targets = target
        return self.apply(target, score)


class KSVM(Combined):
    """K-SVM: fast-until-full placement + :class:`KSVMMigration` (``seed`` and keyword
    arguments go to it; ``slow_device`` to the placement)."""

    name = "k_svm"

    def __init__(self, slow_device: int = -1, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(FastUntilFull(slow_device=slow_device), KSVMMigration(seed=seed, **kwargs), name="k_svm")
        self.env_options = {"migration": False}  # type: ignore[misc]  # it migrates by itself


def sibyl_ksvm(seed: int = 0, **kwargs: Any) -> Combined:
    """Sibyl+K-SVM (Harmonia section 3.3): Sibyl's RL placement with :class:`KSVMMigration`."""
    return Combined(Sibyl(seed=seed), KSVMMigration(seed=seed, **kwargs), name="sibyl+k_svm")
