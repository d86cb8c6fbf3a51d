"""The training split: workloads, seeds and trace windows a policy may train on, disjoint from
what the leaderboards evaluate.

The leaderboards evaluate seeds 0-2 (``learning-v1``: 0-4) of the registered generators and every
request of the catalogue's real traces. A policy that trained on those cells would be graded on
its training data, so the split is:

* **Training seeds**: ``TRAIN_SEED_START`` (1000) and above, for any registered generator. A
  synthetic trace is a function of (generator, parameters, length, seed), so these traces are new
  draws of the evaluated distributions, never the evaluated traces themselves; every suite keeps
  its seeds below 1000 (``tests/test_protocol.py``). ``train_seeds(k)`` gives the first k.
* **Training workloads** (``TRAIN_WORKLOADS``, registered as ``train-*``): one per generator family,
  the family's generator with its published statistics (read share, mean request size, mean
  gap) and footprint moved away from every evaluated workload of that family, and a learning
  scenario with another hot set. A policy trained only on them has seen no evaluated
  distribution: the stricter claim.
* **Real traces**: the real tracks evaluate every request of all eight catalogue traces, so no
  window of them is free to train on (:func:`catalogue_train_windows` computes what a suite
  leaves unevaluated, empty today, and is what to use if a suite ever evaluates a prefix). Train on
  real traces outside the catalogue (other volumes of the same collections are fine), with
  ``trace_window`` for episodes.

``benchmarks/SUBMISSION.md`` states the rules; a results record carries the policy's declared
training set (``trained_on``).
"""

from __future__ import annotations

from typing import Any

from hss_gym.workloads import learning, synthetic
from hss_gym.workloads.trace import Trace
from hss_gym.workloads import catalogue

#: the first training seed; every suite evaluates seeds below it
TRAIN_SEED_START = 1000

#: name -> (the generator it runs, the parameters that move it away from the evaluated workloads)
TRAIN_WORKLOADS: dict[str, tuple[str, dict[str, Any]]] = {
    # VDI LUNs evaluate 0.2-7.6% reads, 26-43 KiB, 734-1864 us, 16 GiB
    "train-vdi": ("lun2", {"read_fraction": 0.15, "mean_size_kib": 20.0, "mean_gap_us": 500.0,
                           "footprint_gib": 8.0}),
    # RocksDB: 73.5-79.9% reads, 7.5-108.9 KiB, 3.3-66.4 us, 16 GiB
    "train-rocksdb": ("ssd-02", {"read_fraction": 0.65, "mean_size_kib": 24.0, "mean_gap_us": 20.0,
                                 "footprint_gib": 8.0}),
    # YCSB B-F: 47.6-55.9% reads, 36.1-54.6 KiB, 6.5-9.6 us, 4 GiB, theta 0.99
    "train-ycsb": ("ycsb-b", {"read_fraction": 0.65, "mean_size_kib": 28.0, "mean_gap_us": 13.0,
                              "footprint_gib": 2.0, "theta": 0.9}),
    # MLPerf: 80-83.4% reads, 172.6-180.1 KiB, 500-1024 us, 8 GiB
    "train-mlperf": ("resnet50", {"read_fraction": 0.9, "mean_size_kib": 128.0, "mean_gap_us": 300.0,
                                  "footprint_gib": 4.0}),
    # learn-hot-scan / learn-write-once / learn-phase: hot set 5% of the footprint, 70% of requests
    "train-hot-scan": ("learn-hot-scan", {"hot_share": 0.55, "hot_fraction": 0.03, "gap_us": 60.0}),
}


def names() -> list[str]:
    """The training workloads' names."""
    return list(TRAIN_WORKLOADS)


def train_seeds(k: int, start: int = TRAIN_SEED_START) -> list[int]:
    """``k`` training seeds from ``start`` (at least ``TRAIN_SEED_START``)."""
    if start < TRAIN_SEED_START:
        raise ValueError(f"start must be >= TRAIN_SEED_START ({TRAIN_SEED_START}): lower seeds are evaluated, "
                         f"got {start}")
    return list(range(start, start + k))


def generate(name: str, n: int, seed: int, **params: Any) -> Trace:
    """``n`` requests of training workload ``name`` (``params`` override its generator's)."""
    base, own = TRAIN_WORKLOADS[name]
    p = {**own, **params}
    if base in learning.DEFAULTS:
        tr = learning.generate(base, n, seed, **p)
    else:
        tr = synthetic.generate(base, n, seed, **p)
    return Trace(tr.time_us, tr.op, tr.offset, tr.size, tr.stream, name=name,
                 source={**tr.source, "training_workload": name})


def catalogue_train_windows(suites: list[Any]) -> dict[str, tuple[int, int]]:
    """For each catalogue trace, the requests ``[start, stop)`` no track of ``suites`` evaluates
    (a track evaluates a trace's first ``n_requests``; a ``traces_dir`` track, whose files are
    only known when it runs, counts as evaluating every catalogue trace), where any are left;
    ``suites`` are :class:`hss_gym.benchmarks.suites.Suite` objects."""

    evaluated: dict[str, int] = {}
    for suite in suites:
        for track in suite.tracks:
            names = [e.name for e in catalogue.ENTRIES] if track.traces_dir is not None or not track.workloads else \
                [catalogue.entry(w).name for w in track.workloads
                 if isinstance(w, str) and w.startswith(catalogue.PREFIX)]
            for name in names:
                e = catalogue.entry(name)
                n = e.requests if track.n_requests is None else min(track.n_requests, e.requests)
                evaluated[name] = max(evaluated.get(name, 0), n)
    out = {}
    for e in catalogue.ENTRIES:
        start = evaluated.get(e.name, 0)
        if start < e.requests:
            out[e.name] = (start, e.requests)
    return out
