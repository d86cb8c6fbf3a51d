"""Leaderboards from results files: a Markdown table and a self-contained HTML page.

For every (suite, track) of the results, each policy's runs are compared with the ``fast_only``
run of the same (workload, configuration, seed) — *normalised* latency, 1.0 = as fast as an HSS
whose fast device holds everything, lower is better — and with the ``oracle`` run: *% of Oracle*
= Oracle's mean latency / the policy's, in percent (higher is better). Track-level numbers are
arithmetic means over the track's (workload, configuration, seed) cells, as the papers average.
A missing reference shows ``n/a``; failed runs are listed with their error.

The HTML page embeds everything (CSS inline, matplotlib figures as base64 PNG): normalised mean
latency per workload family, normalised throughput, p99/p99.99, write amplification and latency
CDFs, plus the papers' published numbers (``published/harmonia.json``) beside ours.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from hss_gym.benchmarks.results import latest_by_key
from hss_gym.benchmarks.suites import ORACLE, REFERENCE

PUBLISHED_DIR = Path(__file__).resolve().parent / "published"
NA = "n/a"


# --------------------------------------------------------------------------------------- model
@dataclass
class TrackData:
    """The runs of one (suite, track)."""

    suite: str
    track: str
    workloads: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    ok: dict[tuple[str, str, int, str], dict[str, Any]] = field(default_factory=dict)
    failed: dict[tuple[str, str, int, str], dict[str, Any]] = field(default_factory=dict)

    def cells(self) -> list[tuple[str, str, int]]:
        """The (workload, config, seed) cells that have at least one run."""
        seen = dict.fromkeys((w, c, s) for (w, c, s, _) in list(self.ok) + list(self.failed))
        return list(seen)


def collect(records: Iterable[dict[str, Any]]) -> list[TrackData]:
    """Group records by (suite, track): the latest ``ok`` run of each job, else its failure."""
    tracks: dict[tuple[str, str], TrackData] = {}
    for r in latest_by_key(records).values():
        td = tracks.setdefault((r["suite"], r["track"]), TrackData(r["suite"], r["track"]))
        for lst, v in ((td.workloads, r["workload"]), (td.configs, r["config"]), (td.policies, r["policy"])):
            if v not in lst:
                lst.append(v)
        key = (r["workload"], r["config"], r["seed"], r["policy"])
        (td.ok if r.get("status") == "ok" else td.failed)[key] = r
    for td in tracks.values():  # references first
        td.policies.sort(key=lambda p: (p != REFERENCE, p != ORACLE))
    return list(tracks.values())


def short_name(workload: str) -> str:
    """A workload's display name (a trace file's base name)."""
    return workload.rsplit("/", 1)[-1]


def family(workload: str) -> str:
    """The workload family: vdi, rocksdb, ycsb, mlperf, mix, or trace (a file)."""
    try:
        from hss_gym.workloads.registry import canonical_name
        from hss_gym.workloads.synthetic import FAMILIES
    except ImportError:  # pragma: no cover
        return "other"
    key = canonical_name(workload) if "/" not in workload else None
    if key is None:
        return "trace"
    if key.startswith("mix"):
        return "mix"
    return FAMILIES.get(key, "other")


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return None
    return a / b


@dataclass
class PolicyStats:
    """One policy's track-level numbers (``None`` = not available)."""

    policy: str
    runs: int
    failed: int
    norm_mean: float | None
    norm_p99: float | None
    norm_p9999: float | None
    norm_throughput: float | None
    write_amplification: float | None
    fast_hit_ratio: float | None
    pct_oracle: float | None
    mean_latency_us: float | None
    error: str | None = None


def cell_values(td: TrackData, policy: str, cell: tuple[str, str, int]) -> dict[str, float | None] | None:
    """The normalised numbers of one run (None if the policy has no ok run in the cell)."""
    r = td.ok.get((*cell, policy))
    if r is None:
        return None
    m = r["metrics"]
    ref = td.ok.get((*cell, REFERENCE))
    orc = td.ok.get((*cell, ORACLE))
    fm = ref["metrics"] if ref else {}
    om = orc["metrics"] if orc else {}
    wa = m.get("write_amplification")
    return {
        "mean": _ratio(m["mean_latency_us"], fm.get("mean_latency_us")),
        "p99": _ratio(m["p99_latency_us"], fm.get("p99_latency_us")),
        "p9999": _ratio(m["p9999_latency_us"], fm.get("p9999_latency_us")),
        "throughput": _ratio(m["throughput_rps"], fm.get("throughput_rps")),
        "wa": wa if wa is not None and math.isfinite(wa) else None,
        "hit": m.get("fast_hit_ratio"),
        "oracle": None if not om else 100.0 * om["mean_latency_us"] / m["mean_latency_us"],
        "abs_mean": m["mean_latency_us"],
    }


def policy_stats(td: TrackData, policy: str, cells: list[tuple[str, str, int]] | None = None) -> PolicyStats:
    """Track-level numbers of ``policy`` over ``cells`` (default: all of the track's)."""
    cells = td.cells() if cells is None else cells
    vals = [v for c in cells if (v := cell_values(td, policy, c)) is not None]
    fails = [td.failed[(*c, policy)] for c in cells if (*c, policy) in td.failed and (*c, policy) not in td.ok]

    def agg(k: str) -> float | None:
        return _mean([v[k] for v in vals if v[k] is not None])

    return PolicyStats(policy, len(vals), len(fails), agg("mean"), agg("p99"), agg("p9999"),
                       agg("throughput"), agg("wa"), agg("hit"), agg("oracle"), agg("abs_mean"),
                       fails[0].get("error") if fails else None)


def leaderboard(td: TrackData) -> list[PolicyStats]:
    """Every policy's stats, best normalised mean latency first (n/a last)."""
    stats = [policy_stats(td, p) for p in td.policies]
    return sorted(stats, key=lambda s: (s.norm_mean is None, s.norm_mean if s.norm_mean is not None else 0.0))


# ------------------------------------------------------------------------------ published claims
def load_published(path: str | Path | None = None) -> dict[str, Any]:
    """The published numbers (default ``published/harmonia.json``)."""
    p = Path(path) if path else PUBLISHED_DIR / "harmonia.json"
    return json.loads(p.read_text())


def _track_for_config(tracks: list[TrackData], config: str) -> TrackData | None:
    """The track that runs only ``config`` (hss-bench-v1's first, then one named after it)."""
    tracks = sorted(tracks, key=lambda td: td.suite != "hss-bench-v1")
    for td in tracks:
        if td.configs == [config] and td.track == config:
            return td
    for td in tracks:
        if td.configs == [config]:
            return td
    return None


def evaluate_claims(tracks: list[TrackData], published: dict[str, Any]) -> list[dict[str, Any]]:
    """Each published claim with ``ours`` (None when the runs it needs are missing)."""
    out = []
    for c in published.get("claims", []):
        td = _track_for_config(tracks, c["config"])
        ours: float | None = None
        where = td.track if td else None
        if td is not None:
            a = policy_stats(td, c["policy"])
            b = policy_stats(td, c["baseline"]) if c.get("baseline") else None
            kind = c["kind"]
            if kind == "faster_pct" and b is not None and a.norm_mean and b.norm_mean:
                ours = (b.norm_mean / a.norm_mean - 1.0) * 100.0
            elif kind == "reduction_pct" and b is not None:
                k = "norm_p99" if c.get("metric") == "p99" else "norm_p9999"
                va, vb = getattr(a, k), getattr(b, k)
                ours = (1.0 - va / vb) * 100.0 if va is not None and vb else None
            elif kind == "percent_of_oracle":
                ours = a.pct_oracle
            elif kind == "write_amplification":
                ours = a.write_amplification
        out.append({**c, "ours": ours, "track": where})
    return out


# ---------------------------------------------------------------------------------- formatting
def fmt(v: float | None, digits: int = 2, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return NA
    return f"{v:.1f}%" if pct else f"{v:.{digits}f}"


SUMMARY_HEAD = ["#", "policy", "mean lat. / Fast-Only", "p99 / FO", "p99.99 / FO", "throughput / FO",
                "write ampl.", "fast hit", "% of Oracle", "runs"]


def summary_rows(td: TrackData) -> list[list[str]]:
    rows = []
    for i, s in enumerate(leaderboard(td), 1):
        runs = f"{s.runs}" + (f" ({s.failed} failed)" if s.failed else "")
        rows.append([str(i) if s.norm_mean is not None else "-", s.policy, fmt(s.norm_mean), fmt(s.norm_p99),
                     fmt(s.norm_p9999), fmt(s.norm_throughput), fmt(s.write_amplification),
                     fmt(s.fast_hit_ratio), fmt(s.pct_oracle, pct=True), runs])
    return rows


def detail_table(td: TrackData) -> tuple[list[str], list[list[str]]]:
    """Normalised mean latency per policy (rows) and workload/config (columns, seeds averaged)."""
    cols = [(w, c) for w in td.workloads for c in td.configs
            if any((w, c, s, p) in td.ok or (w, c, s, p) in td.failed for (_, _, s) in td.cells() for p in td.policies)]
    multi = len(td.configs) > 1
    head = ["policy"] + [short_name(w) + (f" / {c}" if multi else "") for w, c in cols]
    rows = []
    cells = td.cells()
    for p in [s.policy for s in leaderboard(td)]:
        row = [p]
        for w, c in cols:
            vs = [v["mean"] for (cw, cc, s) in cells if cw == w and cc == c
                  and (v := cell_values(td, p, (cw, cc, s))) is not None and v["mean"] is not None]
            failed = any((w, c, s, p) in td.failed and (w, c, s, p) not in td.ok for (_, _, s) in cells)
            row.append(fmt(_mean(vs)) if vs else ("failed" if failed else NA))
        rows.append(row)
    return head, rows


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


def claims_rows(claims: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for c in claims:
        pct = c["kind"] != "write_amplification"
        pub = NA if c.get("value") is None else (f"{c['value']:.1f}%" if pct else f"{c['value']:.2f}")
        ours = fmt(c["ours"], pct=pct)
        rows.append([c["text"], c["kind"], pub, ours, c.get("track") or NA])
    return rows


def markdown_report(records: list[dict[str, Any]], title: str = "hss-gym leaderboard",
                    command: str | None = None, published: dict[str, Any] | None = None) -> str:
    """The Markdown leaderboard of ``records``."""
    tracks = collect(records)
    pv = provenance_summary(records)
    out = [f"# {title}", ""]
    out.append(f"hss-gym {', '.join(pv['versions'])}; git {', '.join(pv['git'])}; {pv['ok']} runs ok "
               f"of {pv['runs']}; last finished {pv['finished']}.")
    if command:
        out += ["", f"Generated by `{command}`."]
    out += ["", "Latency and throughput are normalised to Fast-Only (all data on the fast device) on the "
            "same workload, configuration and seed, then averaged over the track (lower latency is better; "
            "1.00 = ideal). % of Oracle = Oracle's mean latency / the policy's (higher is better).", ""]
    for td in tracks:
        wl = ", ".join(short_name(w) for w in td.workloads)
        out += [f"## {td.suite} / {td.track}", "",
                f"configurations {', '.join(td.configs)}; {len(td.workloads)} workloads ({wl})", "",
                md_table(SUMMARY_HEAD, summary_rows(td)), ""]
        head, rows = detail_table(td)
        out += ["<details><summary>Normalised mean latency per workload</summary>", "",
                md_table(head, rows), "", "</details>", ""]
    if published is not None:
        claims = evaluate_claims(tracks, published)
        if claims:
            out += ["## Published numbers (SPEC §9) beside ours", "",
                    md_table(["claim", "kind", "paper", "hss-gym", "track"], claims_rows(claims)), ""]
    fails = [r for td in tracks for k, r in td.failed.items() if k not in td.ok]
    if fails:
        out += ["## Failed runs", ""] + [f"* {e}" for e in failure_lines(fails)] + [""]
    return "\n".join(out)


def failure_lines(fails: list[dict[str, Any]]) -> list[str]:
    """One line per failing policy: how many runs and the first error."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in fails:
        by.setdefault(r["policy"], []).append(r)
    return [f"{p}: {len(rs)} run(s) failed, e.g. {short_name(rs[0]['workload'])} / {rs[0]['config']}: "
            f"{rs[0].get('error')}" for p, rs in by.items()]


def print_table(records: list[dict[str, Any]]) -> str:
    """The summary tables only (what ``hss-gym bench`` prints at the end)."""
    out = []
    for td in collect(records):
        out += [f"{td.suite} / {td.track} ({', '.join(td.configs)}, {len(td.workloads)} workloads)",
                md_table(SUMMARY_HEAD, summary_rows(td)), ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------- figures
def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _colors(policies: list[str]) -> dict[str, Any]:
    import matplotlib
    cmap = matplotlib.colormaps["tab20"]
    return {p: cmap(i % 20) for i, p in enumerate(policies)}


def figures(tracks: list[TrackData]) -> list[tuple[tuple[str, str], str, str]]:
    """((suite, track), caption, data URI) of every figure; empty without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    import numpy as np
    out: list[tuple[tuple[str, str], str, str]] = []
    allp = list(dict.fromkeys(p for td in tracks for p in td.policies))
    col = _colors(allp)
    for td in tracks:
        pols = [s.policy for s in leaderboard(td) if s.norm_mean is not None]
        if not pols:
            continue
        cells = td.cells()
        fams = list(dict.fromkeys(family(w) for w in td.workloads))
        # 1. normalised mean latency per workload family
        fig, ax = plt.subplots(figsize=(min(13, max(6, 0.25 * len(fams) * len(pols))), 3.6))
        width = 0.8 / len(pols)
        for i, p in enumerate(pols):
            ys = []
            for f in fams:
                fc = [c for c in cells if family(c[0]) == f]
                ys.append(policy_stats(td, p, fc).norm_mean or np.nan)
            ax.bar(np.arange(len(fams)) + i * width - 0.4 + width / 2, ys, width, label=p, color=col[p])
        ax.set_xticks(range(len(fams)), fams)
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_ylabel("mean latency / Fast-Only")
        ax.set_title(f"{td.suite} / {td.track}: normalised mean latency per workload family")
        ax.legend(fontsize=7, ncol=min(8, len(pols)), loc="upper center", bbox_to_anchor=(0.5, -0.1))
        key = (td.suite, td.track)
        out.append((key, f"{td.track}: normalised mean latency per workload family (log scale, lower is better)", _png(fig)))
        stats = [policy_stats(td, p) for p in pols]
        # 2. throughput, 3. tail latency, 4. write amplification
        fig, axes = plt.subplots(1, 3, figsize=(13, max(2.5, 0.28 * len(pols) + 1)))
        y = np.arange(len(pols))
        axes[0].barh(y, [s.norm_throughput or np.nan for s in stats], color=[col[p] for p in pols])
        axes[0].set_xlabel("throughput / Fast-Only (higher is better)")
        axes[0].set_yticks(y, pols)
        axes[0].invert_yaxis()
        axes[1].barh(y - 0.2, [s.norm_p99 or np.nan for s in stats], 0.4, label="p99", color="#4477aa")
        axes[1].barh(y + 0.2, [s.norm_p9999 or np.nan for s in stats], 0.4, label="p99.99", color="#ee6677")
        axes[1].set_xscale("log")
        axes[1].set_xlabel("tail latency / Fast-Only")
        axes[1].set_yticks(y, [])
        axes[1].invert_yaxis()
        axes[1].legend(fontsize=7)
        axes[2].barh(y, [s.write_amplification or np.nan for s in stats], color=[col[p] for p in pols])
        axes[2].set_xlabel("write amplification")
        axes[2].set_yticks(y, [])
        axes[2].invert_yaxis()
        fig.suptitle(f"{td.suite} / {td.track}: throughput, tail latency, write amplification")
        out.append((key, f"{td.track}: throughput, p99/p99.99 latency (normalised to Fast-Only) and write amplification", _png(fig)))
        # 5. latency CDF of up to four workloads (first seed, first config)
        cdf_cells = [c for c in cells if c[2] == cells[0][2] and c[1] == td.configs[0]][:4]
        if cdf_cells:
            fig, axes = plt.subplots(1, len(cdf_cells), figsize=(3.4 * len(cdf_cells), 3), squeeze=False)
            for ax, c in zip(axes[0], cdf_cells):
                for p in pols:
                    r = td.ok.get((*c, p))
                    q = r.get("latency_quantiles") if r else None
                    if q:
                        ax.plot(q["us"], np.asarray(q["q"]) / 100.0, label=p, color=col[p], lw=1.2)
                ax.set_xscale("log")
                ax.set_xlabel("latency (µs)")
                ax.set_title(f"{short_name(c[0])} / {c[1]}", fontsize=9)
                ax.grid(alpha=0.3)
            axes[0][0].set_ylabel("fraction of requests")
            axes[0][-1].legend(fontsize=6, loc="lower right")
            fig.suptitle(f"{td.suite} / {td.track}: latency CDF", y=1.04)
            out.append((key, f"{td.track}: latency CDF (seed {cells[0][2]})", _png(fig)))
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
                command: str | None = None, published: dict[str, Any] | None = None,
                with_figures: bool = True) -> str:
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
    parts.append("<p>Latency and throughput are normalised to Fast-Only (all data on the fast device) on the "
                 "same workload, configuration and seed, then averaged over the track (lower latency is "
                 "better; 1.00 = ideal). % of Oracle = Oracle's mean latency / the policy's.</p>")
    figs = figures(tracks) if with_figures else []
    if with_figures and not figs and tracks:
        parts.append("<p><em>Figures need matplotlib (pip install 'hss-gym[agents]').</em></p>")
    for td in tracks:
        parts.append(f"<h2>{e(td.suite)} / {e(td.track)}</h2>")
        parts.append(f"<p>configurations {e(', '.join(td.configs))}; {len(td.workloads)} workloads: "
                     f"{e(', '.join(short_name(w) for w in td.workloads))}</p>")
        parts.append(html_table(SUMMARY_HEAD, summary_rows(td)))
        head, rows = detail_table(td)
        parts.append("<details><summary>Normalised mean latency per workload</summary>"
                     + html_table(head, rows) + "</details>")
        for key, cap, uri in figs:
            if key == (td.suite, td.track):
                parts.append(f'<figure><img alt="{e(cap)}" src="{uri}"><figcaption>{e(cap)}</figcaption></figure>')
    if published is not None:
        claims = evaluate_claims(tracks, published)
        if claims:
            parts.append("<h2>Published numbers beside ours</h2>")
            parts.append(f"<p>{e(published.get('source', ''))} {e(published.get('note', ''))}</p>")
            parts.append(html_table(["claim", "kind", "paper", "hss-gym", "track"], claims_rows(claims)))
            defs = published.get("definitions", {})
            if defs:
                parts.append("<ul>" + "".join(f"<li><code>{e(k)}</code>: {e(v)}</li>" for k, v in defs.items()) + "</ul>")
    fails = [r for td in tracks for k, r in td.failed.items() if k not in td.ok]
    if fails:
        parts.append("<h2>Failed runs</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in failure_lines(fails)) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_reports(records: list[dict[str, Any]], out_dir: str | Path, title: str = "hss-gym leaderboard",
                  command: str | None = None, with_figures: bool = True,
                  published: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pub = published if published is not None else load_published()
    md, page = out / "report.md", out / "report.html"
    md.write_text(markdown_report(records, title, command, pub))
    page.write_text(html_report(records, title, command, pub, with_figures))
    return md, page
