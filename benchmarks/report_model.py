"""The report's data model: the runs of one (suite, track) (:class:`TrackData`, grouped from
results records by :func:`collect`) and each policy's numbers over them (:class:`PolicyStats`,
:func:`policy_stats`, :func:`leaderboard`).

It is kept apart from the rendering (:mod:`.report`, Markdown and HTML) so that what judges the
numbers, the claims (:mod:`.claims`) as well as the report, reads them from one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from hss_gym.benchmarks.problems import Problem, get_problem
from hss_gym.benchmarks.results import latest_by_key
from hss_gym.benchmarks.stats import Estimate, mean_ci, paired_significant

Cell = tuple[str, str, int]  # (workload, config, seed)


@dataclass
class TrackData:
    """The runs of one (suite, track) and their derived metrics."""

    suite: str
    track: str
    problem: Problem
    workloads: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    ok: dict[tuple[str, str, int, str], dict[str, Any]] = field(default_factory=dict)
    failed: dict[tuple[str, str, int, str], dict[str, Any]] = field(default_factory=dict)
    _derived: dict[Cell, dict[str, dict[str, Any]]] = field(default_factory=dict, repr=False)

    def cells(self) -> list[Cell]:
        """The (workload, config, seed) cells that have at least one run."""
        return list(dict.fromkeys((w, c, s) for (w, c, s, _) in list(self.ok) + list(self.failed)))

    def seeds(self) -> list[int]:
        return sorted({s for (_, _, s) in self.cells()})

    def values(self, policy: str, cell: Cell) -> dict[str, Any] | None:
        """The derived metrics of ``policy``'s run in ``cell`` (None without an ok run)."""
        if cell not in self._derived:
            raw = {p: r["metrics"] for (w, c, s, p), r in self.ok.items() if (w, c, s) == cell}
            self._derived[cell] = self.problem.derive(raw) if self.problem.derive else raw
        return self._derived[cell].get(policy)

    @property
    def metrics(self) -> tuple[Any, ...]:
        """The problem's metrics this track can show: one relative to a reference that did not
        run in it (e.g. "% of Oracle" in a suite run without ``oracle``) is left out."""
        return tuple(m for m in self.problem.metrics if not m.relative_to or m.relative_to[0] in self.policies)

    @property
    def ranked(self) -> list[str]:
        return [p for p in self.policies if p not in self.problem.references]

    @property
    def references(self) -> list[str]:
        return [p for p in self.policies if p in self.problem.references]


def collect(records: Iterable[dict[str, Any]]) -> list[TrackData]:
    """Group records by (suite, track): the latest ``ok`` run of each job, else its failure."""
    tracks: dict[tuple[str, str], TrackData] = {}
    for r in latest_by_key(records).values():
        td = tracks.get((r["suite"], r["track"]))
        if td is None:
            td = tracks[(r["suite"], r["track"])] = TrackData(r["suite"], r["track"], get_problem(r.get("problem")))
        for lst, v in ((td.workloads, r["workload"]), (td.configs, r["config"]), (td.policies, r["policy"])):
            if v not in lst:
                lst.append(v)
        key = (r["workload"], r["config"], r["seed"], r["policy"])
        (td.ok if r.get("status") == "ok" else td.failed)[key] = r
    for td in tracks.values():  # references last, in the problem's order
        refs = td.problem.references
        td.policies.sort(key=lambda p: (p in refs, refs.index(p) if p in refs else 0))
    return list(tracks.values())


@dataclass
class PolicyStats:
    """One policy's numbers over a set of a track's cells."""

    policy: str
    runs: int
    failed: int
    error: str | None
    #: metric -> seed -> mean over that seed's cells
    per_seed: dict[str, dict[int, float]]
    #: metric -> its value over all the cells, for a metric relative to a reference
    #: (``Metric.relative_to``: a ratio of means, not the mean of the per-seed ratios)
    point: dict[str, float] = field(default_factory=dict)

    def estimate(self, key: str) -> Estimate:
        e = mean_ci(list(self.per_seed.get(key, {}).values()))
        if key in self.point and e.mean is not None:
            return Estimate(self.point[key], e.half_width, e.n)
        return e

    def mean(self, key: str) -> float | None:
        return self.estimate(key).mean

    def differs(self, other: "PolicyStats", key: str) -> bool | None:
        """Whether this policy's ``key`` differs significantly from ``other``'s (paired by seed)."""
        return paired_significant(self.per_seed.get(key, {}), other.per_seed.get(key, {}))


def finite(v: Any) -> bool:
    """Whether ``v`` is a finite number (not None, NaN or infinite)."""
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def policy_stats(td: TrackData, policy: str, cells: list[Cell] | None = None) -> PolicyStats:
    """``policy``'s numbers over ``cells`` (default: all of the track's). A metric relative to a
    reference (``Metric.relative_to = (ref, key)``) is ``100 * mean(ref's key) / mean(key)`` over
    the cells both have, per seed (for the interval) and over all of them (the value shown): it
    follows a ranking on ``key``. A reference has none."""
    cells = td.cells() if cells is None else cells
    relative = [m for m in td.metrics if m.relative_to]
    by_seed: dict[str, dict[int, list[float]]] = {}
    sums: dict[str, dict[int, list[float]]] = {}  # relative metric -> seed -> [sum ref, sum own]
    runs = 0
    for c in cells:
        v = td.values(policy, c)
        if v is None:
            continue
        runs += 1
        for k, x in v.items():
            if finite(x):
                by_seed.setdefault(k, {}).setdefault(c[2], []).append(float(x))
        for m in relative:
            ref, key = m.relative_to  # type: ignore[misc]
            a, b = (td.values(ref, c) or {}).get(key), v.get(key)
            if policy not in td.problem.references and finite(a) and finite(b):
                acc = sums.setdefault(m.key, {}).setdefault(c[2], [0.0, 0.0])
                acc[0] += float(a)
                acc[1] += float(b)
    fails = [td.failed[(*c, policy)] for c in cells if (*c, policy) in td.failed and (*c, policy) not in td.ok]
    per_seed = {k: {s: sum(xs) / len(xs) for s, xs in d.items()} for k, d in by_seed.items()}
    point: dict[str, float] = {}
    for m in relative:
        per_seed.pop(m.key, None)
        by = {s: 100.0 * a / b for s, (a, b) in sums.get(m.key, {}).items() if b}
        total = [sum(x) for x in zip(*sums.get(m.key, {}).values())]
        if by and total and total[1]:
            per_seed[m.key] = by
            point[m.key] = 100.0 * total[0] / total[1]
    return PolicyStats(policy, runs, len(fails), fails[0].get("error") if fails else None, per_seed, point)


def ranked_by_primary(td: TrackData, stats: list[PolicyStats]) -> list[PolicyStats]:
    """``stats`` best primary metric first (n/a last)."""
    m = td.problem.primary
    sign = -1.0 if m.higher_is_better else 1.0
    return sorted(stats, key=lambda s: (s.mean(m.key) is None, sign * (s.mean(m.key) or 0.0)))


def leaderboard(td: TrackData) -> list[PolicyStats]:
    """The ranked policies' stats, best primary metric first (n/a last); references excluded."""
    return ranked_by_primary(td, [policy_stats(td, p) for p in td.ranked])


def reference_stats(td: TrackData) -> list[PolicyStats]:
    """The references' stats, in the problem's order."""
    return [policy_stats(td, p) for p in td.references]
