"""Leaderboards from results files: a Markdown table and a self-contained HTML page.

The report is the same for every problem (:mod:`hss_gym.benchmarks.problems`); the problem says
which metrics to show (the first ranks), how to derive them from the runs of one cell (e.g. the
HSS problem normalises latency to Fast-Only), which policies are references, and which published
claims to evaluate. For every (suite, track):

* the **leaderboard**: each policy's mean of every metric over the track's (workload,
  configuration, seed) cells with its 95% confidence interval over seeds of the per-seed mean
  (workloads pooled within a seed: :mod:`.stats`); the leader's followers that the paired test
  does not separate from it, down to the first it does, are marked ``≈``
  (:func:`.stats.tied_with_leader`). References (idealised or clairvoyant policies) are listed
  apart, below the ranking, without the metrics relative to a reference (``Metric.relative_to``).
  Where the problem says what doing nothing is (``Problem.no_harm``), every policy is judged
  against it per workload on each of its keys (HSS: mean, p99 and p99.99 latency), and one
  sentence sets the problem's reference agents against the best simple rule and the best
  baseline (:func:`standing`): a learned agent is worth its cost only if it beats both;
* the primary metric per workload (mean ± CI over that workload's seeds; ``*`` the best, ``≈``
  tied with it by the same rule);
* the problem's raw counts per workload (``Problem.cell_tables``; HSS: migrations per run),
  mean over the seeds, so a policy's cost in page moves is read beside its latency;
* learning curves when runs record them (``curves``; x in the problem's unit, ``curve_axes``),
  and the problem's own figures;
* the papers' claims beside ours (every problem's in one shape, judged by
  :mod:`.claims` from the problem's ``published/<problem>.json``), each with the rule it is
  judged by (the published magnitude within a tolerance, a value, a bound, a count, or the
  direction only when no number was published) and an agree/disagree mark, and a line saying
  how many hold.

Every mark a table uses is explained under it (:func:`summary_legend`, :func:`detail_legend`,
:data:`CLAIMS_LEGEND`).

The HTML page embeds everything (CSS inline, matplotlib figures as base64 PNG).
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

from hss_gym.benchmarks.claims import DIRECTION_ONLY, NOT_JUDGED
from hss_gym.benchmarks.problems import NoHarm, get_problem
from hss_gym.benchmarks.report_model import (PolicyStats, TrackData, collect, finite, leaderboard,
                                             policy_stats, ranked_by_primary, reference_stats)
from hss_gym.benchmarks.results import latest_by_key
from hss_gym.benchmarks.stats import Estimate, tied_with_leader

NA = "n/a"
#: a metric that means nothing for a reference (e.g. Fast-Only's "% of Oracle")
NOT_SHOWN = "—"


def short_name(workload: str) -> str:
    """A workload's display name (a trace file's base name)."""
    return workload.rsplit("/", 1)[-1]


# ---------------------------------------------------------------------------------- formatting
def fmt(v: float | None, digits: int = 2, pct: bool = False) -> str:
    if not finite(v):
        return NA
    return f"{v:.1f}%" if pct else f"{v:.{digits}f}"


def fmt_est(e: Estimate, digits: int = 2, pct: bool = False) -> str:
    """``mean ± half-width`` (just the mean with one seed)."""
    if e.mean is None:
        return NA
    d = 1 if pct else digits
    s = f"{e.mean:.{d}f}" + (f" ± {e.half_width:.{d}f}" if e.half_width is not None else "")
    return s + ("%" if pct else "")


def _columns(td: TrackData) -> list[tuple[str, str]]:
    """The track's (workload, configuration) columns that have runs."""
    cells = td.cells()
    return [(w, c) for w in td.workloads for c in td.configs if any(x[:2] == (w, c) for x in cells)]


def _no_harm(td: TrackData) -> NoHarm | None:
    """The problem's do-no-harm judgement when its do-nothing policy ran in the track."""
    nh = td.problem.no_harm
    return nh if nh is not None and nh.policy in td.policies else None


def harm_score(td: TrackData, policy: str, key: str | None = None) -> tuple[float | None, int | None]:
    """``policy``'s do-no-harm score on ``key`` (one of the problem's
    :class:`~hss_gym.benchmarks.problems.NoHarm` keys; default the first): the geometric mean over
    the track's (workload, configuration) columns of its mean of the key over the seeds / the
    do-nothing policy's over the same seeds, and the number of columns above the tolerance.
    ``(None, None)`` when a column has no pair of runs to compare."""
    nh = td.problem.no_harm
    if nh is None:
        return None, None
    key = nh.keys[0] if key is None else key
    seeds = td.seeds()
    logs, harm = [], 0
    for w, c in _columns(td):
        pairs = [(a[key], b[key]) for s in seeds
                 if (a := td.values(policy, (w, c, s))) is not None and (b := td.values(nh.policy, (w, c, s)))
                 is not None and finite(a.get(key)) and finite(b.get(key))]
        own, ref = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
        if not pairs or own <= 0 or ref <= 0:
            return None, None
        logs.append(math.log(own / ref))
        harm += own / ref > nh.tolerance
    return (math.exp(sum(logs) / len(logs)), harm) if logs else (None, None)


def summary_head(td: TrackData) -> list[str]:
    nh = _no_harm(td)
    extra = [label for _, geo, harm in nh.columns() for label in (geo, harm)] if nh is not None else []
    return ["#", "policy"] + [m.label for m in td.metrics] + extra + ["runs"]


def _standing_judged(td: TrackData) -> NoHarm | None:
    """The do-no-harm judgement :func:`standing` ranks by, when the problem names rules or
    reference agents and its do-nothing policy ran."""
    nh = _no_harm(td)
    return nh if nh is not None and (td.problem.rules or td.problem.reference_agents) else None


def standing(td: TrackData) -> str:
    """One sentence: the best rule (``Problem.rules``) and the best baseline (every other ranked
    policy but the reference agents and the do-nothing one) by the first do-no-harm score, and
    each reference agent's score as a ratio to theirs; "" when :func:`_standing_judged` is None."""
    nh, prob = _standing_judged(td), td.problem
    if nh is None:
        return ""
    geo = {p: harm_score(td, p)[0] for p in td.ranked}

    def best(what: str, group: list[str]) -> tuple[str, tuple[float, str] | None]:
        top = min(((g, p) for p in group if (g := geo[p]) is not None), default=None)
        if top is not None:
            return f"the best {what} {top[1]} {fmt(top[0], 3)}", top
        return (f"no {what} ran" if not group else f"no {what} has a score (a workload without its runs)"), None

    rule_text, rule = best("rule", [p for p in td.ranked if p in prob.rules])
    base_text, base = best("baseline", [p for p in td.ranked if p not in prob.rules
                                        and p not in prob.reference_agents and p != nh.policy])
    agents = []
    for p in (a for a in prob.reference_agents if a in td.ranked):
        g = geo[p]
        vs = [f"{g / ref[0]:.2f}x the best {what}" for what, ref in (("rule", rule), ("baseline", base))
              if g is not None and ref is not None and ref[0] > 0]
        agents.append(f"{p} {fmt(g, 3)}" + (f" ({', '.join(vs)})" if vs else ""))
    head = f"Against doing nothing ({nh.columns()[0][1]}, lower is better): "
    return head + ", ".join(([rule_text] if prob.rules else []) + [base_text]) \
        + (f"; {', '.join(agents)}" if agents else "") + "."


def tied(ordered: list[PolicyStats], key: str) -> set[str]:
    """The policies of ``ordered`` (ranked, best first) tied with the first on ``key``: its
    followers the paired test does not separate from it, down to the first it does
    (:func:`.stats.tied_with_leader`)."""
    if not ordered or ordered[0].mean(key) is None:
        return set()
    best, rest = ordered[0], ordered[1:]
    flags = tied_with_leader([None if s.mean(key) is None else s.differs(best, key) for s in rest])
    return {s.policy for s, t in zip(rest, flags) if t}


def summary_rows(td: TrackData) -> list[list[str]]:
    """The ranking (``≈`` after the rank of a policy tied with #1: :func:`tied`), then the
    references (rank ``ref``; a metric relative to a reference is ``—`` for them)."""
    key = td.problem.primary.key
    board = leaderboard(td)
    ties = tied(board, key)
    nh = _no_harm(td)
    rows = []

    def row(rank: str, s: PolicyStats) -> list[str]:
        runs = f"{s.runs}" + (f" ({s.failed} failed)" if s.failed else "")
        ref = s.policy in td.problem.references
        extra = []
        if nh is not None:
            for k in nh.keys:
                geo, harm = harm_score(td, s.policy, k)
                extra += [fmt(geo, 3), NA if harm is None else str(harm)]
        return [rank, s.policy] + [NOT_SHOWN if ref and m.relative_to else fmt_est(s.estimate(m.key), m.digits, m.pct)
                                   for m in td.metrics] + extra + [runs]

    for i, s in enumerate(board, 1):
        rank = "-" if s.mean(key) is None else str(i)
        rows.append(row(rank + (" ≈" if s.policy in ties else ""), s))
    rows += [row("ref", s) for s in reference_stats(td)]
    return rows


def detail_table(td: TrackData) -> tuple[list[str], list[list[str]]]:
    """The primary metric per policy (rows) and workload/config (columns): mean ± CI over that
    column's seeds, ``*`` the best ranked policy of the column, ``≈`` tied with it (:func:`tied`)."""
    m = td.problem.primary
    cells = td.cells()
    cols = _columns(td)
    head = ["policy"] + _column_labels(td, cols)
    order = _row_order(td)
    grid: dict[tuple[str, tuple[str, str]], PolicyStats] = {}
    for w, c in cols:
        cc = [x for x in cells if x[:2] == (w, c)]
        for p in order:
            grid[(p, (w, c))] = policy_stats(td, p, cc)
    marks: dict[tuple[str, tuple[str, str]], str] = {}
    for col in cols:
        ranked = ranked_by_primary(td, [grid[(p, col)] for p in td.ranked])
        if ranked and ranked[0].mean(m.key) is not None:
            marks[(ranked[0].policy, col)] = " *"
            for p in tied(ranked, m.key):
                marks[(p, col)] = " ≈"
    rows = []
    for p in order:
        row = [p + (" (ref)" if p in td.references else "")]
        for col in cols:
            s = grid[(p, col)]
            if s.mean(m.key) is None:
                row.append("failed" if s.failed else NA)
            else:
                row.append(fmt_est(s.estimate(m.key), m.digits, m.pct) + marks.get((p, col), ""))
        rows.append(row)
    return head, rows


def _column_labels(td: TrackData, cols: list[tuple[str, str]]) -> list[str]:
    """The per-workload tables' column heads: the workload, and its configuration when a track has several."""
    multi = len(td.configs) > 1
    return [short_name(w) + (f" / {c}" if multi else "") for w, c in cols]


def _row_order(td: TrackData) -> list[str]:
    """The per-workload tables' rows: the ranking, then the references."""
    return [s.policy for s in leaderboard(td)] + td.references


def cell_table(td: TrackData, key: str) -> tuple[list[str], list[list[str]]]:
    """The raw run metric ``key`` (``Problem.cell_tables``) per policy (rows, as in
    :func:`detail_table`) and workload/config (columns): its mean over the column's seeds that
    recorded it; ``failed`` when none did and a run failed, n/a when none did."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for (w, c, _, p), r in td.ok.items():
        if finite(v := (r.get("metrics") or {}).get(key)):
            values.setdefault((w, c, p), []).append(float(v))
    failed = {(w, c, p) for (w, c, _, p) in td.failed}
    cols = _columns(td)
    rows = []
    for p in _row_order(td):
        row = [p + (" (ref)" if p in td.references else "")]
        for w, c in cols:
            xs = values.get((w, c, p))
            row.append(f"{sum(xs) / len(xs):,.0f}" if xs else "failed" if (w, c, p) in failed else NA)
        rows.append(row)
    return ["policy"] + _column_labels(td, cols), rows


def cell_legend(td: TrackData, key: str, meaning: str) -> list[tuple[str, str]]:
    """(mark, meaning) of the values and marks of :func:`cell_table`."""
    n = len(td.seeds())
    return [(key, f"{meaning}; the mean over the column's {n} seed{'s' if n != 1 else ''}, rounded"),
            ("(ref)", "a reference, not ranked"),
            ("failed", "no run of this policy in the column recorded it, and one failed"),
            ("n/a", "no run of this policy in the column recorded it")]


def curve_table(td: TrackData, points: int = 8) -> tuple[list[str], list[list[str]]] | None:
    """The learning curves of the track's runs (mean over cells per window), sampled at up to
    ``points`` windows; None when no run recorded one."""
    curves = _mean_curves(td)
    if not curves:
        return None
    name, by_policy = next(iter(curves.items()))
    n = max(len(v) for v in by_policy.values())
    idx = sorted({round(i * (n - 1) / max(1, points - 1)) for i in range(points)}) if n > 1 else [0]
    xs = curve_x(td, name, n)
    head = [f"{name}; columns: {curve_axis_label(td, name)}"] + [_fmt_x(xs[i]) for i in idx]
    rows = [[p] + [fmt(v[i]) if i < len(v) else NA for i in idx] for p, v in by_policy.items()]
    return head, rows


def curve_x(td: TrackData, name: str, n: int) -> list[float]:
    """The x of the ``n`` points of curve ``name``, in the problem's unit (``curve_axes``)."""
    _, start, step = td.problem.curve_axis(name)
    return [start + i * step for i in range(n)]


def curve_axis_label(td: TrackData, name: str) -> str:
    return td.problem.curve_axis(name)[0]


def _fmt_x(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"


def _mean_curves(td: TrackData) -> dict[str, dict[str, list[float]]]:
    """curve name -> policy -> mean curve over the track's ok runs (element-wise, truncated to
    the shortest run)."""
    out: dict[str, dict[str, list[float]]] = {}
    for p in [s.policy for s in leaderboard(td)] + td.references:
        runs = [r.get("curves") or {} for (w, c, s, q), r in td.ok.items() if q == p]
        for name in dict.fromkeys(k for r in runs for k in r):
            cs = [r[name] for r in runs if r.get(name)]
            if not cs:
                continue
            n = min(len(c) for c in cs)
            out.setdefault(name, {})[p] = [sum(c[i] for c in cs) / len(cs) for i in range(n)]
    return out


_MD_LITERAL = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "<": "&lt;", "\r": " ",
                             "\n": " "})


def md_escape(text: str) -> str:
    """``text`` as literal Markdown on one line. Names come from results files (a policy or
    workload name is whatever a submission wrote): a ``|`` or a line break would cut a table row,
    a backtick open a code span, ``<`` start raw HTML; each is escaped (a backslash too, so an
    escape cannot be undone)."""
    return text.translate(_MD_LITERAL)


def md_table(head: list[str], rows: list[list[str]]) -> str:
    align = ["---" if i < 2 else "---:" for i in range(len(head))]
    lines = ["| " + " | ".join(map(md_escape, head)) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(map(md_escape, r)) + " |" for r in rows]
    return "\n".join(lines)


def provenance_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Versions, revisions, hosts and counts of the runs a report shows (latest per job)."""
    records = list(latest_by_key(records).values())
    prov = [r.get("provenance", {}) for r in records]
    return {
        "runs": len(records),
        "ok": sum(r.get("status") == "ok" for r in records),
        "versions": sorted({str(p.get("hss_gym_version")) for p in prov}),
        "git": sorted({str(p.get("git_revision")) for p in prov}),
        "hosts": sorted({str(p.get("host")) for p in prov}),
        "finished": max((str(p.get("finished_at", "")) for p in prov), default=""),
    }


def evaluate_claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The published claims of every problem in ``records``, evaluated on its ok runs: the rows
    of :func:`hss_gym.benchmarks.claims.evaluate` (one shape for every problem), each with its
    ``problem``."""
    ok = [r for r in latest_by_key(records).values() if r.get("status") == "ok"]
    out = []
    for name in dict.fromkeys(r.get("problem") or "hss" for r in ok):
        prob = get_problem(name)
        if prob.claims is not None:
            out += [{**c, "problem": prob.name} for c in prob.claims([r for r in ok if (r.get("problem") or "hss") == name])]
    return out


AGREE = {True: "agrees", False: "disagrees", None: "n/a"}


def claims_rows(claims: list[dict[str, Any]]) -> list[list[str]]:
    """One row per claim: the claim, the paper's number, ours, the rule it is judged by (a
    magnitude within a tolerance, a value, a bound, a count, or "direction only ..."), the
    verdict and where (suite / track)."""
    return [[c["claim"], c["paper"], c["ours"], c["rule"], AGREE[c["agree"]], c["where"]] for c in claims]


def direction_only(c: dict[str, Any]) -> bool:
    return c["rule"].startswith(DIRECTION_ONLY)


def claims_verdict(claims: list[dict[str, Any]]) -> str:
    """How many of the claims the results can judge agree, split by what they were judged on."""
    judged = [c for c in claims if c["agree"] is not None]
    held = sum(bool(c["agree"]) for c in judged)
    mag = [c for c in judged if not direction_only(c)]
    dirs = [c for c in judged if direction_only(c)]
    by_rule = sum(c["agree"] is None and c["rule"].startswith(NOT_JUDGED) for c in claims)
    missing = len(claims) - len(judged) - by_rule
    return (f"Reproduced: {held} of {len(judged)} claims that these results can judge agree, each by the rule "
            f"in its row: {sum(bool(c['agree']) for c in mag)} of {len(mag)} judged on the published number "
            f"(a magnitude within its tolerance, a value, a bound or a count), "
            f"{sum(bool(c['agree']) for c in dirs)} of {len(dirs)} on direction only"
            + (f"; {missing} not judged (their runs are missing)" if missing else "")
            + (f"; {by_rule} not judged by their rule (shown for information)" if by_rule else "") + ".")


CLAIMS_HEAD = ["claim", "paper", "hss-gym", "judged on", "agreement", "where"]

CLAIMS_LEGEND = [
    ("judged on", "the rule a claim is judged by (every problem's claims are data, judged by one evaluator: "
                  "hss_gym.benchmarks.claims): a published gap (\"A beats B by x%\", or a ratio's gain above "
                  "1x) agrees when ours lies within the stated tolerance of it (e.g. 0.5-2x: half to double the "
                  "paper's gap), and, when the two policies' means are compared, the difference is significant; "
                  "a published value within its stated factor, distance or range; a bound as stated; a count of "
                  "the cases where a policy is better, against the paper's share; \"direction only\" when the "
                  "paper published no magnitude (only a direction): then any size with the paper's sign agrees"),
    ("agrees / disagrees", "ours meets / does not meet the row's rule"),
    ("n/a", "not judged: the runs it needs are missing (or the rule is \"not judged\")"),
    ("(not significant)", "the two policies' difference is not significant (95%, paired by seed): a gap "
                          "claim then disagrees, whatever its sign"),
]


def _intro(td: TrackData) -> str:
    return td.problem.description.strip()


def ci_phrase(td: TrackData) -> str:
    """What a ``±`` of the leaderboard pools."""
    n, w, c = len(td.seeds()), len(td.workloads), len(td.configs)
    if n < 2:
        return "none: one seed (run 3 or more seeds for intervals and ties)"
    pooled = f"{w} workload{'s' if w != 1 else ''}" + (f" and {c} configurations" if c > 1 else "")
    return (f"95% confidence interval (Student's t) over the {n} seeds of the per-seed mean over the "
            f"track's {pooled}: the mean pools workloads and seeds; the interval is the seed-to-seed "
            "spread only (the workloads are a fixed set, not a sample; their spread is in the "
            "per-workload table)")


def summary_legend(td: TrackData) -> list[tuple[str, str]]:
    """(mark, meaning) of every mark the leaderboard table can show."""
    m = td.problem.primary
    n = len(td.seeds())
    out = [("#", f"rank by {m.label} ({'higher' if m.higher_is_better else 'lower'} is better), best first"),
           ("±", ci_phrase(td))]
    if n > 1:
        out.append(("≈", "after a rank: tied with #1. The paired t-test over seeds (95%) does not separate "
                         "this policy from #1, nor any policy ranked between them; the ties end at the first "
                         "policy the test separates, so no policy below an unmarked one is marked"))
    else:
        out.append(("≈", "not shown: one seed, no test"))
    out += [("-", "in the rank column: no value of the ranked metric (its runs failed or the run it is "
                  "normalised to is missing)"),
            ("n/a", "no value (runs failed or missing, or the reference it is normalised to did not run)"),
            ("(k failed)", "in the runs column: k runs of this policy failed (see Failed runs)")]
    if td.problem.references:
        out.append(("ref", f"a reference ({', '.join(td.problem.references)}): idealised or clairvoyant, "
                           "not ranked"))
    for x in td.metrics:
        if x.relative_to:
            ref, key = x.relative_to
            label = next((y.label for y in td.problem.metrics if y.key == key), key)
            out.append((x.label, f"100 x {ref}'s mean of {label} / the policy's, both over the same runs of "
                                 f"the track (a ratio of the means: it follows a ranking on {label})"))
            out.append((NOT_SHOWN, f"in the references' rows: {x.label} means nothing for a reference "
                                   f"({ref} is 100% by definition; an idealised device above it is no score)"))
    nh = _no_harm(td)
    if nh is not None:
        n_cols = len(_columns(td))
        key0, geo0, _ = nh.columns()[0]
        for key, geo, harm in nh.columns():
            out += [(geo, f"geometric mean over the track's {n_cols} workloads of the policy's {key} (mean "
                          f"over seeds) / {nh.policy}'s over the same seeds: below 1 is better than doing "
                          "nothing" if key == key0 else f"as {geo0}, on {key} instead of {key0}"),
                    (harm, f"the workloads where the {geo} ratio is above {nh.tolerance:g} (more than "
                           f"{100 * (nh.tolerance - 1):.0f}% worse than {nh.policy} on {key})")]
    nh = _standing_judged(td)
    if nh is not None:
        prob = td.problem
        out += [("rule", "in the sentence under the table: a simple policy built from the reference agents' "
                         f"parts, nothing learned ({', '.join(prob.rules) or 'none in this problem'})"),
                ("baseline", "in the sentence under the table: a ranked policy that is not a rule, a reference "
                             f"agent ({', '.join(prob.reference_agents) or 'none'}) nor {nh.policy}")]
    return out


def detail_legend(td: TrackData) -> list[tuple[str, str]]:
    """(mark, meaning) of every mark the per-workload table can show."""
    n = len(td.seeds())
    return [("±", f"95% confidence interval over the {n} seeds of that workload alone" if n > 1
             else "none: one seed"),
            ("*", "the best ranked policy of the column (references are not marked)"),
            ("≈", "tied with the column's * by the ranking's rule (paired by seed; the ties end at the first "
                  "policy the test separates)" if n > 1 else "not shown: one seed"),
            ("(ref)", "a reference, not ranked"),
            ("failed", "every run of this policy in the column failed"),
            ("n/a", "no value (runs missing, or the reference it is normalised to did not run)")]


def curve_legend(td: TrackData) -> str:
    curves = _mean_curves(td)
    if not curves:
        return ""
    name = next(iter(curves))
    return (f"Columns: {curve_axis_label(td, name)} (sampled); values: {name}, mean over the track's "
            "workloads and seeds at that point (truncated to the shortest run).")


def md_legend(items: list[tuple[str, str]], head: str = "Marks") -> str:
    return f"{head}: " + "; ".join(f"`{k}` {v}" for k, v in items) + "."


def html_legend(items: list[tuple[str, str]], head: str = "Marks") -> str:
    e = html.escape
    return (f'<p class="legend">{e(head)}:</p><ul class="legend">'
            + "".join(f"<li><b>{e(k)}</b> {e(v)}</li>" for k, v in items) + "</ul>")


def markdown_report(records: list[dict[str, Any]], title: str = "hss-gym leaderboard",
                    command: str | None = None) -> str:
    """The Markdown leaderboard of ``records``."""
    tracks = collect(records)
    pv = provenance_summary(records)
    out = [f"# {title}", ""]
    out.append(f"hss-gym {', '.join(pv['versions'])}; git {', '.join(pv['git'])}; {pv['ok']} runs ok "
               f"of {pv['runs']}; last finished {pv['finished']}.")
    if command:
        out += ["", f"Generated by `{command}`."]
    for td in tracks:
        wl = ", ".join(short_name(w) for w in td.workloads)
        out += ["", f"## {md_escape(f'{td.suite} / {td.track}')}", "",
                md_escape(f"{td.problem.title}: configurations {', '.join(td.configs)}; "
                          f"{len(td.workloads)} workloads ({wl}); seeds {', '.join(map(str, td.seeds()))}."),
                "", _intro(td), "", md_table(summary_head(td), summary_rows(td)), ""]
        if line := standing(td):
            out += [md_escape(line), ""]
        out += [md_legend(summary_legend(td)), ""]
        head, rows = detail_table(td)
        out += [f"<details><summary>{td.problem.primary.label} per workload</summary>", "",
                md_table(head, rows), "", md_legend(detail_legend(td)), "", "</details>"]
        for key, meaning in td.problem.cell_tables:
            out += ["", f"<details><summary>{key} per run, per workload</summary>", "",
                    md_table(*cell_table(td, key)), "", md_legend(cell_legend(td, key, meaning)), "", "</details>"]
        ct = curve_table(td)
        if ct is not None:
            out += ["", "<details><summary>Learning curves</summary>", "", md_table(*ct), "", curve_legend(td), "",
                    "</details>"]
    if rows := training_rows(records):
        out += ["", "## Declared training sets", "", md_table(TRAINING_HEAD, rows)]
    claims = evaluate_claims(records)
    if claims:
        out += ["", "## Published numbers beside ours", "", md_table(CLAIMS_HEAD, claims_rows(claims)), "",
                md_legend(CLAIMS_LEGEND, "Columns and marks"), "", claims_verdict(claims)]
    fails = [r for td in tracks for k, r in td.failed.items() if k not in td.ok]
    if fails:
        out += ["", "## Failed runs", ""] + [f"* {md_escape(e)}" for e in failure_lines(fails)]
    return "\n".join(out) + "\n"


TRAINING_HEAD = ["policy", "trained on", "runs"]


def training_rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """One row per (policy, declared training set) of the successful runs, when any run declares
    one (``trained_on``; benchmarks/SUBMISSION.md): what a learned policy saw before it was
    evaluated. A policy none of whose runs declares one is "not declared"."""
    ok = [r for r in records if r.get("status") == "ok"]
    if not any(r.get("trained_on") for r in ok):
        return []
    count: dict[tuple[str, str], int] = {}
    for r in ok:
        key = (str(r.get("policy")), str(r.get("trained_on") or "not declared"))
        count[key] = count.get(key, 0) + 1
    return [[p, t, str(n)] for (p, t), n in sorted(count.items())]


def failure_lines(fails: list[dict[str, Any]]) -> list[str]:
    """One line per failing (policy, workload): how many runs and the first error."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in fails:
        by.setdefault((r["policy"], r["workload"]), []).append(r)
    return [f"{p} on {short_name(w)} / {rs[0]['config']}: {len(rs)} run(s) failed: {rs[0].get('error')}"
            for (p, w), rs in by.items()]


def print_table(records: list[dict[str, Any]]) -> str:
    """The summary tables only (what ``hss-gym bench`` prints at the end)."""
    out = []
    for td in collect(records):
        out += [f"{td.suite} / {td.track} ({', '.join(td.configs)}, {len(td.workloads)} workloads, "
                f"seeds {', '.join(map(str, td.seeds()))})", md_table(summary_head(td), summary_rows(td))]
        out += [line, ""] if (line := standing(td)) else [""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------- figures
def png(fig: Any) -> str:
    """A matplotlib figure as a data URI (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def figures(tracks: list[TrackData]) -> list[tuple[tuple[str, str], str, str]]:
    """((suite, track), caption, data URI) of every figure; empty without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out: list[tuple[tuple[str, str], str, str]] = []
    for td in tracks:
        m = td.problem.primary
        stats = [s for s in leaderboard(td) + reference_stats(td) if s.mean(m.key) is not None]
        if not stats:
            continue
        key = (td.suite, td.track)
        # the primary metric with its 95% CI, linear scale (a reference at 1.0 stays visible)
        fig, ax = plt.subplots(figsize=(7, 0.32 * len(stats) + 1.2))
        ys = range(len(stats))
        ests = [s.estimate(m.key) for s in stats]
        refs = [s.policy in td.references for s in stats]
        ax.barh(list(ys), [e.mean for e in ests], xerr=[e.half_width or 0.0 for e in ests], capsize=2,
                color=["#bbbbbb" if r else "#4477aa" for r in refs], hatch=None)
        ax.set_yticks(list(ys), [s.policy + (" (ref)" if r else "") for s, r in zip(stats, refs)])
        ax.invert_yaxis()
        ax.set_xlabel(m.label + (" (higher is better)" if m.higher_is_better else " (lower is better)"))
        ax.set_ylabel("policy")
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{td.suite} / {td.track}", fontsize=10)
        out.append((key, f"{td.track}: {m.label}, mean over the track's workloads and seeds; error bars: "
                    f"{ci_phrase(td)}; references in grey", png(fig)))
        # learning curves: the five best policies and the references
        curves = _mean_curves(td)
        if curves:
            name, by_policy = next(iter(curves.items()))
            show = [s.policy for s in leaderboard(td)][:5] + td.references
            fig, ax = plt.subplots(figsize=(7, 3.2))
            for i, p in enumerate(q for q in show if q in by_policy):
                ref = p in td.references
                j = td.references.index(p) if ref else i
                ax.plot(curve_x(td, name, len(by_policy[p])), by_policy[p], label=p + (" (ref)" if ref else ""),
                        lw=1.1 if ref else 1.6,
                        ls=[":", (0, (2, 2))][j % 2] if ref else ["-", "--", "-.", (0, (5, 1)), (0, (1, 1))][i % 5],
                        color=["0.15", "0.55"][j % 2] if ref else plt.get_cmap("tab10")(i))
            ax.set_xlabel(curve_axis_label(td, name))
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
            ax.set_title(f"{td.suite} / {td.track}: learning curves (mean over workloads and seeds)", fontsize=10)
            out.append((key, f"{td.track}: learning curves ({name} against {curve_axis_label(td, name)}; "
                        "mean over workloads and seeds; top 5 + references)", png(fig)))
    for prob in dict.fromkeys(td.problem for td in tracks):
        if prob.figures is not None:
            out += prob.figures([td for td in tracks if td.problem is prob])
    return out


# ---------------------------------------------------------------------------------------- HTML
CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;
color:#222;padding:0 1em}table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.86em}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:right}th{background:#f0f0f0}
td:nth-child(2),th:nth-child(2),td:first-child{text-align:left}figure{margin:1em 0}
img{max-width:100%}figcaption{font-size:.85em;color:#555}code{background:#f4f4f4;padding:0 .2em}
.na{color:#999}details{margin-bottom:1em}
p.legend{font-size:.82em;color:#444;margin:.2em 0}ul.legend{font-size:.82em;color:#444;margin:.2em 0 1em}"""


def html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f'<td class="na">{html.escape(v)}</td>' if v in (NA, "failed") else f"<td>{html.escape(v)}</td>"
        for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def html_report(records: list[dict[str, Any]], title: str = "hss-gym leaderboard",
                command: str | None = None, with_figures: bool = True) -> str:
    """A self-contained HTML page: no external scripts, styles, fonts or images."""
    tracks = collect(records)
    pv = provenance_summary(records)
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{e(title)}</title><style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>",
             f"<p>hss-gym {e(', '.join(pv['versions']))}; git {e(', '.join(pv['git']))}; "
             f"{pv['ok']} runs ok of {pv['runs']}; hosts {e(', '.join(pv['hosts']))}; "
             f"last finished {e(pv['finished'])}.</p>"]
    if command:
        parts.append(f"<p>Generated by <code>{e(command)}</code>.</p>")
    figs = figures(tracks) if with_figures else []
    if with_figures and not figs and tracks:
        parts.append("<p><em>Figures need matplotlib (pip install 'hss-gym[agents]').</em></p>")
    for td in tracks:
        parts.append(f"<h2>{e(td.suite)} / {e(td.track)}</h2>")
        parts.append(f"<p>{e(td.problem.title)}: configurations {e(', '.join(td.configs))}; "
                     f"{len(td.workloads)} workloads: {e(', '.join(short_name(w) for w in td.workloads))}; "
                     f"seeds {e(', '.join(map(str, td.seeds())))}.</p><p>{e(_intro(td))}</p>")
        parts.append(html_table(summary_head(td), summary_rows(td)))
        if line := standing(td):
            parts.append(f"<p>{e(line)}</p>")
        parts.append(html_legend(summary_legend(td)))
        head, rows = detail_table(td)
        parts.append(f"<details><summary>{e(td.problem.primary.label)} per workload</summary>"
                     + html_table(head, rows) + html_legend(detail_legend(td)) + "</details>")
        for key, meaning in td.problem.cell_tables:
            parts.append(f"<details><summary>{e(key)} per run, per workload</summary>"
                         + html_table(*cell_table(td, key)) + html_legend(cell_legend(td, key, meaning)) + "</details>")
        ct = curve_table(td)
        if ct is not None:
            parts.append("<details><summary>Learning curves</summary>" + html_table(*ct)
                         + f"<p>{e(curve_legend(td))}</p></details>")
        for key, cap, uri in figs:
            if key == (td.suite, td.track):
                parts.append(f'<figure><img alt="{e(cap)}" src="{uri}"><figcaption>{e(cap)}</figcaption></figure>')
    if rows := training_rows(records):
        parts.append("<h2>Declared training sets</h2>" + html_table(TRAINING_HEAD, rows))
    claims = evaluate_claims(records)
    if claims:
        parts.append("<h2>Published numbers beside ours</h2>")
        parts.append(html_table(CLAIMS_HEAD, claims_rows(claims)))
        parts.append(html_legend(CLAIMS_LEGEND, "Columns and marks"))
        parts.append(f"<p>{e(claims_verdict(claims))}</p>")
    fails = [r for td in tracks for k, r in td.failed.items() if k not in td.ok]
    if fails:
        parts.append("<h2>Failed runs</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in failure_lines(fails)) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_reports(records: list[dict[str, Any]], out_dir: str | Any, title: str = "hss-gym leaderboard",
                  command: str | None = None, with_figures: bool = True) -> tuple[Any, Any]:
    """Write ``report.md`` and ``report.html`` into ``out_dir``; return their paths."""
    from pathlib import Path
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / "report.md", out / "report.html"
    md.write_text(markdown_report(records, title, command))
    page.write_text(html_report(records, title, command, with_figures))
    return md, page
