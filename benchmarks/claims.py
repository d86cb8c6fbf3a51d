"""The papers' published claims: one data format for every problem, and one evaluator.

Why: the report puts each paper's numbers beside ours for every problem (HSS, FleetIO, RLAlloc,
L-QoCo, ...). With the claims as data, judged by one evaluator, every claim states its rule
next to its number, the rule cannot drift from the code that applies it, every problem's rows
have the same shape, and adding a claim means adding a record, not code.

A problem's claims are in ``benchmarks/published/<problem>.json`` (:func:`load`);
:func:`evaluate` judges them against result records and returns one :class:`ClaimRow` per
claim and place: ``{"id", "claim", "paper", "where", "rule", "ours", "agree"}``, where ``rule``
is the rule in words and ``agree`` is True, False or None (not judged: the runs it needs are
missing, or the rule is ``none``). A problem module hooks it in with ``Problem(claims=claims_of(
"<problem>"))``, adding only what is its own, e.g. a metric read from a record's provenance.

The file: free text (``source``, ``note``, ...) and

* ``scope``, where a claim is judged (the row's ``where``): ``"track"``, every (suite, track) of
  the problem, one row each; ``"config"``, the one track that runs only the claim's
  ``measure.config`` (one named after it first, then one of a suite whose name starts with
  ``prefer_suite``); ``"pooled"``, all the problem's runs in one row (``where``: the tracks whose
  runs it used);
* ``policy_aliases`` (optional): ``{alias: {config: policy}}``, a policy that depends on the
  configuration (L-QoCo's rule-based method: bypass on Linux, CoTo on OceanStor);
* ``claims``: a list of records ``{"id", "claim" (the text), "paper" (its number as printed, or
  null), "measure", "rule", "format", "scale", "show_range"}``: ``format`` is the
  ``str.format`` template of our number (default ``"{:.2f}"``; a count gets ``(k, n)``, default
  ``"{} of {}"``), also used for the numbers of the rule's text; ``scale`` multiplies what is
  shown (not what is judged: 100 shows a ratio as a percentage); ``show_range`` adds the range
  and number of the cells a mean or median is over.

``measure``: ``policy`` (A), ``baseline`` (B; a list for ``better``/``not_worse``), ``metric``
(a metric of the runs after the problem's ``derive``, or one the problem reads from a record; a
list for ``better``/``not_worse``) and

* ``statistic``: ``value`` (A's), ``ratio`` (A / B), ``pct`` ((A / B - 1) x 100), ``faster_pct``
  ((B / A - 1) x 100: A faster than B by x%), ``reduction_pct`` ((1 - A / B) x 100: A cuts the
  metric by x%), ``better`` (A better than every B on every metric, by the problem's
  ``Metric.higher_is_better``) or ``not_worse`` (A at least as good);
* ``per``: ``track`` (the statistic of A's and B's means over the track, as the leaderboard
  shows them; A and B must differ significantly, 95% paired by seed, for the claim to agree, and
  ours says ``(not significant)`` when they do not), ``cell`` (the statistic per (workload,
  config, seed) cell) or ``workload`` (per (workload, config), each policy's metrics averaged over
  the seeds first);
* ``aggregate`` over the cells: ``mean`` (default), ``median`` or ``count`` (of the cells where a
  ``better``/``not_worse`` holds: ours is "k of n", followed by the numbers compared when there
  is one cell);
* optional: ``config`` (scope ``config``), ``workload`` / ``except_workload`` (a name or a list:
  the cells judged), ``needs`` (policies that must have run in a cell for it to count) and
  ``floor`` (a ratio's denominator is at least this: a zero is the best result, not a gap).

``rule``, with ``kind``:

* ``gain``: ``paper``, ``origin`` (0; 1 for a ratio: the gain above 1x), ``tolerance`` (default
  :data:`.stats.GAP_TOLERANCE`): agrees when ours - origin lies within the tolerance of
  paper - origin (half to double by default; the other sign never);
* ``value``: ``paper`` and ``tolerance`` (a factor either way; default
  :data:`.stats.VALUE_TOLERANCE`) or ``within`` (a distance either way); or ``range`` [low, high];
* ``bound``: any of ``max`` (<=), ``min`` (>=), ``below`` (<), ``above`` (>); ``below`` and
  ``above`` take a number or a dict of measure fields: the same measure with those changed (e.g.
  ``{"policy": "fleetio_ppo"}``), which ours then shows too;
* ``count``: ``share``, a fraction (k >= share x n) or the paper's ``[p, q]`` (k >= round(p / q x n));
* ``none``: not judged (e.g. a number that differs by design);

and on any rule ``direction_only`` (true when the paper gives no magnitude for it: the rule's
text starts with "direction only", and the report's verdict counts these apart) and ``note``
(words added to the rule's text).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypedDict

import numpy as np

from hss_gym.benchmarks.report_model import TrackData, collect, policy_stats
from hss_gym.benchmarks.stats import GAP_TOLERANCE, VALUE_TOLERANCE, tolerance_range, within_tolerance

PUBLISHED = Path(__file__).resolve().parent / "published"
NA = "n/a"
#: how the text of a rule judged on its direction only starts (the report's verdict counts them apart)
DIRECTION_ONLY = "direction only"
#: the text of a ``none`` rule (its claim is never judged)
NOT_JUDGED = "not judged"
SCOPES = ("track", "config", "pooled")
STATISTICS = ("value", "ratio", "pct", "faster_pct", "reduction_pct", "better", "not_worse")
COMPARISONS = ("better", "not_worse")
PER = ("track", "cell", "workload")
AGGREGATES = ("mean", "median", "count")
RULES = ("gain", "value", "bound", "count", "none")
BOUNDS = {"max": "<=", "min": ">=", "below": "<", "above": ">"}

#: what a problem reads from a record beside its metrics: ``record -> {metric: value}``
RecordMetrics = Callable[[dict[str, Any]], dict[str, Any]]


class ClaimRow(TypedDict):
    """One claim judged in one place: the shape of every problem's claims."""

    id: str
    claim: str
    paper: str
    where: str
    rule: str
    ours: str
    agree: bool | None


# ----------------------------------------------------------------------------------- the file
def load(problem: str, path: str | Path | None = None) -> dict[str, Any]:
    """The published claims of ``problem`` (``published/<problem>.json``, or ``path``), checked."""
    p = Path(path) if path is not None else PUBLISHED / f"{problem}.json"
    pub = json.loads(p.read_text())
    check(pub, p.name)
    return pub


def check(pub: dict[str, Any], name: str = "claims") -> None:
    """Raise ValueError naming the file and claim of the first malformed claim."""
    scope = pub.get("scope")
    if scope not in SCOPES:
        raise ValueError(f"{name}: 'scope' must be one of {', '.join(SCOPES)}, got {scope!r}")
    seen: set[str] = set()
    for c in pub.get("claims", []):
        cid = c.get("id")

        def bad(msg: str) -> ValueError:
            return ValueError(f"{name}: claim {cid!r}: {msg}")

        if not isinstance(cid, str) or cid in seen:
            raise bad("needs a unique string 'id'")
        seen.add(cid)
        for k in ("claim", "measure", "rule"):
            if k not in c:
                raise bad(f"has no {k!r}")
        if not (c.get("paper") is None or isinstance(c["paper"], str)):
            raise bad("'paper' is the number as printed (a string) or null")
        m, r = c["measure"], c["rule"]
        stat, per, agg = m.get("statistic"), m.get("per"), m.get("aggregate", "mean")
        if stat not in STATISTICS or per not in PER or agg not in AGGREGATES:
            raise bad(f"measure: statistic in {STATISTICS}, per in {PER}, aggregate in {AGGREGATES}; got "
                      f"{stat!r}, {per!r}, {agg!r}")
        if "policy" not in m or "metric" not in m or (stat != "value" and "baseline" not in m):
            raise bad("measure: needs a policy, a metric and (but for statistic 'value') a baseline")
        if (agg == "count") != (stat in COMPARISONS) or (agg == "count") != (r.get("kind") == "count"):
            raise bad("a count (aggregate 'count', rule 'count') is of a 'better' or 'not_worse' statistic")
        if per == "track" and (scope == "pooled" or agg != "mean"):
            raise bad("per 'track' is judged on one track (scope 'track' or 'config'), without an aggregate")
        if scope == "config" and "config" not in m:
            raise bad("scope 'config': the measure names its 'config'")
        kind = r.get("kind")
        if kind not in RULES:
            raise bad(f"rule: kind in {RULES}, got {kind!r}")
        if kind == "gain" and not isinstance(r.get("paper"), (int, float)):
            raise bad("a gain rule needs the paper's number ('paper')")
        if kind == "value" and sum(k in r for k in ("tolerance", "within", "range")) > 1:
            raise bad("a value rule has one of 'tolerance', 'within', 'range'")
        if kind == "value" and "range" not in r and not isinstance(r.get("paper"), (int, float)):
            raise bad("a value rule needs the paper's number ('paper') or a 'range'")
        if kind == "bound" and not any(k in r for k in BOUNDS):
            raise bad(f"a bound rule needs one of {', '.join(BOUNDS)}")
        if kind == "count" and "share" not in r:
            raise bad("a count rule needs a 'share'")
        tol = r.get("tolerance")
        if tol is not None and not (isinstance(tol, list) and len(tol) == 2 and 0 < float(tol[0]) <= float(tol[1])):
            raise bad(f"tolerance must be [low, high] with 0 < low <= high, got {tol!r}")


# ------------------------------------------------------------------------------ the evaluator
def claims_of(problem: str,
              record_metrics: RecordMetrics | None = None) -> Callable[[list[dict[str, Any]]], list[ClaimRow]]:
    """The ``Problem.claims`` hook of ``problem``: :func:`evaluate` of its published claims."""
    def claims(records: list[dict[str, Any]]) -> list[ClaimRow]:
        return evaluate(problem, records, record_metrics=record_metrics)
    claims.__doc__ = f"The published claims of {problem} (published/{problem}.json) against ``records``."
    return claims


def evaluate(problem: str, records: list[dict[str, Any]], *, path: str | Path | None = None,
             record_metrics: RecordMetrics | None = None) -> list[ClaimRow]:
    """Every claim of ``problem`` judged on ``records`` (its ok runs), one row per claim and
    place (the file's ``scope``), in the file's order."""
    pub = load(problem, path)
    tracks = collect(records)
    judge = _Judge(pub, record_metrics)
    rows: list[ClaimRow] = []
    for c in pub["claims"]:
        for where, tds in _places(pub, c, tracks):
            rows.append(judge.row(c, where, tds))
    return rows


def _label(td: TrackData) -> str:
    return f"{td.suite} / {td.track}"


def _places(pub: dict[str, Any], c: dict[str, Any],
            tracks: list[TrackData]) -> list[tuple[str | None, list[TrackData]]]:
    """(where, tracks) of each row of claim ``c``; where None: the tracks whose runs it uses."""
    if pub["scope"] == "track":
        return [(_label(td), [td]) for td in tracks]
    if pub["scope"] == "pooled":
        return [(None, tracks)]
    cfg, prefer = c["measure"]["config"], pub.get("prefer_suite")
    cands = sorted((td for td in tracks if td.configs == [cfg]),
                   key=lambda td: (td.track != cfg, not (prefer and td.suite.startswith(prefer))))
    return [(_label(cands[0]), cands[:1])] if cands else [(NA, [])]


@dataclass
class Measured:
    """What a measure gives in one place."""

    value: float | None = None
    count: tuple[int, int] | None = None  #: (cells where it holds, cells judged), for a count
    spread: tuple[float, float, int] | None = None  #: (min, max, number) of the cells' values
    significant: bool | None = None  #: A and B differ significantly (per track), None: not tested
    tracks: tuple[str, ...] = ()  #: the tracks whose runs it used
    detail: str | None = None  #: the numbers compared, for a count over one case


@dataclass(frozen=True)
class _Compared:
    """A ``better``/``not_worse`` statistic of one cell: whether it holds, and the numbers."""

    holds: bool
    detail: str


def _names(x: str | list[str]) -> list[str]:
    return [x] if isinstance(x, str) else list(x)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _ratio(a: Any, b: Any, floor: float | None = None) -> float | None:
    if floor is not None and _finite(b):
        b = max(b, floor)
    if not (_finite(a) and _finite(b)) or b == 0:
        return None
    return float(a) / float(b)


def _statistic(stat: str, a: Any, b: Any = None, floor: float | None = None) -> float | None:
    """A statistic of A's number ``a`` and B's ``b`` (one cell, or the track's means)."""
    if stat == "value":
        return float(a) if _finite(a) else None
    if stat == "faster_pct":
        r = _ratio(b, a, floor)
        return None if r is None else (r - 1.0) * 100.0
    r = _ratio(a, b, floor)
    if r is None:
        return None
    return {"ratio": r, "pct": (r - 1.0) * 100.0, "reduction_pct": (1.0 - r) * 100.0}[stat]


class _Judge:
    """Measures and judges the claims of one file."""

    def __init__(self, pub: dict[str, Any], record_metrics: RecordMetrics | None):
        self.pub = pub
        self.aliases: dict[str, dict[str, str]] = pub.get("policy_aliases") or {}
        self.record_metrics = record_metrics

    def policy(self, name: str, config: str | None) -> str | None:
        """``name``, or the policy an alias stands for on ``config`` (None: none there)."""
        if name not in self.aliases:
            return name
        return self.aliases[name].get(config) if config is not None else None

    # ---------------------------------------------------------------------------- measuring
    def measure(self, m: dict[str, Any], tds: list[TrackData]) -> Measured:
        if m["per"] == "track":
            return self._track(m, tds[0]) if tds else Measured()
        xs: list[Any] = []
        used: list[str] = []
        for td, config, values in self._cases(m, tds):
            x = self._case(m, config, values, td)
            if x is not None:
                xs.append(x)
                if _label(td) not in used:
                    used.append(_label(td))
        if not xs:
            return Measured()
        agg = m.get("aggregate", "mean")
        if agg == "count":
            detail = xs[0].detail if len(xs) == 1 else None  # one case: its numbers too
            return Measured(count=(sum(x.holds for x in xs), len(xs)), detail=detail, tracks=tuple(used))
        value = float(np.mean(xs)) if agg == "mean" else float(statistics.median(xs))
        return Measured(value=value, spread=(min(xs), max(xs), len(xs)), tracks=tuple(used))

    def _track(self, m: dict[str, Any], td: TrackData) -> Measured:
        config = td.configs[0] if len(td.configs) == 1 else None
        pa = self.policy(m["policy"], config)
        if pa is None:
            return Measured()
        a, key = policy_stats(td, pa), m["metric"]
        if m["statistic"] == "value":
            v = _statistic("value", a.mean(key))
            return Measured(value=v, tracks=(_label(td),) if v is not None else ())
        pb = self.policy(m["baseline"], config)
        if pb is None:
            return Measured()
        b = policy_stats(td, pb)
        v = _statistic(m["statistic"], a.mean(key), b.mean(key), m.get("floor"))
        return Measured(value=v, significant=a.differs(b, key), tracks=(_label(td),) if v is not None else ())

    def _cases(self, m: dict[str, Any], tds: list[TrackData]):
        """(track, config, policy -> metrics or None) of each cell the measure judges."""
        only = set(_names(m["workload"])) if "workload" in m else None
        skip = set(_names(m.get("except_workload", [])))
        for td in tds:
            cells = [c for c in td.cells() if (only is None or c[0] in only) and c[0] not in skip]
            if m["per"] == "cell":
                for cell in cells:
                    yield td, cell[1], (lambda p, td=td, cell=cell: self._values(td, cell, p))
            else:
                for w, config in dict.fromkeys((w, c) for (w, c, _) in cells):
                    seeds = [cell for cell in cells if cell[:2] == (w, config)]
                    yield td, config, (lambda p, td=td, seeds=seeds: self._mean_values(td, seeds, p))

    def _values(self, td: TrackData, cell: tuple[str, str, int], policy: str) -> dict[str, Any] | None:
        v = td.values(policy, cell)
        if v is not None and self.record_metrics is not None:
            v = {**v, **self.record_metrics(td.ok[(*cell, policy)])}
        return v

    def _mean_values(self, td: TrackData, seeds: list[tuple[str, str, int]], policy: str) -> dict[str, float] | None:
        """``policy``'s metrics of one (workload, config), each averaged over the seeds that have it."""
        runs = [v for v in (self._values(td, cell, policy) for cell in seeds) if v is not None]
        if not runs:
            return None
        acc: dict[str, list[float]] = {}
        for v in runs:
            for k, x in v.items():
                if isinstance(x, (int, float)):
                    acc.setdefault(k, []).append(float(x))
        return {k: statistics.fmean(xs) for k, xs in acc.items()}

    def _case(self, m: dict[str, Any], config: str, values: Callable[[str], dict[str, Any] | None],
              td: TrackData) -> Any:
        """The statistic of one cell (None: it cannot be judged there)."""
        def of(name: str) -> dict[str, Any] | None:
            p = self.policy(name, config)
            return None if p is None else values(p)

        if any(of(n) is None for n in m.get("needs", [])):
            return None
        a = of(m["policy"])
        if a is None:
            return None
        stat = m["statistic"]
        if stat == "value":
            return _statistic("value", a.get(m["metric"]))
        found = [of(n) for n in _names(m["baseline"])]
        bs = [b for b in found if b is not None]
        if len(bs) < len(found):
            return None
        if stat not in COMPARISONS:
            return _statistic(stat, a.get(m["metric"]), bs[0].get(m["metric"]), m.get("floor"))
        holds, said = True, []
        for key in _names(m["metric"]):
            metric = td.problem.metric(key)
            x = a.get(key)
            for y in (b.get(key) for b in bs):
                if not (_finite(x) and _finite(y)):
                    return None
                if stat == "better":
                    holds = holds and (x > y if metric.higher_is_better else x < y)
                else:
                    holds = holds and (x >= y if metric.higher_is_better else x <= y)
            said.append(f"{metric.label} {x:.4g} vs {'/'.join(f'{b[key]:.4g}' for b in bs)}")
        return _Compared(holds, f"{m['policy']} vs {'/'.join(_names(m['baseline']))}: {'; '.join(said)}")

    # ----------------------------------------------------------------------------- judging
    def row(self, c: dict[str, Any], where: str | None, tds: list[TrackData]) -> ClaimRow:
        m, r = c["measure"], c["rule"]
        got = self.measure(m, tds)
        others = {k: self.measure({**m, **r[k]}, tds) for k in ("below", "above") if isinstance(r.get(k), dict)}
        ours = NA
        if got.count is not None:
            ours = c.get("format", "{} of {}").format(*got.count) + (f" ({got.detail})" if got.detail else "")
        elif got.value is not None:
            ours = _number(c, got.value)
            if m.get("aggregate") == "median":
                ours = "median " + ours
            if c.get("show_range") and got.spread is not None:
                lo, hi, n = got.spread
                ours += f" (range {_number(c, lo)}..{_number(c, hi)}, n={n})"
            for k, o in others.items():
                if o.value is not None:
                    ours += f" vs {_number(c, o.value)} with {_changed(r[k])}"
            if got.significant is False:
                ours += " (not significant)"
        if where is None:
            where = _tracks_text(got.tracks)
        return {"id": c["id"], "claim": c["claim"], "paper": NA if c.get("paper") is None else c["paper"],
                "where": where, "rule": rule_text(c), "ours": ours, "agree": _agrees(c, got, others)}


def _tracks_text(labels: tuple[str, ...]) -> str:
    """``suite / track, track2; suite2 / track3`` (n/a for none)."""
    by: dict[str, list[str]] = {}
    for label in labels:
        suite, _, track = label.partition(" / ")
        by.setdefault(suite, []).append(track)
    return "; ".join(f"{suite} / {', '.join(ts)}" for suite, ts in by.items()) or NA


def _number(c: dict[str, Any], x: float) -> str:
    return c.get("format", "{:.2f}").format(x * c.get("scale", 1))


def _changed(subst: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in subst.items())


def _agrees(c: dict[str, Any], got: Measured, others: dict[str, Measured]) -> bool | None:
    """Whether ``got`` meets the claim's rule (None: not judged)."""
    r = c["rule"]
    kind = r["kind"]
    if kind == "none":
        return None
    if got.count is not None:
        k, n = got.count
        share = r["share"]
        need = round(share[0] / share[1] * n) if isinstance(share, list) else share * n
        return k >= need
    x = got.value
    if x is None:
        return None
    if kind == "gain":
        origin = r.get("origin", 0)
        ok = within_tolerance(x - origin, r["paper"] - origin, r.get("tolerance", GAP_TOLERANCE))
    elif kind == "value":
        if "range" in r:
            ok = r["range"][0] <= x <= r["range"][1]
        elif "within" in r:
            ok = abs(x - r["paper"]) <= r["within"]
        else:
            ok = within_tolerance(x, r["paper"], r.get("tolerance", VALUE_TOLERANCE))
    else:  # bound
        ok = True
        for k, op in BOUNDS.items():
            if k not in r:
                continue
            y = others[k].value if isinstance(r[k], dict) else r[k]
            if y is None:
                return None
            ok = ok and {"<=": x <= y, ">=": x >= y, "<": x < y, ">": x > y}[op]
    return ok and got.significant is not False


def rule_text(c: dict[str, Any]) -> str:
    """The claim's rule in words, its numbers in the claim's format."""
    r, m = c["rule"], c["measure"]
    kind = r["kind"]
    sig = m["per"] == "track" and m["statistic"] != "value"

    def num(x: float) -> str:
        return _number(c, x)

    if kind == "gain":
        origin = r.get("origin", 0)
        t = r.get("tolerance", GAP_TOLERANCE)
        lo, hi = tolerance_range(r["paper"] - origin, t)
        what = "gain above 1x" if origin == 1 else ("gain" if origin else "gap")
        text = f"magnitude: {t[0]:.2g}-{t[1]:.2g}x the paper's {what} ({num(origin + lo)}..{num(origin + hi)})"
    elif kind == "value":
        if "range" in r:
            text = f"value: {num(r['range'][0])}..{num(r['range'][1])}"
        elif "within" in r:
            d = r["within"]
            text = (f"value: within {d * c.get('scale', 1):g} of {num(r['paper'])} "
                    f"({num(r['paper'] - d)}..{num(r['paper'] + d)})")
        else:
            t = r.get("tolerance", VALUE_TOLERANCE)
            lo, hi = tolerance_range(r["paper"], t)
            text = f"value: {t[0]:.2g}-{t[1]:.2g}x the paper's value ({num(lo)}..{num(hi)})"
    elif kind == "bound":
        parts = [f"{op} {num(r[k])}" if not isinstance(r[k], dict) else
                 f"{'above' if k == 'above' else 'below'} the same with {_changed(r[k])}"
                 for k, op in BOUNDS.items() if k in r]
        text = "bound: " + ("median " if m.get("aggregate") == "median" else "") + " and ".join(parts)
    elif kind == "count":
        share = r["share"]
        text = "count: " + (f"at least {share[0]} of {share[1]} cases (the paper's share, scaled to our number of "
                            f"cases and rounded)" if isinstance(share, list) else "in every case" if share >= 1
                            else f"in at least {share:.0%} of the cases")
    else:
        text = NOT_JUDGED
    if r.get("direction_only"):
        text = f"{DIRECTION_ONLY}: " + text.split(": ", 1)[-1]
    if sig and kind != "none":
        text += ", significant"
    if r.get("note"):
        text += f" ({r['note']})"
    return text
