"""The CLI under misuse: every numeric option checked up front, no
traceback for a user mistake in any subcommand, and one writer per results file (a lock naming
its holder's PID; a resume that never redoes a run another process finished; no mixing of
request counts or suite definitions in one file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hss_gym.benchmarks.results import (ResultsLock, ResultsLocked, SCHEMA, check_compatible, read_results,
                                        results_path)
from hss_gym.benchmarks.runner import make_jobs, run_jobs
from hss_gym.benchmarks.suites import load_suite, with_overrides
from hss_gym.cli import main

SMALL = ["--suite", "quick", "--policies", "random", "--workloads", "ycsb-b", "--configs", "perf_opt",
         "--seeds", "0", "--no-oracle", "--jobs", "1", "--no-report", "-q"]


@pytest.fixture
def junk(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("hello\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "bad.jsonl").write_text("not json\n")
    return tmp_path


# Every bench case is a --dry-run and every replay case tiny: if a check regressed, the command
# would list runs (and the test fail) rather than start a benchmark.
BAD = [
    "bench --n 0 --dry-run", "bench --n -5 --dry-run", "bench --n 1.5 --dry-run", "bench --seeds=-1 --dry-run",
    "bench --seeds a,b --dry-run", "bench --seeds , --dry-run", "bench --jobs 0 --dry-run",
    "bench --jobs -2 --dry-run", "bench --out afile --n 10 --dry-run", "bench --out afile/x --dry-run",
    "bench --suite nope --dry-run", "bench --policies nope --dry-run", "bench --workloads nope --dry-run",
    "bench --configs nope --dry-run", "bench --tracks nope --dry-run", "bench --suite afile --dry-run",
    "convert afile adir", "convert nope x", "convert adir x", "convert afile afile/x", "convert afile x.npz",
    "report nope", "report adir", "report bad.jsonl", "report afile", "report bad.jsonl --out afile",
    "validate nope", "validate adir", "validate bad.jsonl", "validate adir --sample 0", "validate adir --sample -1",
    "validate adir --rtol nan", "validate adir --rtol -1", "validate adir --seed -1", "validate adir --jobs 0",
    "validate adir --jobs -1",
    "replay --n 0 --config perf_opt", "replay --n -1 --config perf_opt", "replay --seed -3 --n 100 --config perf_opt",
    "replay --workload nope", "replay --config nope", "replay --out afile --n 100 --config perf_opt",
    "list nope",
    "calibrate --device x --out adir", "calibrate --device x --out y --size-mb 0",
    "calibrate --device x --out y --seconds inf", "calibrate --device x --out y --seconds -1",
    "calibrate --device x --out y --block-sizes 4,a", "calibrate --device x --out y --queue-depths 0",
    "calibrate --device x --out y --rpm nan", "calibrate --device x --out nodir/y",
    "clean --nope", "nope", "",
]


@pytest.mark.parametrize("cmd", BAD)
def test_bad_arguments_give_a_message_not_a_traceback(cmd: str, junk: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(junk)
    try:
        rc = main(cmd.split())
    except SystemExit as e:  # argparse: usage error
        rc = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert rc not in (0, None), (cmd, out, err)
    assert "error" in err.lower() or "refused" in (out + err).lower(), (cmd, out, err)
    assert not (junk / "x").exists() and not (junk / "y").exists()


@pytest.mark.parametrize("cmd", ["bench --n 0 --dry-run", "convert afile adir", "bench --out afile --dry-run"])
def test_bad_arguments_in_a_real_process(cmd: str, junk: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "hss_gym.cli", *cmd.split()], cwd=junk, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout and "error" in r.stderr


# ------------------------------------------------------------------------------ one writer

def _holder(path: Path, then: str = "time.sleep(60)") -> subprocess.Popen[str]:
    """A process holding the results lock of ``path`` (prints "ready" once it holds it)."""
    code = textwrap.dedent(f"""
        import json, sys, time
        from hss_gym.benchmarks.results import ResultsLock, append_record, open_for_append
        with ResultsLock({str(path)!r}):
            print("ready", flush=True)
            {then}
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def _jobs(n: int = 200) -> list[dict]:
    suite = with_overrides(load_suite("quick"), policies=["random"], workloads=["ycsb-b"], configs=["perf_opt"],
                           seeds=[0], n_requests=n, oracle=False)
    return make_jobs(suite)


def test_second_bench_is_refused_naming_the_pid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    holder = _holder(results_path(out))
    try:
        rc = main(["bench", "--out", str(out), "--n", "200", *SMALL])
        err = capsys.readouterr().err
        assert rc == 2 and f"PID {holder.pid}" in err and "--wait" in err
        assert not results_path(out).exists()  # nothing was run or written
        with pytest.raises(ResultsLocked, match=f"PID {holder.pid}"):
            run_jobs(_jobs(), results_path(out), workers=1, progress=False)
    finally:
        holder.kill()
        holder.wait()
    with ResultsLock(results_path(out)):  # released by the kernel when its holder died (SIGKILL)
        pass


def test_resume_never_redoes_a_run_another_process_finished(tmp_path: Path) -> None:
    rpath = results_path(tmp_path / "out")
    job = _jobs()[0]
    rec = {"schema": SCHEMA, "status": "ok", **job, "metrics": {}, "provenance": {"hss_gym_version": "x"}}
    # the other process finishes the run one second after we start waiting for it
    holder = _holder(rpath, then=f"time.sleep(1); fd = open_for_append({str(rpath)!r}); "
                                 f"append_record(fd, json.loads({json.dumps(json.dumps(rec))}))")
    waited = []
    try:
        summary = run_jobs([job], rpath, resume=True, workers=1, progress=False, wait=True)
        waited.append(True)
    finally:
        holder.wait(timeout=60)
    assert waited and summary.skipped == 1 and summary.ok == 0 and not summary.failed
    assert len(read_results(rpath)) == 1


REPLAY = ["replay", "--workload", "ycsb-b", "--config", "perf_opt", "--n", "300", "--quiet"]


def test_replay_takes_the_results_lock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two replays on one --out: the second is refused naming the writer's PID (or waits), so no
    record is written twice."""
    out = tmp_path / "out"
    holder = _holder(out / "results.jsonl")
    try:
        assert main([*REPLAY, "--out", str(out)]) == 2
        assert f"PID {holder.pid}" in capsys.readouterr().err
        assert not (out / "results.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    holder = _holder(out / "results.jsonl", then="time.sleep(1)")
    try:
        assert main([*REPLAY, "--out", str(out), "--wait"]) == 0
    finally:
        holder.wait(timeout=60)
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


def test_replay_resume_repairs_the_last_line(tmp_path: Path) -> None:
    """A replay after an interrupted one: a line cut short is removed and its run done again (the
    next record is not glued onto it); a whole last record without its newline is kept."""
    out = tmp_path / "out"
    assert main([*REPLAY, "--out", str(out)]) == 0
    rpath = out / "results.jsonl"
    lines = rpath.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    rpath.write_bytes(b"".join(lines[:2]) + lines[2][:20])
    with pytest.warns(UserWarning, match="partial last line"):
        assert main([*REPLAY, "--out", str(out)]) == 0
    assert rpath.read_bytes() == b"".join(lines)
    rpath.write_bytes(b"".join(lines).rstrip(b"\n"))
    assert main([*REPLAY, "--out", str(out)]) == 0
    assert rpath.read_bytes() == b"".join(lines)


def test_lock_is_reentrant_in_one_process_and_records_the_pid(tmp_path: Path) -> None:
    rpath = results_path(tmp_path)
    lock = ResultsLock(rpath)
    with lock:
        assert lock.holder() == os.getpid()
        with ResultsLock(rpath):  # run_jobs inside a bench that holds the lock
            pass
        assert lock.holder() == os.getpid()
    assert lock.holder() is None


def test_results_file_refuses_another_request_count_or_suite(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rpath = results_path(out)
    out.mkdir()
    job = _jobs(200)[0]
    rpath.write_text(json.dumps({"schema": SCHEMA, "status": "ok", **job, "metrics": {},
                                 "provenance": {"hss_gym_version": __import__("hss_gym").__version__}}) + "\n")
    with pytest.raises(ValueError, match="with 200 requests; this bench asks for 300"):
        check_compatible(rpath, _jobs(300))
    with pytest.raises(ValueError, match="another suite definition"):
        check_compatible(rpath, [{**j, "suite_digest": "0" * 16} for j in _jobs(200)])
    check_compatible(rpath, _jobs(200))
    with pytest.raises(ValueError, match="300"):
        run_jobs(_jobs(300), rpath, workers=1, progress=False)
    rc = main(["bench", "--out", str(out), "--n", "300", "--resume", *SMALL])
    err = capsys.readouterr().err
    assert rc == 2 and "with 200 requests; this bench asks for 300" in err
    assert len(read_results(rpath)) == 1


def test_run_jobs_checks_workers(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        run_jobs(_jobs(), results_path(tmp_path), workers=0)
