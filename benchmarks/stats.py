"""Statistics of a leaderboard: means with 95% confidence intervals over seeds, and which
differences are significant.

A track's runs form a grid of cells (workload, configuration, seed). Each policy's number for the
track is the mean over its cells: it *pools* the track's workloads, configurations and seeds.
Seeds are the independent replications (every seed draws a new synthetic trace and a new
learner); the workloads are a fixed set, not a sample. So the interval is computed over
*per-seed* values (the mean over the track's workloads and configurations for that seed): it is
the seed-to-seed spread of the pooled mean, not the spread between workloads (which
:func:`hss_gym.benchmarks.report.detail_table` shows workload by workload, each with an interval
over seeds alone). Two policies are compared *paired* by seed (same traces): the difference is
significant when the 95% t-interval of the per-seed differences excludes zero. With one seed
there is no interval (``None``), and nothing is marked.

*Tied with the leader* (``≈``, :func:`tied_with_leader`) follows the ranking: the leader's
nearest followers that the paired test does not separate from it, down to the first that it does;
below that no policy is marked, even one whose noisier runs the test cannot separate either (a
rank-7 ``≈`` under an unmarked rank 5 would say the ranking puts it closer than it is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (1.96 beyond)
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042)


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return _T95[df - 1] if df <= len(_T95) else 1.96


def finite(xs: Sequence[float | None]) -> list[float]:
    return [float(x) for x in xs if x is not None and math.isfinite(x)]


@dataclass(frozen=True)
class Estimate:
    """A mean and the half-width of its 95% confidence interval (``None`` with fewer than 2 values)."""

    mean: float | None
    half_width: float | None
    n: int

    @property
    def low(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean + self.half_width


def mean_ci(xs: Sequence[float | None]) -> Estimate:
    """Mean and 95% t-interval half-width of the finite values of ``xs``."""
    v = finite(xs)
    if not v:
        return Estimate(None, None, 0)
    m = sum(v) / len(v)
    if len(v) < 2:
        return Estimate(m, None, 1)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))
    return Estimate(m, t95(len(v) - 1) * sd / math.sqrt(len(v)), len(v))


def paired_significant(a: dict[int, float], b: dict[int, float]) -> bool | None:
    """Whether ``a`` and ``b`` (values by seed) differ at 95%, paired by seed; ``None`` when fewer
    than two seeds are shared."""
    seeds = [s for s in a if s in b and a[s] is not None and b[s] is not None
             and math.isfinite(a[s]) and math.isfinite(b[s])]
    if len(seeds) < 2:
        return None
    d = mean_ci([a[s] - b[s] for s in seeds])
    if d.half_width is None or d.mean is None:
        return None
    if d.half_width == 0.0:
        return d.mean != 0.0
    return abs(d.mean) > d.half_width


def tied_with_leader(differs: Sequence[bool | None]) -> list[bool]:
    """Which of the leader's followers (in rank order) are tied with it: ``differs[i]`` says
    whether follower ``i`` differs significantly from the leader (``None``: cannot say, e.g. one
    seed). The ties are a prefix of the ranking: follower ``i`` is tied when neither it nor any
    follower ranked above it differs (and every one of them could be tested)."""
    out, tied = [], True
    for d in differs:
        tied = tied and d is False
        out.append(tied)
    return out


#: the default tolerance of a published gap ("A beats B by x%", "A cuts M by x%"): ours agrees
#: from half to double the paper's gap (same sign); a published value (a % of Oracle, a write
#: amplification) agrees within a factor of 1.5 either way
GAP_TOLERANCE = (0.5, 2.0)
VALUE_TOLERANCE = (2 / 3, 1.5)


def within_tolerance(ours: float, paper: float, tolerance: Sequence[float]) -> bool:
    """Whether ``ours / paper`` lies in ``[low, high]`` (a result of the other sign never does)."""
    low, high = float(tolerance[0]), float(tolerance[1])
    if paper == 0 or not (0 < low <= high):
        raise ValueError(f"a tolerance is a ratio range 0 < low <= high around a nonzero number, "
                         f"got {tolerance!r} around {paper!r}")
    return low <= ours / paper <= high


def tolerance_range(paper: float, tolerance: Sequence[float]) -> tuple[float, float]:
    """The results that agree with ``paper`` under ``tolerance`` (ascending)."""
    a, b = paper * float(tolerance[0]), paper * float(tolerance[1])
    return (min(a, b), max(a, b))
