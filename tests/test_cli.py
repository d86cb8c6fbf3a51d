"""The ``hss-gym`` command line: bench / report / validate / list / convert / calibrate.

Runs go through ``hss_gym.cli.main`` in-process with tiny budgets (2,000 requests) and the
built-in heuristics only.
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from hss_gym import cli
from hss_gym.benchmarks.results import read_results

TINY = ["--suite", "quick", "--policies", "random", "--no-oracle", "--workloads", "ycsb-b,lun2",
        "--configs", "perf_opt", "--n", "2000", "--jobs", "2", "--seeds", "0", "--quiet"]


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "quick"
    assert cli.main(["bench", *TINY, "--out", str(out)]) == 0
    return out


def test_help_of_every_command(capsys):
    for argv in (["--help"], ["bench", "--help"], ["report", "--help"], ["validate", "--help"],
                 ["list", "--help"], ["convert", "--help"], ["replay", "--help"], ["calibrate", "--help"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 0, argv
    out = capsys.readouterr().out
    for word in ("bench", "report", "validate", "list", "convert", "calibrate", "--resume", "--ray", "exact"):
        assert word in out, word


def test_bench_writes_results_reports_and_prints_the_table(bench_dir, capsys):
    recs = read_results(bench_dir / "results.jsonl")
    assert sorted((r["workload"], r["policy"]) for r in recs) == [
        ("lun2", "fast_only"), ("lun2", "random"), ("ycsb-b", "fast_only"), ("ycsb-b", "random")]
    assert all(r["status"] == "ok" for r in recs)
    assert (bench_dir / "report.md").exists() and (bench_dir / "report.html").exists()
    assert "hss-gym bench --suite quick" in (bench_dir / "report.md").read_text()


def test_bench_refuses_to_mix_with_earlier_results_unless_resume(bench_dir, capsys):
    assert cli.main(["bench", *TINY, "--out", str(bench_dir)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert cli.main(["bench", *TINY, "--out", str(bench_dir), "--resume", "--no-report"]) == 0
    assert len(read_results(bench_dir / "results.jsonl")) == 4  # nothing re-run
    out = capsys.readouterr().out
    assert "| ref | fast_only | 1.00 |" in out


def test_resume_sets_aside_runs_of_another_version(bench_dir, tmp_path, capsys):
    """Runs of an older hss-gym (another simulator or agents) are not resumed into: the file is
    moved aside (nothing lost) and the bench starts over with this version."""
    from hss_gym import __version__

    out = tmp_path / "quick"
    out.mkdir()
    old = [json.loads(line) for line in (bench_dir / "results.jsonl").read_text().splitlines()]
    for r in old:
        r["provenance"]["hss_gym_version"] = "0.0.1"
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    capsys.readouterr()
    assert cli.main(["bench", *TINY[:-1], "--out", str(out), "--resume", "--no-report"]) == 0
    assert "another hss-gym version" in capsys.readouterr().err
    aside = out / "results.hss-gym-0.0.1.jsonl"
    assert [json.loads(x) for x in aside.read_text().splitlines()] == old
    new = read_results(out / "results.jsonl")
    assert len(new) == 4 and {r["provenance"]["hss_gym_version"] for r in new} == {__version__}
    assert cli.main(["bench", *TINY, "--out", str(out), "--resume", "--no-report"]) == 0  # same version: kept
    assert len(read_results(out / "results.jsonl")) == 4 and not (out / "results.hss-gym-0.0.1.2.jsonl").exists()


def test_bench_dry_run_lists_jobs(capsys, tmp_path):
    assert cli.main(["bench", *TINY, "--out", str(tmp_path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all("perf_opt" in x for x in lines)


def test_bench_leaves_out_policies_whose_extra_is_missing(capsys, tmp_path, monkeypatch):
    """On a core install (no PyTorch, no scikit-learn) the suite's own policy list runs without the
    policies that need them, saying so; naming one with --policies is refused up front."""
    for module in ("torch", "sklearn"):
        monkeypatch.setitem(sys.modules, module, None)
    assert cli.main(["bench", "--suite", "quick", "--workloads", "ycsb-b", "--configs", "perf_opt", "--n", "300",
                     "--out", str(tmp_path), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "left out (5 of 21 policies" in err and "k_svm needs sklearn" in err and "rnn_hss needs torch" in err
    ran = {line.split("\t")[3] for line in out.strip().splitlines()}
    assert {"harmonia", "sibyl", "sapm", "hps"} <= ran and not ran & {"archivist", "k_svm", "rnn_hss"}
    assert cli.main(["bench", "--suite", "quick", "--policies", "harmonia,rnn_hss", "--n", "300",
                     "--out", str(tmp_path)]) == 2
    assert "--policies: not installed here: rnn_hss needs torch" in capsys.readouterr().err


def test_failed_runs_are_reported_with_exit_status_3(tmp_path, capsys):
    rc = cli.main(["bench", "--suite", "quick", "--policies", "no_such_mod_abc:make", "--no-oracle",
                   "--workloads", "ycsb-b", "--configs", "perf_opt", "--n", "1000", "--jobs", "1", "--seeds", "0",
                   "--quiet", "--no-figures", "--out", str(tmp_path)])
    assert rc == 3
    err = capsys.readouterr().err
    assert "1 run(s) failed" in err and "no_such_mod_abc" in err
    assert "Failed runs" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("argv,valid", [
    (["bench", "--policies", "harmonai"], "fast_only, slow_only"),
    (["bench", "--suite", "quik"], "quick, real"),
    (["bench", "--workloads", "ycsb-z"], "lun0, lun1"),
    (["bench", "--configs", "perf"], "perf_opt, cost_opt"),
    (["bench", "--tracks", "nope"], "perf_opt, cost_opt"),
    (["bench", "--suite", "real"], "--traces DIR"),
])
def test_unknown_names_list_the_valid_ones(argv, valid, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hss-gym: error:") and valid in err, err


def test_list(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("ycsb-b", "mix6", "perf_opt", "quad", "fast_only", "harmonia", "hss-bench-v1", "quick", "real"):
        assert word in out, word
    assert cli.main(["list", "suites"]) == 0
    assert "perf_opt" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["list", "nonsense"])
    assert "invalid choice" in capsys.readouterr().err


def test_report_and_validate_commands(bench_dir, tmp_path, capsys):
    assert cli.main(["report", str(bench_dir), "--out", str(tmp_path), "--no-figures", "--quiet"]) == 0
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert cli.main(["validate", str(bench_dir / "results.jsonl"), "--all", "--quiet"]) == 0
    assert "PASSED" in capsys.readouterr().out

    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    recs[1]["metrics"]["p99_latency_us"] += 1.0
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli.main(["validate", str(bad), "--all", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.out and "MISMATCH" in captured.out and "p99_latency_us" in captured.out

    recs[1]["provenance"]["hss_gym_version"] = "9.9.9"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli.main(["validate", str(bad), "--quiet"]) == 1
    assert "REFUSED" in capsys.readouterr().out
    assert cli.main(["report", str(tmp_path / "missing")]) == 2


def test_calibrate_missing_module_gives_a_clear_error(monkeypatch, capsys):
    import hss_gym.backends
    monkeypatch.setitem(sys.modules, "hss_gym.backends.calibrate", None)  # import fails
    monkeypatch.delattr(hss_gym.backends, "calibrate", raising=False)
    assert cli.main(["calibrate", "--device", "/dev/null"]) == 2
    assert "calibrate is not available" in capsys.readouterr().err


def test_calibrate_dispatches_to_the_backend_module(monkeypatch):
    mod = types.ModuleType("hss_gym.backends.calibrate")
    seen = {}

    def add_calibrate_arguments(p):
        p.add_argument("path")

    def run_calibrate(args):
        seen["path"] = args.path
        return 0
    mod.add_calibrate_arguments, mod.run_calibrate = add_calibrate_arguments, run_calibrate
    import hss_gym.backends
    monkeypatch.setitem(sys.modules, "hss_gym.backends.calibrate", mod)
    monkeypatch.setattr(hss_gym.backends, "calibrate", mod, raising=False)
    assert cli.main(["calibrate", "/tmp/x"]) == 0 and seen == {"path": "/tmp/x"}


def test_convert(tmp_path, capsys):
    from hss_gym.workloads import load_trace, make_trace, save_cache
    src = tmp_path / "t.hsst"
    save_cache(make_trace("lun1", n=300, seed=0), src)
    assert cli.main(["convert", str(src), str(tmp_path / "u.hsst")]) == 0
    assert len(load_trace(tmp_path / "u.hsst")) == 300


def test_convert_never_destroys_its_source_or_an_existing_file(tmp_path, capsys):
    """SRC and DST the same file (also through a symlink or a hard link) is refused; an existing
    DST is replaced only with --force; the cache is written through a temporary file and a rename
    (nothing at DST after a failure) with the mode a plain open() gives."""
    import os

    from hss_gym.workloads import load_trace
    src = tmp_path / "t.csv"
    text = "".join(f"{128166372003061629 + i * 1000},hm,1,Read,{i * 4096},4096,100\n" for i in range(50))  # MSR
    src.write_text(text)
    os.symlink(src, tmp_path / "link.csv")
    os.link(src, tmp_path / "hard.csv")
    for same in (src, tmp_path / "link.csv", tmp_path / "hard.csv", tmp_path / "." / "t.csv"):
        assert cli.main(["convert", str(src), str(same), "--force"]) == 2
        assert "same file" in capsys.readouterr().err
        assert src.read_text() == text
    dst = tmp_path / "t.hsst"
    dst.write_text("keep me")
    assert cli.main(["convert", str(src), str(dst)]) == 2
    assert "--force" in capsys.readouterr().err and dst.read_text() == "keep me"
    old = os.umask(0o022)
    try:
        assert cli.main(["convert", str(src), str(dst), "--force"]) == 0
        assert len(load_trace(dst)) == 50 and (dst.stat().st_mode & 0o777) == 0o644
        assert cli.main(["convert", str(src), str(tmp_path / "new.hsst")]) == 0
        assert (tmp_path / "new.hsst").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace(",4096,4096,", ",x,4096,"))
    before = sorted(os.listdir(tmp_path))
    assert cli.main(["convert", str(bad), str(tmp_path / "bad.hsst")]) == 2
    assert sorted(os.listdir(tmp_path)) == before  # no DST, no temporary file


def test_validate_checks_every_cell_with_a_fresh_printed_seed(bench_dir, capsys):
    """By default validate re-runs one run of every (policy, workload, configuration) cell, drawn
    with a fresh seed it prints; --seed repeats a draw. A file edited in any cell fails."""
    import re as _re

    from hss_gym.benchmarks.validate import validate_results
    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    cells = {(r["policy"], r["workload"], r["config"]) for r in recs if r["status"] == "ok"}
    seeds = set()
    for _ in range(2):
        assert cli.main(["validate", str(bench_dir / "results.jsonl"), "--quiet"]) == 0
        out = capsys.readouterr().out
        seeds.add(int(_re.search(r"sample seed (\d+)", out).group(1)))
        assert f"PASSED: {len(cells)} of " in out
    assert len(seeds) == 2  # fresh each time
    rep = validate_results(recs, seed=7, per_cell=True)
    assert len(rep.checks) == len(cells)
    assert {(c.record["policy"], c.record["workload"], c.record["config"]) for c in rep.checks} == cells
    again = validate_results(recs, seed=7, per_cell=True)
    assert [c.record["seed"] for c in rep.checks] == [c.record["seed"] for c in again.checks]


def test_validate_runs_no_code_the_results_file_names_unless_allowed(bench_dir, tmp_path, monkeypatch, capsys):
    """validate re-runs built-in policies freely; a 'module:factory' policy or 'module:attribute'
    problem only with --allow of its package, and never from the current folder or the results
    file's (as under `python -m`, which puts the current folder first on sys.path). The runs it may
    not re-run are listed as not validated, and the exit status (4) says it is incomplete."""
    import os
    import tempfile

    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    rand = [r for r in recs if r["policy"] == "random"]
    sub, lib, scratch = tmp_path / "submission", tmp_path / "lib", tmp_path / "scratch"
    for d in (sub, lib / "goodpkg", scratch):
        d.mkdir(parents=True)
    marker = tmp_path / "imported"
    (sub / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').close()\nmake = PROBLEM = None\n")
    (lib / "goodpkg" / "__init__.py").write_text("from hss_gym.agents.heuristics import RandomPolicy as make\n")

    def named(policy, problem=None, seed=None):
        r = json.loads(json.dumps(rand[0]))
        r["policy"] = policy
        if problem:
            r["problem"], r["seed"] = problem, seed
        return r
    hostile = [named("tempfile:mkdtemp"), named("os:system"), named("this:x"), named("evilmod:make"),
               named("random", problem="evilmod:PROBLEM", seed=5)]
    good = [{**json.loads(json.dumps(r)), "policy": "goodpkg:make"} for r in rand]
    results = sub / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in recs + good + hostile))
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(sub)
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.syspath_prepend("")
    for mod in ("this", "evilmod", "goodpkg"):
        monkeypatch.delitem(sys.modules, mod, raising=False)

    assert cli.main(["validate", "results.jsonl", "--all", "--quiet"]) == cli.EXIT_INCOMPLETE
    out = capsys.readouterr().out
    for spec, module in (("tempfile:mkdtemp", "tempfile"), ("os:system", "os"), ("this:x", "this"),
                         ("evilmod:make", "evilmod"), ("problem evilmod:PROBLEM", "evilmod"),
                         ("goodpkg:make", "goodpkg")):
        assert f"{spec}: would import {module}: not run" in out and f"--allow {module}" in out
    assert "random: built-in" in out and "fast_only: built-in" in out
    assert out.count("NOT VALIDATED") == len(good) + len(hostile)
    assert "INCOMPLETE: 4 of 11 runs re-run" in out and "7 not validated" in out
    assert not called and not os.listdir(scratch) and not marker.exists() and "this" not in sys.modules
    assert sys.path[0] == ""  # put back

    assert cli.main(["validate", "results.jsonl", "--all", "--quiet", "--allow", "goodpkg,evilmod"]) == 4
    out = capsys.readouterr().out
    assert f"goodpkg:make: imports goodpkg (from {lib}; allowed)" in out
    assert "evilmod:make: would import evilmod: not run, module 'evilmod' is not installed" in out
    assert "INCOMPLETE: 6 of 11 runs re-run" in out and "6 ok" in out and not marker.exists()

    results.write_text("".join(json.dumps(r) + "\n" for r in recs + good))
    assert cli.main(["validate", "results.jsonl", "--all", "--quiet", "--allow", "goodpkg"]) == 0
    assert "PASSED: 6 of 6 runs re-run" in capsys.readouterr().out
    assert cli.main(["validate", "results.jsonl", "--all", "--quiet"]) == 4


def test_validate_under_python_m_imports_nothing_beside_the_results(bench_dir, tmp_path):
    """`python -m hss_gym.cli validate`, run in a submission's folder, does not import a module
    lying there, even allowed."""
    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    marker = tmp_path / "imported"
    (tmp_path / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').close()\nmake = None\n")
    recs[0]["policy"] = "evilmod:make"
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    import subprocess
    run = subprocess.run([sys.executable, "-m", "hss_gym.cli", "validate", "results.jsonl", "--all", "--quiet",
                          "--allow", "evilmod"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 4, run.stdout + run.stderr
    assert "not installed" in run.stdout and not marker.exists()


def test_validate_in_parallel_and_by_track(bench_dir, tmp_path, capsys):
    """--jobs N re-runs in N processes and still pins each difference on its own run; --tracks
    keeps the runs of those tracks, and a track the file does not have is refused by name."""
    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    ok = [r for r in recs if r["status"] == "ok"]
    track = ok[0]["track"]
    assert cli.main(["validate", str(bench_dir), "--tracks", track, "--jobs", "2", "--all", "--quiet"]) == 0
    assert f"PASSED: {sum(r['track'] == track for r in ok)} of " in capsys.readouterr().out

    victim = ok[-1]
    victim["metrics"]["mean_latency_us"] *= 1.5
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli.main(["validate", str(bad), "--all", "--jobs", "2", "--quiet"]) == 1
    out = capsys.readouterr().out
    mism = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    assert len(mism) == 1 and "mean_latency_us" in mism[0], out
    assert f"{victim['policy']} on {victim['workload'].rsplit('/', 1)[-1]} / {victim['config']} " in mism[0]
    assert "1 mismatched" in out

    assert cli.main(["validate", str(bench_dir), "--tracks", "nope", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "REFUSED: no successful runs of track(s) nope" in out and track in out


def test_report_imports_no_problem_the_results_name_unless_allowed(bench_dir, tmp_path, monkeypatch, capsys):
    """report builds tables only, but a record's 'module:attribute' problem is imported to read
    it: under validate's rules (the same --allow gate and messages), never from the current folder
    or the results file's; a refused one writes no report. Policy specs are only names here."""
    recs = [json.loads(x) for x in (bench_dir / "results.jsonl").read_text().splitlines()]
    sub, lib = tmp_path / "submission", tmp_path / "lib"
    for d in (sub, lib / "goodpkg"):
        d.mkdir(parents=True)
    marker = tmp_path / "imported"
    (sub / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').close()\nPROBLEM = None\n")
    (lib / "goodpkg" / "__init__.py").write_text("from hss_gym.benchmarks.problems.hss import PROBLEM\n")
    ok = [r for r in recs if r["status"] == "ok"]

    def named(problem, policy="random"):
        return {**json.loads(json.dumps(ok[0])), "problem": problem, "policy": policy, "seed": 7}
    results = sub / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in recs + [
        named("evilmod:PROBLEM"), named("this:x"), named("hss", policy="os:system")]))
    monkeypatch.chdir(sub)
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.syspath_prepend("")
    for mod in ("this", "evilmod", "goodpkg"):
        monkeypatch.delitem(sys.modules, mod, raising=False)

    assert cli.main(["report", "results.jsonl", "--quiet", "--no-figures"]) == 2
    err = capsys.readouterr().err
    for spec, module in (("problem evilmod:PROBLEM", "evilmod"), ("problem this:x", "this")):
        assert f"{spec}: would import {module}: not run, imports {module!r}, code the results file " \
               f"names: pass --allow {module}" in err, err
    assert "os:system" not in err  # a policy is a name in a table, never imported by report
    assert not marker.exists() and "this" not in sys.modules and not (sub / "report.md").exists()
    assert cli.main(["report", "results.jsonl", "--quiet", "--no-figures", "--allow", "evilmod"]) == 2
    assert f"module 'evilmod' is not installed (report never imports from the current folder" \
           in capsys.readouterr().err and not marker.exists()
    assert sys.path[0] == ""  # put back

    results.write_text("".join(json.dumps(r) + "\n" for r in recs + [named("goodpkg:PROBLEM")]))
    assert cli.main(["report", "results.jsonl", "--quiet", "--no-figures", "--allow", "goodpkg"]) == 0
    assert f"report: problem goodpkg:PROBLEM: imports goodpkg (from {lib}; allowed)" in capsys.readouterr().out
    assert (sub / "report.md").exists()


def test_validate_reads_moved_trace_files_from_traces_dir(tmp_path, capsys):
    """Results name trace files by the paths of the machine that ran them; elsewhere, --traces DIR
    re-runs them from DIR by file name (the trace hashes check it is the same file), and without
    it the refusal says so."""
    ran, moved = tmp_path / "ran", tmp_path / "moved"
    ran.mkdir()
    trace = ran / "t.csv"
    trace.write_text("time_us,op,offset_bytes,size_bytes\n" + "".join(
        f"{10 * i},{'w' if i % 3 else 'r'},{4096 * (i % 64)},4096\n" for i in range(400)))
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "files", "policies": ["slow_only", "fit_first"], "seeds": [0], "n_requests": 400,
                                 "tracks": [{"name": "t", "configs": ["perf_opt"], "workloads": [str(trace)],
                                             "options": {"format": "csv", "columns": {
                                                 "time": "time_us", "op": "op", "offset": "offset_bytes",
                                                 "size": "size_bytes"}}}]}))
    out = tmp_path / "out"
    assert cli.main(["bench", "--suite", str(suite), "--out", str(out), "--no-report", "--quiet"]) == 0
    ran.rename(moved)
    assert cli.main(["validate", str(out), "--all", "--quiet"]) == 1
    text = capsys.readouterr().out
    assert "the trace file is not here: --traces DIR reads it from DIR/t.csv" in text and "3 refused" in text  # the two policies and the Oracle
    assert cli.main(["validate", str(out), "--all", "--quiet", "--traces", str(moved)]) == 0
    assert "PASSED: 3 of 3 runs re-run" in capsys.readouterr().out
    (moved / "t.csv").write_text((moved / "t.csv").read_text().replace("\n0,r,", "\n1,r,", 1))
    assert cli.main(["validate", str(out), "--all", "--quiet", "--traces", str(moved)]) == 1
    assert "trace hash mismatch" in capsys.readouterr().out
