"""Leaderboards from results files: a Markdown table and a self-contained HTML page.

The report is the same for every problem (:mod:`hss_gym.benchmarks.problems`); the problem says
which metrics to show (the first ranks), how to derive them from the runs of one cell (e.g. the
HSS problem normalises latency to Fast-Only), which policies are references, and which published
claims to evaluate. For every (suite, track):

* the **leaderboard**: each policy's mean of every metric over the track's (workload,
  configuration, seed) cells with its 95% confidence interval over seeds (:mod:`.stats`); a
  ranked policy whose primary metric does not differ significantly from the leader's (paired by
  seed) is marked ``≈``. References (idealised or clairvoyant policies) are listed apart, below
  the ranking;
* the primary metric per workload (mean ± CI over seeds; ``*`` the best, ``≈`` not significantly
  different from it);
* learning curves when runs record them (``curves``), and the problem's own figures;
* the papers' claims beside ours with an agree/disagree mark, and a line saying how many hold.

The HTML page embeds everything (CSS inline, matplotlib figures as base64 PNG).
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from hss_gym.benchmarks.problems import Problem, get_problem
from hss_gym.benchmarks.results import latest_by_key
from hss_gym.benchmarks.stats import Estimate, mean_ci, paired_significant

NA = "n/a"
Cell = tuple[str, str, int]  # (workload, config, seed)


# --------------------------------------------------------------------------------------- model
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


def short_name(workload: str) -> str:
    """A workload's display name (a trace file's base name)."""
    return workload.rsplit("/", 1)[-1]


@dataclass
class PolicyStats:
    """One policy's numbers over a set of a track's cells."""

    policy: str
    runs: int
    failed: int
    error: str | None
    #: metric -> seed -> mean over that seed's cells
    per_seed: dict[str, dict[int, float]]

    def estimate(self, key: str) -> Estimate:
        return mean_ci(list(self.per_seed.get(key, {}).values()))

    def mean(self, key: str) -> float | None:
        return self.estimate(key).mean

    def differs(self, other: "PolicyStats", key: str) -> bool | None:
        """Whether this policy's ``key`` differs significantly from ``other``'s (paired by seed)."""
        return paired_significant(self.per_seed.get(key, {}), other.per_seed.get(key, {}))


def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def policy_stats(td: TrackData, policy: str, cells: list[Cell] | None = None) -> PolicyStats:
    """``policy``'s numbers over ``cells`` (default: all of the track's)."""
    cells = td.cells() if cells is None else cells
    by_seed: dict[str, dict[int, list[float]]] = {}
    runs = 0
    for c in cells:
        v = td.values(policy, c)
        if v is None:
            continue
        runs += 1
        for k, x in v.items():
            if _finite(x):
                by_seed.setdefault(k, {}).setdefault(c[2], []).append(float(x))
    fails = [td.failed[(*c, policy)] for c in cells if (*c, policy) in td.failed and (*c, policy) not in td.ok]
    per_seed = {k: {s: sum(xs) / len(xs) for s, xs in d.items()} for k, d in by_seed.items()}
    return PolicyStats(policy, runs, len(fails), fails[0].get("error") if fails else None, per_seed)


def _order(td: TrackData, stats: list[PolicyStats]) -> list[PolicyStats]:
    m = td.problem.primary
    sign = -1.0 if m.higher_is_better else 1.0
    return sorted(stats, key=lambda s: (s.mean(m.key) is None, sign * (s.mean(m.key) or 0.0)))


def leaderboard(td: TrackData) -> list[PolicyStats]:
    """The ranked policies' stats, best primary metric first (n/a last); references excluded."""
    return _order(td, [policy_stats(td, p) for p in td.ranked])


def reference_stats(td: TrackData) -> list[PolicyStats]:
    return [policy_stats(td, p) for p in td.references]


# ---------------------------------------------------------------------------------- formatting
def fmt(v: float | None, digits: int = 2, pct: bool = False) -> str:
    if not _finite(v):
        return NA
    return f"{v:.1f}%" if pct else f"{v:.{digits}f}"


def fmt_est(e: Estimate, digits: int = 2, pct: bool = False) -> str:
    """``mean ± half-width`` (just the mean with one seed)."""
    if e.mean is None:
        return NA
    d = 1 if pct else digits
    s = f"{e.mean:.{d}f}" + (f" ± {e.half_width:.{d}f}" if e.half_width is not None else "")
    return s + ("%" if pct else "")


def summary_head(td: TrackData) -> list[str]:
    return ["#", "policy"] + [m.label for m in td.problem.metrics] + ["runs"]


def summary_rows(td: TrackData) -> list[list[str]]:
    """The ranking (with ``≈`` for a policy not significantly different from #1), then the
    references (rank ``ref``)."""
    key = td.problem.primary.key
    board = leaderboard(td)
    best = board[0] if board and board[0].mean(key) is not None else None
    rows = []

    def row(rank: str, s: PolicyStats) -> list[str]:
        runs = f"{s.runs}" + (f" ({s.failed} failed)" if s.failed else "")
        return [rank, s.policy] + [fmt_est(s.estimate(m.key), m.digits, m.pct) for m in td.problem.metrics] + [runs]

    for i, s in enumerate(board, 1):
        rank = "-" if s.mean(key) is None else str(i)
        if best is not None and s is not best and s.mean(key) is not None and s.differs(best, key) is False:
            rank += " ≈"
        rows.append(row(rank, s))
    rows += [row("ref", s) for s in reference_stats(td)]
    return rows


def detail_table(td: TrackData) -> tuple[list[str], list[list[str]]]:
    """The primary metric per policy (rows) and workload/config (columns): mean ± CI over seeds,
    ``*`` the best ranked policy of the column, ``≈`` not significantly different from it."""
    m = td.problem.primary
    cells = td.cells()
    cols = [(w, c) for w in td.workloads for c in td.configs if any(x[:2] == (w, c) for x in cells)]
    multi = len(td.configs) > 1
    head = ["policy"] + [short_name(w) + (f" / {c}" if multi else "") for w, c in cols]
    order = [s.policy for s in leaderboard(td)] + td.references
    grid: dict[tuple[str, tuple[str, str]], PolicyStats] = {}
    for w, c in cols:
        cc = [x for x in cells if x[:2] == (w, c)]
        for p in order:
            grid[(p, (w, c))] = policy_stats(td, p, cc)
    marks: dict[tuple[str, tuple[str, str]], str] = {}
    for col in cols:
        ranked = _order(td, [grid[(p, col)] for p in td.ranked])
        if ranked and ranked[0].mean(m.key) is not None:
            marks[(ranked[0].policy, col)] = " *"
            for s in ranked[1:]:
                if s.mean(m.key) is not None and s.differs(ranked[0], m.key) is False:
                    marks[(s.policy, col)] = " ≈"
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


def curve_table(td: TrackData, points: int = 8) -> tuple[list[str], list[list[str]]] | None:
    """The learning curves of the track's runs (mean over cells per window), sampled at up to
    ``points`` windows; None when no run recorded one."""
    curves = _mean_curves(td)
    if not curves:
        return None
    name, by_policy = next(iter(curves.items()))
    n = max(len(v) for v in by_policy.values())
    idx = sorted({round(i * (n - 1) / max(1, points - 1)) for i in range(points)}) if n > 1 else [0]
    head = [f"policy ({name}, window)"] + [str(i + 1) for i in idx]
    rows = [[p] + [fmt(v[i]) if i < len(v) else NA for i in idx] for p, v in by_policy.items()]
    return head, rows


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


def md_table(head: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")
    align = ["---" if i < 2 else "---:" for i in range(len(head))]
    lines = ["| " + " | ".join(map(esc, head)) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
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
    """The published claims of every problem in ``records``, evaluated on its ok runs."""
    ok = [r for r in latest_by_key(records).values() if r.get("status") == "ok"]
    out = []
    for name in dict.fromkeys(r.get("problem") or "hss" for r in ok):
        prob = get_problem(name)
        if prob.claims is not None:
            out += [{**c, "problem": prob.name} for c in prob.claims([r for r in ok if (r.get("problem") or "hss") == name])]
    return out


AGREE = {True: "agrees", False: "disagrees", None: "n/a"}


def claims_rows(claims: list[dict[str, Any]]) -> list[list[str]]:
    return [[c["claim"], str(c.get("paper", NA)), str(c.get("ours", NA)), AGREE[c.get("agree")],
             str(c.get("where", ""))] for c in claims]


def claims_verdict(claims: list[dict[str, Any]]) -> str:
    judged = [c for c in claims if c.get("agree") is not None]
    held = sum(bool(c["agree"]) for c in judged)
    missing = len(claims) - len(judged)
    return (f"Reproduced: {held} of {len(judged)} claims that these results can judge agree in direction "
            f"(or, for values, within a factor of 1.5)"
            + (f"; {missing} not judged (their runs are missing)." if missing else "."))


CLAIMS_HEAD = ["claim", "paper", "hss-gym", "agreement", "where"]


def _intro(td: TrackData) -> str:
    n = len(td.seeds())
    ci = ("± = 95% confidence interval over seeds; ≈ = not significantly different from #1 "
          "(paired by seed)." if n > 1 else "One seed: no confidence intervals (run ≥ 3 seeds for them).")
    return f"{td.problem.description} {ci}".strip()


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
        out += ["", f"## {td.suite} / {td.track}", "",
                f"{td.problem.title}: configurations {', '.join(td.configs)}; {len(td.workloads)} workloads "
                f"({wl}); seeds {', '.join(map(str, td.seeds()))}.", "", _intro(td), "",
                md_table(summary_head(td), summary_rows(td)), ""]
        head, rows = detail_table(td)
        out += [f"<details><summary>{td.problem.primary.label} per workload</summary>", "",
                md_table(head, rows), "", "</details>"]
        ct = curve_table(td)
        if ct is not None:
            out += ["", "<details><summary>Learning curves</summary>", "", md_table(*ct), "", "</details>"]
    claims = evaluate_claims(records)
    if claims:
        out += ["", "## Published numbers beside ours", "", md_table(CLAIMS_HEAD, claims_rows(claims)), "",
                claims_verdict(claims)]
    fails = [r for td in tracks for k, r in td.failed.items() if k not in td.ok]
    if fails:
        out += ["", "## Failed runs", ""] + [f"* {e}" for e in failure_lines(fails)]
    return "\n".join(out) + "\n"


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
                f"seeds {', '.join(map(str, td.seeds()))})", md_table(summary_head(td), summary_rows(td)), ""]
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
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{td.suite} / {td.track}", fontsize=10)
        out.append((key, f"{td.track}: {m.label}, mean and 95% CI over seeds; references in grey", png(fig)))
        # learning curves: the five best policies and the references
        curves = _mean_curves(td)
        if curves:
            name, by_policy = next(iter(curves.items()))
            show = [s.policy for s in leaderboard(td)][:5] + td.references
            fig, ax = plt.subplots(figsize=(7, 3.2))
            for i, p in enumerate(q for q in show if q in by_policy):
                ref = p in td.references
                j = td.references.index(p) if ref else i
                ax.plot(range(1, len(by_policy[p]) + 1), by_policy[p], label=p + (" (ref)" if ref else ""),
                        lw=1.1 if ref else 1.6,
                        ls=[":", (0, (2, 2))][j % 2] if ref else ["-", "--", "-.", (0, (5, 1)), (0, (1, 1))][i % 5],
                        color=["0.15", "0.55"][j % 2] if ref else plt.get_cmap("tab10")(i))
            ax.set_xlabel("window")
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
            ax.set_title(f"{td.suite} / {td.track}: learning curves (mean over workloads and seeds)", fontsize=10)
            out.append((key, f"{td.track}: learning curves ({name} per window; top 5 + references)", png(fig)))
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
.na{color:#999}details{margin-bottom:1em}"""


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
        head, rows = detail_table(td)
        parts.append(f"<details><summary>{e(td.problem.primary.label)} per workload</summary>"
                     + html_table(head, rows) + "</details>")
        for key, cap, uri in figs:
            if key == (td.suite, td.track):
                parts.append(f'<figure><img alt="{e(cap)}" src="{uri}"><figcaption>{e(cap)}</figcaption></figure>')
    claims = evaluate_claims(records)
    if claims:
        parts.append("<h2>Published numbers beside ours</h2>")
        parts.append(html_table(CLAIMS_HEAD, claims_rows(claims)))
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
