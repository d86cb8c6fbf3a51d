"""The leaderboard harness (``hss_gym.benchmarks``): suites, bench runs, resume, validation, reports.

Tests use the built-in heuristics (fast_only, slow_only, random) and a tiny policy defined here
(run by its "module:factory" spec), never the learners other modules provide.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from _extras import requires

from hss_gym.agents.base import POLICIES, Policy
from hss_gym.benchmarks import report as rep
from hss_gym.benchmarks.results import (KEY_FIELDS, SCHEMA, job_key, read_results, trace_sha256)
from hss_gym.benchmarks.problems import Metric, Problem, get_problem, list_problems
from hss_gym.benchmarks.problems.hss import load_job_trace
from hss_gym.benchmarks.runner import make_jobs, pending_jobs, run_job, run_jobs
from hss_gym.benchmarks.stats import mean_ci, paired_significant
from hss_gym.benchmarks.suites import (SuiteError, list_suites, load_suite, parse_suite,
                                       with_overrides)
from hss_gym.benchmarks.validate import validate_results
from hss_gym.config import CONFIGURATIONS
from hss_gym.metrics import RunMetrics
from hss_gym.workloads.catalogue import CATALOGUE, names as catalogue_names
from hss_gym.workloads.registry import canonical_name
from hss_gym.workloads.synthetic import TARGETS


# ---------------------------------------------------------------- a tiny custom policy
class HalfFast(Policy):
    """Every other placement on the fast device; never migrates."""

    name = "half_fast"
    agents = ("placement",)

    def reset(self, env, seed=None):
        super().reset(env, seed)
        self.i = 0

    def act(self, observations, infos):
        self.i += 1
        return {"placement": self.i % 2}


def make_half_fast() -> Policy:
    return HalfFast()


TINY = f"{__name__}:make_half_fast"


def tiny_suite(policies=("fast_only", TINY), workloads=("ycsb-b", "lun2"), n=2000, seeds=(0,), name="tiny"):
    return parse_suite({"name": name, "policies": list(policies), "seeds": list(seeds), "n_requests": n,
                        "min_seeds": 1,
                        "tracks": [{"name": "perf_opt", "configs": ["perf_opt"], "workloads": list(workloads)}]})


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    """A finished tiny bench: 2 workloads x (fast_only, random, the custom policy), n=2000."""
    out = tmp_path_factory.mktemp("bench") / "results.jsonl"
    suite = tiny_suite(policies=("fast_only", "random", TINY))
    summary = run_jobs(make_jobs(suite), out, workers=2, progress=False)
    assert summary.ok == 6 and not summary.failed, summary.failed
    return out


# ---------------------------------------------------------------- suites
@pytest.mark.parametrize("name", ["quick", "hss-bench-v1", "hss-bench-v2"])
def test_builtin_suites_reference_only_valid_names(name):
    s = load_suite(name)
    assert s.policies[0] == "fast_only" and "oracle" in s.policies
    assert set(s.policies) <= set(POLICIES)
    for t in s.tracks:
        assert set(t.configs) <= set(CONFIGURATIONS)
        assert all(canonical_name(w) == w or w in {f"catalogue:{n}" for n in catalogue_names()}
                   for w in t.workloads), t.workloads
        assert t.n_requests >= 10_000 and t.seeds


def test_hss_bench_v1_is_table4_and_table5_on_five_configs():
    s = load_suite("hss-bench-v1")
    table4 = [w for w in TARGETS if w != "ycsb-a"]  # YCSB-A is a mix component, not a Table-4 row
    assert len(table4) == 17
    mixes = [f"mix{i}" for i in range(1, 7)]
    assert {t.name: t.configs for t in s.tracks} == {c: (c,) for c in ("perf_opt", "cost_opt", "tri", "quad", "pmem")}
    for t in s.tracks:
        assert sorted(t.workloads) == sorted(table4 + mixes)


def test_hss_bench_v2_is_the_catalogue_first_then_hss_bench_v1():
    """v2 = a real track over every catalogue trace (all requests, perf_opt and cost_opt) in front
    of hss-bench-v1's synthetic tracks, unchanged."""
    v1, v2 = load_suite("hss-bench-v1"), load_suite("hss-bench-v2")
    real = [t for t in v2.tracks if t.name.startswith("real-")]
    assert [t.name for t in v2.tracks[:2]] == ["real-perf_opt", "real-cost_opt"] == [t.name for t in real]
    for t, config in zip(real, ("perf_opt", "cost_opt")):
        assert t.configs == (config,) and t.n_requests >= max(e.requests for e in CATALOGUE.values())
        assert sorted(t.workloads) == sorted(f"catalogue:{n}" for n in catalogue_names())
    assert v2.tracks[2:] == v1.tracks
    assert set(v1.policies) < set(v2.policies)
    assert all(t.seeds == (0, 1, 2) for t in v2.tracks)


LEADERBOARDS = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "leaderboard").glob("*/report.md"))


@pytest.mark.parametrize("report", LEADERBOARDS, ids=lambda p: p.parent.name)
def test_committed_leaderboards_hold_the_results_their_reports_show(report):
    """Every committed leaderboard ships its results (compressed, read as they are), all of one
    hss-gym version, and its report's run count and summary tables are those the results give:
    a report regenerated from other results, or results replaced under it, fail here."""
    zst = report.parent / "results.jsonl.zst"
    assert zst.exists(), f"{report.parent.name}: no results.jsonl.zst beside report.md"
    recs = read_results(zst)
    ok = sum(r.get("status") == "ok" for r in recs)
    md = report.read_text(encoding="utf-8")
    assert f"{ok} runs ok of {len(recs)};" in md
    assert len({(r.get("provenance") or {}).get("hss_gym_version") for r in recs}) == 1
    for td in rep.collect(recs):
        assert rep.md_table(rep.summary_head(td), rep.summary_rows(td)) in md, f"{td.suite} / {td.track}"


def test_real_suite_takes_a_directory(tmp_path):
    from hss_gym.workloads import make_trace, save_cache
    save_cache(make_trace("ycsb-b", n=500, seed=1), tmp_path / "a.hsst")
    save_cache(make_trace("lun1", n=500, seed=1), tmp_path / "b.hsst")
    (tmp_path / "README.md").write_text("not a trace")
    s = load_suite("real", traces_dir=tmp_path)
    assert [Path(w).name for w in s.tracks[0].workloads] == ["a.hsst", "b.hsst"]
    with pytest.raises(SuiteError, match="--traces DIR"):
        load_suite("real")
    assert set(list_suites()) >= {"quick", "hss-bench-v1", "real"}


@pytest.mark.parametrize("field,value,valid", [
    ("workloads", ["ycsb-q"], "ycsb-b"), ("configs", ["perf_opt", "fastest"], "cost_opt")])
def test_suite_with_unknown_names_lists_valid_ones(field, value, valid):
    raw = {"name": "bad", "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": ["ycsb-b"]}]}
    raw["tracks"][0][field] = value
    with pytest.raises(SuiteError, match=valid):
        parse_suite(raw)
    with pytest.raises(SuiteError, match="fast_only"):
        parse_suite({**raw, "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": ["ycsb-b"]}],
                     "policies": ["harmonai"]})
    with pytest.raises(SuiteError, match="quick"):
        load_suite("quik")


def test_overrides_add_references_and_restrict():
    s = with_overrides(load_suite("quick"), policies=[TINY], workloads=["YCSB-B"], configs=["cost_opt"],
                       seeds=[3, 4], n_requests=1000, oracle=False)
    assert s.policies == ("fast_only", TINY)
    assert [(t.name, t.workloads, t.configs, t.seeds, t.n_requests) for t in s.tracks] == [
        ("cost_opt", ("ycsb-b",), ("cost_opt",), (3, 4), 1000)]
    assert len(make_jobs(s)) == 4


# ---------------------------------------------------------------- bench runs
def test_tiny_bench_produces_valid_records(tiny_results):
    recs = read_results(tiny_results)
    assert len(recs) == 6
    fields = set(RunMetrics.__dataclass_fields__)
    from hss_gym import __version__
    for r in recs:
        assert r["schema"] == SCHEMA and r["status"] == "ok" and r["error"] is None
        assert all(k in r for k in KEY_FIELDS)
        assert set(r["metrics"]) == fields and r["metrics"]["requests"] == 2000
        p = r["provenance"]
        assert p["hss_gym_version"] == __version__
        assert "git_revision" in p and p["finished_at"].endswith("Z")
        assert len(p["config_hash"]) == 16 and p["env_config_hash"]
        assert p["trace"]["sha256"] == trace_sha256(load_job_trace(r))
        assert p["trace"]["source"]["kind"] == "synthetic" and "params" in p["trace"]["source"]
        q = r["latency_quantiles"]
        assert len(q["q"]) == len(q["us"]) and q["us"] == sorted(q["us"])
    by = {(r["workload"], r["policy"]): r["metrics"]["mean_latency_us"] for r in recs}
    for w in ("ycsb-b", "lun2"):  # the ideal HSS beats a half-slow one
        assert by[(w, "fast_only")] < by[(w, TINY)]
    pols = {r["policy"]: r["provenance"]["policy_name"] for r in recs}
    assert pols[TINY] == "half_fast"


def test_failing_policy_is_recorded_and_the_rest_continue(tmp_path):
    out = tmp_path / "results.jsonl"
    suite = tiny_suite(policies=("fast_only", "no_such_module_xyz:make"), workloads=("ycsb-b",))
    summary = run_jobs(make_jobs(suite), out, workers=1, progress=False)
    assert summary.ok == 1 and len(summary.failed) == 1
    bad = summary.failed[0]
    assert bad["status"] == "failed" and "no_such_module_xyz" in bad["error"]
    assert [r["status"] for r in read_results(out)] == ["ok", "failed"]
    # resume retries the failed job only
    again = run_jobs(make_jobs(suite), out, workers=1, progress=False)
    assert again.skipped == 1 and len(again.failed) == 1


def test_resume_after_a_killed_run_runs_exactly_the_missing_jobs(tmp_path, tiny_results):
    out = tmp_path / "results.jsonl"
    lines = tiny_results.read_bytes().splitlines(keepends=True)
    # a run killed while writing its 4th record: 3 whole lines and half a line
    out.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    suite = tiny_suite(policies=("fast_only", "random", TINY))
    jobs = make_jobs(suite)
    done = {job_key(json.loads(x)) for x in lines[:3]}
    missing = [job_key(j) for j in jobs if job_key(j) not in done]
    assert len(missing) == 3 and [job_key(j) for j in pending_jobs(jobs, out)] == missing
    ran = []
    with pytest.warns(UserWarning, match="partial last line"):
        summary = run_jobs(jobs, out, workers=2, progress=False, on_record=lambda r: ran.append(job_key(r)))
    assert sorted(ran) == sorted(missing) and summary.skipped == 3
    recs = read_results(out)  # no malformed line left behind
    assert sorted(job_key(r) for r in recs) == sorted(job_key(j) for j in jobs)
    # deterministic: the resumed runs equal the uninterrupted ones
    first = {job_key(json.loads(x)): json.loads(x)["metrics"] for x in lines}
    assert all(r["metrics"] == first[job_key(r)] for r in recs)
    assert run_jobs(jobs, out, progress=False).skipped == len(jobs)  # nothing left to do


def test_resume_keeps_a_complete_last_record_that_lost_its_newline(tmp_path, tiny_results):
    """A last line that parses as a whole record is a finished run: resume keeps it (and gives it
    its newline back) and does not run it again; only a line cut short is removed and re-run. The
    file then holds exactly one record per run done."""
    suite = tiny_suite(policies=("fast_only", "random", TINY))
    jobs = make_jobs(suite)
    lines = tiny_results.read_bytes().splitlines(keepends=True)
    out = tmp_path / "results.jsonl"
    out.write_bytes(b"".join(lines[:4]).rstrip(b"\n"))  # 4 whole records, the last without "\n"
    ran = []
    summary = run_jobs(jobs, out, workers=1, progress=False, on_record=lambda r: ran.append(job_key(r)))
    assert summary.skipped == 4 and summary.ok == 2 and len(ran) == 2
    assert out.read_bytes().startswith(b"".join(lines[:4]))  # the 4th record is kept, newline restored
    keys = [job_key(r) for r in read_results(out)]
    assert len(keys) == len(set(keys)) == len(jobs) == len(out.read_bytes().splitlines())

    out.write_bytes(b"".join(lines[:3]) + lines[3][:-2])  # the 4th record cut short: removed, re-run
    with pytest.warns(UserWarning, match="partial last line"):
        summary = run_jobs(jobs, out, workers=1, progress=False)
    assert summary.skipped == 3 and summary.ok == 3
    keys = [job_key(r) for r in read_results(out)]
    assert len(keys) == len(set(keys)) == len(jobs) == len(out.read_bytes().splitlines())


def test_malformed_results_lines_are_named_by_number(tmp_path, tiny_results):
    lines = tiny_results.read_text().splitlines(keepends=True)
    out = tmp_path / "results.jsonl"
    out.write_text(lines[0] + "{oops\n" + lines[1] + "[1, 2]\n" + "".join(lines[2:]) + "x\n" * 6)
    with pytest.warns(UserWarning, match=r"skipped 8 malformed line\(s\): lines 2, 4, 9, 10, 11, \.\.\.$"):
        assert len(read_results(out)) == len(lines)
    out.write_text(lines[0] + "{oops\n")
    with pytest.warns(UserWarning, match=r"skipped 1 malformed line\(s\): line 2$"):
        read_results(out)


@pytest.mark.slow
def test_resume_after_killing_the_bench_process(tmp_path):
    out = tmp_path / "b"
    cmd = [sys.executable, "-m", "hss_gym.cli", "bench", "--suite", "quick", "--policies", "random,slow_only",
           "--no-oracle", "--workloads", "ycsb-b,lun2,ssd-02,mix3", "--configs", "perf_opt", "--seeds", "0", "--n", "30000",
           "--jobs", "1", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rfile = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not rfile.exists() or rfile.read_bytes().count(b"\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {job_key(r) for r in read_results(rfile)}
    assert 3 <= len(before) < 12
    from hss_gym.cli import main
    assert main(cmd[3:] + ["--resume", "--no-report"]) == 0
    recs = read_results(rfile)
    keys = [job_key(r) for r in recs]
    assert len(keys) == len(set(keys)) == 12 and before <= set(keys)


@pytest.mark.slow
def test_ray_runs_the_same_jobs(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "results.jsonl"
        suite = tiny_suite(policies=("fast_only", "random"))
        summary = run_jobs(make_jobs(suite), out, use_ray=True, progress=False)
        assert summary.ok == 4 and not summary.failed, summary.failed
        local = {job_key(r): r["metrics"] for r in [run_job(j) for j in make_jobs(suite)]}
        assert all(r["metrics"] == local[job_key(r)] for r in read_results(out))
    finally:
        ray.shutdown()


# ---------------------------------------------------------------- validation
def test_validate_passes_exact_and_detects_tampering(tiny_results):
    recs = read_results(tiny_results)
    ok = validate_results(recs, sample=3, seed=1, allow=[__name__])
    assert ok.passed and len(ok.checks) == 3 and "PASSED" in ok.summary() and "exact" in ok.summary()

    tampered = json.loads(json.dumps(recs))
    tampered[2]["metrics"]["mean_latency_us"] *= 0.999
    res = validate_results(tampered, sample=None, allow=[__name__])
    assert not res.passed
    bad = [c for c in res.checks if c.status != "ok"]
    assert len(bad) == 1 and bad[0].diffs[0][0] == "mean_latency_us" and "MISMATCH" in bad[0].describe()
    assert validate_results(tampered, sample=None, rtol=1e-2, allow=[__name__]).passed  # within a stated tolerance


def test_validate_refuses_other_versions_and_mismatched_hashes(tiny_results):
    recs = read_results(tiny_results)
    old = json.loads(json.dumps(recs))
    old[0]["provenance"]["hss_gym_version"] = "0.0.1"
    res = validate_results(old)
    assert not res.passed and res.refused_file and "0.0.1" in res.refused_file and not res.checks
    empty = validate_results([])  # an empty file: said so (it raised IndexError)
    assert not empty.passed and "no successful runs" in empty.refused_file

    for field, value, reason in (("trace", None, "trace hash mismatch"),
                                 ("config_hash", "0" * 16, "configuration hash mismatch")):
        bad = json.loads(json.dumps(recs[:1]))
        if field == "trace":
            bad[0]["provenance"]["trace"]["sha256"] = "f" * 64
        else:
            bad[0]["provenance"][field] = value
        res = validate_results(bad, sample=None, allow=[__name__])
        assert not res.passed and res.checks[0].status == "refused"
        assert reason in res.checks[0].reason and "REFUSED" in res.checks[0].describe()


@pytest.mark.parametrize("problem,job", [
    ("fleetio", {"workload": "mix1", "config": "fleetio", "policy": "hardware_isolation", "options": {"windows": 2}}),
    ("rlalloc", {"workload": "table1", "config": "rlalloc", "policy": "static", "options": {"episode_periods": 4}}),
])
def test_validate_refuses_runs_made_on_another_flash_profile(problem, job):
    """A FleetIO or RLAlloc run records its flash profile's hash; validate re-runs it only on the
    same device (a profile changed since, e.g. suspension turned on, is refused, saying so)."""
    from hss_gym.backends.flash import load_profile
    prob = get_problem(problem)
    out = prob.run_job({"problem": problem, "suite": "t", "track": "t", "seed": 0, **job})
    rec = {"problem": problem, "provenance": dict(out["provenance"])}
    prof = load_profile(rec["provenance"]["profile"], scale=rec["provenance"]["profile_scale"])
    assert rec["provenance"]["profile_hash"] == prof.digest() and prob.precheck(rec) is None
    changed = {**rec, "provenance": {**rec["provenance"], "profile_hash": "0" * 16}}
    assert "changed: the run was made on profile hash 0000" in prob.precheck(changed)
    old = {**rec, "provenance": {k: v for k, v in rec["provenance"].items() if k != "profile_hash"}}
    assert "no flash-profile hash recorded" in prob.precheck(old)


def test_flash_profile_digest_sees_every_simulated_field():
    import dataclasses

    from hss_gym.backends.flash import load_profile
    p = load_profile("fleetio")
    assert p.suspension == "program_erase" and p.cache_mode == "off"  # fleetio_v1's SSD suspends, without a cache
    assert load_profile("rlalloc").suspension == "none"
    assert dataclasses.replace(p, source="another note").digest() == p.digest()
    for field, value in (("suspension", "none"), ("read_us", 61.0), ("cache_mode", "write")):
        assert dataclasses.replace(p, **{field: value}).digest() != p.digest(), field


# ---------------------------------------------------------------- reports
class _Checker(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input", "source", "col", "area", "base", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.urls, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "srcset", "data", "poster", "action"):
                self.urls.append(v or "")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}>, open: {self.stack[-3:]}")
        else:
            self.stack.pop()


@requires("matplotlib")
def test_html_report_is_well_formed_and_self_contained(tiny_results, tmp_path):
    recs = read_results(tiny_results)
    md, page = rep.write_reports(recs, tmp_path, command="hss-gym bench --suite tiny")
    text = page.read_text()
    chk = _Checker()
    chk.feed(text)
    chk.close()
    assert not chk.errors and not chk.stack, (chk.errors, chk.stack)
    assert text.startswith("<!DOCTYPE html>") and "<table>" in text
    assert chk.urls and all(u.startswith("data:") or u.startswith("#") for u in chk.urls), chk.urls
    assert "script" not in chk.tags and "link" not in chk.tags
    pytest.importorskip("matplotlib")
    assert sum(u.startswith("data:image/png;base64,") for u in chk.urls) >= 3  # figures embedded
    mdt = md.read_text()
    assert "| ref | fast_only | 1.00 | 1.00 | 1.00 | 1.00 |" in mdt  # a reference, apart from the ranking
    assert "% of Oracle" in mdt and "n/a" in mdt  # no Oracle runs: n/a, not a crash
    assert "Published numbers" in mdt and "49.5%" in mdt and "Reproduced:" in mdt
    assert "Learning curves" in mdt  # every HSS run records its mean latency per 1,000 requests


def test_report_without_reference_shows_na(tiny_results):
    recs = [r for r in read_results(tiny_results) if r["policy"] != "fast_only"]
    text = rep.markdown_report(recs)
    row = next(line for line in text.splitlines() if line.startswith("| - | random"))
    assert row.count("n/a") >= 4  # the normalised metrics (no % of Oracle column: no Oracle ran)
    html = rep.html_report(recs, with_figures=True)
    assert "</html>" in html


def _fake(policy, workload, mean, p99=None, wa=1.0, config="perf_opt", track="perf_opt", seed=0):
    m = dict(requests=10, mean_latency_us=mean, p99_latency_us=p99 or 2 * mean, p9999_latency_us=3 * mean,
             throughput_rps=1e6 / mean, makespan_us=1.0, write_amplification=wa, fast_hit_ratio=0.5,
             evictions=0, migrations=0, migrated_pages_in=[0, 0], migrated_pages_out=[0, 0], migration_bytes=0)
    return {"schema": SCHEMA, "status": "ok", "suite": "s", "track": track, "workload": workload,
            "config": config, "policy": policy, "seed": seed, "n_requests": 10, "metrics": m,
            "provenance": {"hss_gym_version": "x"}}


def test_normalisation_oracle_references_and_published_claims():
    recs = []
    for w, base in (("ycsb-b", 10.0), ("lun2", 20.0)):
        recs += [_fake("fast_only", w, base), _fake("oracle", w, 1.5 * base),
                 _fake("sibyl", w, 3.0 * base, wa=1.5), _fake("harmonia", w, 2.0 * base, wa=1.6)]
    (td,) = rep.collect(recs)
    assert [s.policy for s in rep.leaderboard(td)] == ["harmonia", "sibyl"]  # references apart
    assert [s.policy for s in rep.reference_stats(td)] == ["fast_only", "oracle"]
    sib = rep.policy_stats(td, "sibyl")
    assert sib.mean("norm_mean") == pytest.approx(3.0) and sib.mean("pct_oracle") == pytest.approx(50.0)
    assert sib.mean("norm_throughput") == pytest.approx(1 / 3)
    claims = {c["id"]: c for c in rep.evaluate_claims(recs)}
    assert claims["harmonia-vs-sibyl-perf"]["ours"] == "50.0%"  # 3.0 / 2.0 - 1 (one seed: no test)
    assert claims["harmonia-vs-sibyl-perf"]["agree"] is True
    assert claims["harmonia-vs-sibyl-perf"]["where"] == "s / perf_opt"
    assert claims["harmonia-p99-perf"]["ours"].startswith("33.3%")  # 1 - 2/3
    assert claims["sibyl-oracle-perf"]["ours"] == "50.0%" and claims["sibyl-oracle-perf"]["agree"]
    assert claims["wa-harmonia"]["ours"] == "1.60"
    assert claims["harmonia-vs-sibyl-cost"]["ours"] == "n/a"  # no cost_opt track
    assert claims["harmonia-vs-sibyl-cost"]["agree"] is None and claims["harmonia-vs-sibyl-cost"]["where"] == "n/a"
    # a direction published without a number ("Sibyl+K-SVM is worse than Sibyl") is judged too
    for factor, verdict in ((1.2, True), (0.8, False)):
        ksvm = [dict(r, policy="sibyl+k_svm", metrics=dict(r["metrics"], mean_latency_us=factor * r["metrics"]["mean_latency_us"]))
                for r in recs if r["policy"] == "sibyl"]
        judged = {c["id"]: c for c in rep.evaluate_claims(recs + ksvm)}["sibyl-vs-sibylksvm-perf"]
        assert judged["agree"] is verdict and judged["paper"] == "n/a"
    # the opposite order disagrees with the paper
    flipped = [dict(r, policy={"sibyl": "harmonia", "harmonia": "sibyl"}.get(r["policy"], r["policy"])) for r in recs]
    assert {c["id"]: c for c in rep.evaluate_claims(flipped)}["harmonia-vs-sibyl-perf"]["agree"] is False


def test_confidence_intervals_and_significance_marks():
    e = mean_ci([1.0, 2.0, 3.0])
    assert e.mean == pytest.approx(2.0) and e.half_width == pytest.approx(4.303 * 1.0 / 3 ** 0.5, rel=1e-3)
    assert mean_ci([5.0]).half_width is None and mean_ci([]).mean is None
    assert paired_significant({0: 1.0, 1: 2.0, 2: 3.0}, {0: 2.0, 1: 3.0, 2: 4.0}) is True  # always 1 apart
    assert paired_significant({0: 1.0, 1: 5.0, 2: 3.0}, {0: 2.0, 1: 3.0, 2: 3.5}) is False
    assert paired_significant({0: 1.0}, {0: 2.0}) is None
    recs = []
    for seed, (h, s, r) in enumerate([(2.0, 2.1, 5.0), (2.2, 2.0, 6.0), (2.1, 2.3, 5.5)]):
        for w in ("ycsb-b", "lun2"):
            recs += [_fake("fast_only", w, 10.0, seed=seed), _fake("harmonia", w, 10 * h, seed=seed),
                     _fake("sibyl", w, 10 * s, seed=seed), _fake("random", w, 10 * r, seed=seed)]
    (td,) = rep.collect(recs)
    rows = {r[1]: r for r in rep.summary_rows(td)}
    assert rows["harmonia"][0] == "1" and rows["sibyl"][0] == "2 ≈" and rows["random"][0] == "3"
    assert rows["fast_only"][0] == "ref" and "±" in rows["harmonia"][2]
    head, detail = rep.detail_table(td)
    assert detail[0][1].endswith(" *") and detail[1][1].endswith(" ≈")


def test_learned_policies_need_three_seeds_and_track_options_reach_the_reader(tmp_path):
    raw = {"name": "s", "policies": ["harmonia"], "seeds": [0],
           "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": ["ycsb-b"]}]}
    with pytest.raises(SuiteError, match="at least 3 seeds"):
        parse_suite(raw)
    assert parse_suite({**raw, "min_seeds": 1}).tracks[0].seeds == (0,)
    bad = tmp_path / "t.csv"
    bad.write_text("0,h,0,Read,0,4096,1\n1,h,0,Write,4096,4096,1\nnot a line\n2,h,0,Read,0,4096,1\n")
    suite = parse_suite({"name": "r", "policies": ["slow_only"], "seeds": [0], "n_requests": 100,
                         "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": [str(bad)],
                                     "options": {"format": "msr", "trace_options": {"*.csv": {"skip_bad": True}}}}]})
    recs = [run_job(j) for j in make_jobs(suite)]
    assert all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    assert recs[0]["metrics"]["requests"] == 3
    strict = parse_suite({**suite.raw, "tracks": [{**suite.raw["tracks"][0], "options": {"format": "msr"}}]})
    failed = run_job(make_jobs(strict)[0])
    assert failed["status"] == "failed" and "t.csv" in failed["error"] and "line 3" in failed["error"]


def test_a_track_can_say_every_reader_option(tmp_path):
    """A suite describes how to read its files with every load_trace option (a csv layout of
    its own, blkparse event/device and sort, skip_bad, ...), and the jobs read them so."""
    layout = tmp_path / "mine.log"  # a CSV layout no built-in format has
    layout.write_text("# exported\nlba|op|ms|len\n8|get|0.5|8\n16|put|1.5|16\n24|get|1.0|8\n")
    blk = tmp_path / "run.blk"
    blk.write_text("  8,0    1        1     0.000001000   697  Q   W 8 + 8 [dd]\n"
                   "  8,0    1        2     0.000003000   697  Q   W 64 + 8 [dd]\n"
                   "  8,0    2        1     0.000002000   698  Q   R 128 + 8 [cat]\n"
                   "  8,16   2        2     0.000002500   698  Q   R 256 + 8 [cat]\n")
    csv = {"format": "csv", "columns": {"time": "ms", "op": "op", "offset": "lba", "size": "len"},
           "delimiter": "|", "time_unit": "ms", "offset_unit": 512, "size_unit": 512,
           "read_values": ["get"], "write_values": ["put"], "sort": True}
    raw = {"name": "own", "policies": ["slow_only"], "seeds": [0], "n_requests": 100,
           "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": [str(layout), str(blk)],
                       "options": {"skip_bad": False, "trace_options": {
                           "*.log": csv, "*.blk": {"format": "blkparse", "event": "Q",
                                                   "device": "8,0"}}}}]}
    suite = parse_suite(raw)
    jobs = {os.path.basename(j["workload"]): j for j in make_jobs(suite) if j["policy"] == "slow_only"}
    mine = load_job_trace(jobs["mine.log"])
    assert mine.offset.tolist() == [8 * 512, 24 * 512, 16 * 512]      # sorted by time
    assert mine.time_us.tolist() == [500.0, 1000.0, 1500.0] and mine.source["reordered"] == 1
    assert mine.source["junk_lines"] == 1 and mine.source["header"] is True
    run = load_job_trace(jobs["run.blk"])
    assert run.offset.tolist() == [8 * 512, 128 * 512, 64 * 512]      # Q events of 8,0, sorted
    assert run.source["event"] == "Q" and run.source["reordered"] == 1
    recs = [run_job(j) for j in make_jobs(suite)]
    assert all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]


@pytest.mark.parametrize("options, message", [
    ({"sort": "yes"}, "option 'sort' must be true, false or null"),
    ({"event": "X"}, "event must be one of"),
    ({"format": "msr", "event": "Q"}, r"unknown option\(s\) \['event'\] for format 'msr'"),
    ({"formt": "msr"}, r"unknown option 'formt' \(did you mean 'format'\?\)"),
    ({"limit": 10}, "option 'limit': the track's n_requests"),
    ({"columns": {"time": 0, "op": 1, "offset": 2, "size": 3}}, r"need \"format\""),
    ({"format": "csv", "columns": {"time": 0, "op": 1}}, "columns must map exactly"),
    ({"format": "csv", "columns": {"time": 0, "op": 1, "offset": 2, "size": 3},
      "read_values": "R"}, "read_values must be a list of strings"),
    ({"trace_options": {"*.blk": {"device": "sda"}}}, r"trace_options\['\*\.blk'\]: device must "
                                                     "be 'major,minor'"),
    # each pattern is fine with the track's options, but t.csv matches both
    ({"trace_options": {"*.csv": {"format": "msr"}, "t.*": {"gap_us": 5}}},
     r"trace 't\.csv': unknown option\(s\) \['gap_us'\] for format 'msr'"),
    ({"trace_options": ["*.csv"]}, "'trace_options' must map file name patterns"),
])
def test_track_options_are_checked_when_the_suite_loads(tmp_path, options, message):
    trace = tmp_path / "t.csv"
    trace.write_text("0,h,0,Read,0,4096,1\n")
    raw = {"name": "checked", "policies": ["slow_only"], "seeds": [0],
           "tracks": [{"name": "real", "configs": ["perf_opt"], "workloads": [str(trace)],
                       "options": options}]}
    with pytest.raises(SuiteError, match=message) as info:
        parse_suite(raw, source="my.json")
    assert str(info.value).startswith("my.json: suite 'checked', track 'real': "), str(info.value)


@requires("torch")
def test_a_learners_seeds_are_independent_runs_on_one_fixed_trace(tmp_path):
    """On a trace file (the same requests for every seed) on perf_opt (no device noise), a
    learner's runs differ only through its own seed: the harness gives each run's seed to the
    policy, so three seeds are three independent runs, not one run three times (whose confidence
    interval would be a false 0). Seed 0 is the policy's default seed."""
    from hss_gym.agents import make_env, make_policy, run_episode
    from hss_gym.workloads import make_trace, save_cache

    path = tmp_path / "fixed.cache"
    save_cache(make_trace("ycsb-b", n=3000, seed=7), path)
    suite = parse_suite({"name": "fixed", "policies": ["sibyl", "hps"], "seeds": [0, 1, 2], "n_requests": 3000,
                         "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": [str(path)]}]})
    recs = [run_job(j) for j in make_jobs(suite)]
    assert all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    lat = {(r["policy"], r["seed"]): r["metrics"]["mean_latency_us"] for r in recs}
    assert len({lat["sibyl", s] for s in (0, 1, 2)}) == 3, lat  # the learner: three different runs
    assert len({lat["hps", s] for s in (0, 1, 2)}) == 1, lat    # a deterministic heuristic: one
    default = make_policy("sibyl")
    res = run_episode(default, make_env(default, "perf_opt", str(path), n_requests=3000), seed=0)
    assert res.metrics.mean_latency_us == lat["sibyl", 0]
    assert make_policy("hps", seed=3).name == "hps"  # a factory without a seed parameter: not given one


# ---------------------------------------------------------------- the problem registry
def _toy_run(job):
    rng = np.random.default_rng(job["seed"])
    skill = {"good": 1.0, "bad": 0.5}[job["policy"]]
    score = skill * job["options"].get("scale", 1.0) + 0.01 * rng.standard_normal()
    return {"metrics": {"score": score}, "steps": 1, "provenance": {"toy": job["workload"]},
            "curves": {"score": [score / 2, score]}}


TOY = Problem(name="toy", title="a toy problem", run_job=_toy_run, policies=lambda: ["good", "bad"],
              metrics=(Metric("score", "score", higher_is_better=True),), learned=frozenset({"good"}),
              description="Higher is better.")


def test_a_problem_outside_the_harness_runs_reports_and_validates(tmp_path):
    assert {"hss"} <= set(list_problems()) and get_problem() is get_problem("hss")
    with pytest.raises(ValueError, match="unknown problem"):
        get_problem("no-such-problem")
    suite = parse_suite({"name": "toy-v1", "problem": f"{__name__}:TOY", "policies": ["bad", "good"],
                         "tracks": [{"name": "t", "configs": ["c"], "workloads": ["w1", "w2"],
                                     "options": {"scale": 2.0}}]})
    with pytest.raises(SuiteError, match="unknown toy policy"):
        parse_suite({**suite.raw, "policies": ["best"]})
    out = tmp_path / "results.jsonl"
    summary = run_jobs(make_jobs(suite), out, workers=1, progress=False)
    assert summary.ok == 12 and not summary.failed
    recs = read_results(out)
    text = rep.markdown_report(recs)
    rows = [line for line in text.splitlines() if line.startswith("| 1 | good") or line.startswith("| 2 | bad")]
    assert len(rows) == 2 and "| 2.00" in rows[0] and "±" in rows[0]  # ranked by score, higher first, with CIs
    assert validate_results(recs, sample=3, allow=[__name__]).passed


def test_trace_hash_depends_on_every_column():
    from hss_gym.workloads import make_trace
    t = make_trace("ycsb-b", n=300, seed=0)
    h = trace_sha256(t)
    assert h == trace_sha256(make_trace("ycsb-b", n=300, seed=0))
    for col in ("time_us", "op", "offset", "size", "stream"):
        a = getattr(t, col).copy()
        a[5] = a[5] + 1 if col != "op" else 1 - a[5]
        t2 = type(t)(*(a if c == col else getattr(t, c) for c in ("time_us", "op", "offset", "size", "stream")))
        assert trace_sha256(t2) != h, col
    assert np.isfinite(t.time_us).all()


def test_results_are_read_from_a_zstd_or_gzip_file_and_a_directory_holding_one(tmp_path):
    """Committed leaderboards keep their results compressed: read_results and results_path take
    results.jsonl.zst / .gz as they take the plain file."""
    import gzip
    import json as _json

    import zstandard

    from hss_gym.benchmarks.results import SCHEMA, read_results, results_path
    recs = [{"schema": SCHEMA, "policy": "p", "seed": s} for s in range(3)]
    text = "".join(_json.dumps(r) + "\n" for r in recs).encode()
    zdir, gdir = tmp_path / "z", tmp_path / "g"
    zdir.mkdir()
    gdir.mkdir()
    (zdir / "results.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    with gzip.open(gdir / "results.jsonl.gz", "wb") as f:
        f.write(text)
    for d in (zdir, gdir):
        assert results_path(d).name.startswith("results.jsonl.")
        assert read_results(results_path(d)) == recs
    assert results_path(tmp_path / "empty") == tmp_path / "empty" / "results.jsonl"
