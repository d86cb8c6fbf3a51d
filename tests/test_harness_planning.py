"""What ``hss-gym bench``, ``report`` and ``validate`` decide before running anything, in the
harness modules: which jobs a bench runs into an existing results file (``--resume``/``--fresh``),
the declared training set, Ray or local processes, the policies whose extra is missing, the
results files named on the command line, output directories, and validate's sampling."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from hss_gym.benchmarks.results import check_out_dir, gather_results, job_key, SCHEMA
from hss_gym.benchmarks.runner import declare_training, jobs_to_run, make_jobs, start_method, wants_ray
from hss_gym.benchmarks.suites import load_suite, with_overrides, without_missing_extras
from hss_gym.benchmarks.validate import sampling


@pytest.fixture
def jobs() -> list[dict]:
    suite = with_overrides(load_suite("quick"), policies=["random"], workloads=["ycsb-b"], configs=["perf_opt"],
                           seeds=[0], n_requests=500)
    return make_jobs(suite)


def _ok_record(job: dict, version: str | None = None) -> dict:
    from hss_gym._version import __version__
    return {"schema": SCHEMA, "status": "ok", **job, "metrics": {},
            "provenance": {"hss_gym_version": version or __version__}}


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_jobs_to_run_refuses_a_file_with_runs_unless_resume_or_fresh(tmp_path: Path, jobs: list[dict]) -> None:
    rpath = tmp_path / "results.jsonl"
    assert jobs_to_run(jobs, rpath, resume=False, fresh=False, dry_run=False, say=print) == jobs  # no file yet
    _write(rpath, [_ok_record(jobs[0])])
    with pytest.raises(ValueError, match="already holds 1 runs: pass --resume"):
        jobs_to_run(jobs, rpath, resume=False, fresh=False, dry_run=False, say=print)
    assert jobs_to_run(jobs, rpath, resume=False, fresh=False, dry_run=True, say=print) == jobs
    assert rpath.exists()
    assert jobs_to_run(jobs, rpath, resume=False, fresh=True, dry_run=True, say=print) == jobs
    assert rpath.exists(), "a dry run deleted the results file"


def test_resume_runs_only_the_missing_jobs_and_fresh_discards_the_file(tmp_path: Path, jobs: list[dict]) -> None:
    rpath = tmp_path / "results.jsonl"
    _write(rpath, [_ok_record(jobs[0])])
    todo = jobs_to_run(jobs, rpath, resume=True, fresh=False, dry_run=False, say=print)
    assert [job_key(j) for j in todo] == [job_key(j) for j in jobs[1:]] and len(jobs) > 1
    assert jobs_to_run(jobs, rpath, resume=False, fresh=True, dry_run=False, say=print) == jobs
    assert not rpath.exists()


def test_resume_sets_aside_a_file_of_another_version_and_says_so(tmp_path: Path, jobs: list[dict]) -> None:
    rpath = tmp_path / "results.jsonl"
    _write(rpath, [_ok_record(jobs[0], version="0.0.1")])
    said: list[str] = []
    todo = jobs_to_run(jobs, rpath, resume=True, fresh=False, dry_run=False, say=said.append)
    assert todo == jobs and not rpath.exists()
    assert len(said) == 1 and "another hss-gym version" in said[0] and "starting over" in said[0]
    assert len(list(tmp_path.glob("results*"))) == 1  # the set-aside file


def test_resume_refuses_runs_of_another_request_count(tmp_path: Path, jobs: list[dict]) -> None:
    rpath = tmp_path / "results.jsonl"
    _write(rpath, [_ok_record({**jobs[0], "n_requests": 999})])
    with pytest.raises(ValueError):
        jobs_to_run(jobs, rpath, resume=True, fresh=False, dry_run=False, say=print)


def test_declared_training_goes_to_the_named_policies_only(jobs: list[dict]) -> None:
    assert {j["policy"] for j in jobs} > {"random"}  # the references the bench adds
    declare_training(jobs, "  train ", ["random"])
    assert {j["policy"]: j.get("trained_on") for j in jobs}["random"] == "train"
    assert all("trained_on" not in j for j in jobs if j["policy"] != "random")
    with pytest.raises(ValueError, match="name them"):
        declare_training(jobs, "train", None)
    with pytest.raises(ValueError, match="must describe a training set"):
        declare_training(jobs, "  ", ["random"])


def test_ray_when_asked_or_when_ray_address_is_set_and_local_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert (wants_ray(False, False), wants_ray(True, False), wants_ray(True, True)) == (False, True, True)
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    assert (wants_ray(False, False), wants_ray(False, True)) == (True, False)


def test_policies_whose_extra_is_missing_are_left_out_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import hss_gym.benchmarks.suites as suites
    suite = load_suite("quick")
    monkeypatch.setattr(suites, "missing_extra", lambda spec: "needs torch" if spec == "random" else None)
    kept, missing = without_missing_extras(suite)
    assert missing == {"random": "needs torch"}
    assert kept.policies == tuple(p for p in suite.policies if p != "random") and "random" in suite.policies
    monkeypatch.setattr(suites, "missing_extra", lambda spec: None)
    assert without_missing_extras(suite) == (suite, {})


def test_gather_results_reads_files_and_bench_directories_and_names_what_is_missing(tmp_path: Path,
                                                                                      jobs: list[dict]) -> None:
    (tmp_path / "a").mkdir()
    _write(tmp_path / "a" / "results.jsonl", [_ok_record(jobs[0])])
    _write(tmp_path / "b.jsonl", [_ok_record(jobs[1]), _ok_record(jobs[2])])
    records, files = gather_results([str(tmp_path / "a"), str(tmp_path / "b.jsonl")])
    assert files == [tmp_path / "a" / "results.jsonl", tmp_path / "b.jsonl"]
    assert [job_key(r) for r in records] == [job_key(j) for j in jobs[:3]]
    with pytest.raises(FileNotFoundError, match="give a results.jsonl or the bench output directory"):
        gather_results([str(tmp_path / "nowhere")])


def test_an_output_directory_below_a_file_is_refused_with_the_option(tmp_path: Path) -> None:
    check_out_dir(tmp_path / "new" / "deeper", "--out")  # not there yet: fine
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match=r"^--out .*: .*f exists and is not a directory$"):
        check_out_dir(tmp_path / "f" / "sub", "--out")


def test_validate_samples_one_run_per_cell_unless_told_otherwise() -> None:
    assert sampling(False, None) == (None, True)
    assert sampling(False, 5) == (5, False)
    assert sampling(True, None) == sampling(True, 5) == (None, False)



def test_workers_fork_only_from_a_single_threaded_process():
    """A pool worker forked while another thread holds a lock (a C51 agent's background trainer
    still at work after an earlier episode, in malloc) waits for it forever: the bench hung so in CI.
    The runner forks only from a process with one thread (native threads counted) and no torch."""
    release = threading.Event()
    t = threading.Thread(target=release.wait)
    t.start()
    try:
        assert start_method() == "spawn"
    finally:
        release.set()
        t.join()
    single = sys.platform.startswith("linux") and len(os.listdir("/proc/self/task")) == 1
    if single and "torch" not in sys.modules:
        assert start_method() == "fork"
