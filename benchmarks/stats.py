"""Statistics of a leaderboard: means with 95% confidence intervals over seeds, and which
differences are significant.

A track's runs form a grid of cells (workload, configuration, seed). Each policy's number for the
track is the mean over its cells. Seeds are the independent replications (every seed draws a new
synthetic trace and a new learner), so the interval is computed over *per-seed* values: the mean
over the track's workloads and configurations for that seed. Two policies are compared *paired*
by seed (same traces): the difference is significant when the 95% t-interval of the per-seed
differences excludes zero. With one seed there is no interval (``None``), and nothing is marked.
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
