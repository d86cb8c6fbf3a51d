"""Regenerate ``clusters.json``: FleetIO §3.4's workload classes by k-means.

    python -m hss_gym.envs.fleetio.cluster        # needs scikit-learn (extra "agents")

Windows of 10k requests are sampled from the 9 FleetIO workloads (Table 4 + training set), the
four features (read MB/s, write MB/s, LPA entropy, mean KiB; log1p, standardised) clustered
with k-means (k = 3, 70% of the windows; accuracy against each workload's majority cluster on
the other 30% is printed). Clusters are named as in Fig. 6: ``TO`` (throughput-oriented: clusters where
bandwidth-intensive workloads are the majority), ``LC-2`` (the latency-critical cluster holding YCSB, low LPA
entropy), ``LC-1`` (the other latency-critical one), with the paper's fine-tuned alphas
(2.5e-2, 5e-3, 0). The JSON is what the environment reads; it never imports scikit-learn.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hss_gym.envs.fleetio import workloads as wl

K = 3  # Fig. 6's three classes
ALPHA = {"LC-1": 0.025, "LC-2": 0.005, "TO": 0.0}
UNIFIED_ALPHA = 0.01
OUT = Path(__file__).with_name("clusters.json")


def sample_windows(n_windows: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    names = wl.workload_names()
    X, y = [], []
    for j, name in enumerate(names):
        t = wl.get_workload(name).instance()
        f = wl.window_features(t.sample_requests(np.random.default_rng(seed + j), 10_000 * n_windows))
        X.append(f)
        y += [j] * len(f)
    return np.concatenate(X), np.asarray(y), names


def main() -> None:
    from sklearn.cluster import KMeans

    X, y, names = sample_windows()
    Z = np.log1p(X)
    mean, std = Z.mean(axis=0), Z.std(axis=0) + 1e-9
    Z = (Z - mean) / std
    rng = np.random.default_rng(0)
    train = rng.random(len(Z)) < 0.7
    km = KMeans(n_clusters=K, n_init=10, random_state=0).fit(Z[train])
    lab = km.predict(Z)
    major = {j: int(np.bincount(lab[train & (y == j)], minlength=K).argmax()) for j in range(len(names))}
    acc = float(np.mean([lab[i] == major[y[i]] for i in np.flatnonzero(~train)]))
    to = {major[j] for j, n in enumerate(names) if wl.get_workload(n).category == "bandwidth"}
    lc2 = major[names.index("ycsb")]
    if lc2 in to:
        raise RuntimeError("YCSB clustered with the bandwidth-intensive workloads")
    labels = ["TO" if c in to else "LC-2" if c == lc2 else "LC-1" for c in range(K)]
    d = np.linalg.norm(Z - km.cluster_centers_[lab], axis=1)
    out = {"features": ["read_MBps", "write_MBps", "lpa_entropy_bits", "mean_kib"],
           "transform": "standardised log1p", "mean": mean.tolist(), "std": std.tolist(),
           "centroids": km.cluster_centers_.tolist(), "labels": labels, "alpha": ALPHA,
           "unified_alpha": UNIFIED_ALPHA, "max_dist": float(2 * d.max()),
           "members": {n: labels[major[j]] for j, n in enumerate(names)}, "test_accuracy": acc,
           "command": "python -m hss_gym.envs.fleetio.cluster"}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"test accuracy {acc:.3f}; classes {out['members']}; wrote {OUT}")


if __name__ == "__main__":
    main()
