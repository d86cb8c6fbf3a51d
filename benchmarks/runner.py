"""Run a suite: expand it into jobs, run them in parallel, append one result record per job.

One job = one fresh policy instance + one episode (learning policies learn online during the
episode) on one (track, workload, configuration, seed), run by the suite's problem
(:mod:`hss_gym.benchmarks.problems`). :func:`run_job` is a plain function of a
JSON-able job dict, so the same jobs run

* locally in a process pool (default; ``workers`` processes, one thread each), or
* on a Ray cluster (``use_ray=True``, or the ``RAY_ADDRESS`` environment variable via the CLI):
  each job is a Ray task (``num_cpus=1``); Ray does the scheduling, retries and placement.
  An already initialised Ray (``ray.init(...)`` by the caller, e.g. with a ``runtime_env``) is
  used as is. Every node needs hss-gym and the policies' packages installed.

The parent process is the only writer of the results file, and holds its lock
(:func:`~hss_gym.benchmarks.results.writing`) from choosing the runs to do to the last record:
another bench on the same file is refused (or waits). A record is appended (atomically, see
:mod:`hss_gym.benchmarks.results`) as soon as its job ends, so a killed bench loses only the runs
in flight, and ``resume=True`` runs only the jobs without an ``ok`` record. A job that fails (a
policy that does not import, raises, or returns invalid actions) is recorded with
``status: "failed"`` and its error, and the others continue.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from hss_gym._version import __version__

from hss_gym.benchmarks.problems import get_problem
from hss_gym.benchmarks.results import (append_record, base_provenance, check_compatible, completed_keys, git_revision,
                                        job_key, now_utc, open_for_append, read_results, SCHEMA, set_aside_other_versions,
                                        writing)
from hss_gym.benchmarks.suites import Suite

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def make_jobs(suite: Suite) -> list[dict[str, Any]]:
    """Every job of a suite, grouped by (workload, seed) so workers reuse what they can."""
    jobs = []
    for t in suite.tracks:
        for w in t.workloads:
            for seed in t.seeds:
                for c in t.configs:
                    for p in suite.policies:
                        job = {"suite": suite.name, "problem": suite.problem, "track": t.name, "workload": w,
                               "config": c, "policy": p, "seed": int(seed), "n_requests": t.n_requests,
                               "suite_digest": suite.digest()}
                        if t.options:
                            job["options"] = t.options
                        jobs.append(job)
    return jobs


def _single_thread() -> None:
    for v in _THREAD_VARS:
        os.environ.setdefault(v, "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.set_num_threads(1)
        except Exception:  # pragma: no cover
            pass


def start_method() -> str:
    """How the pool's workers start: ``fork`` (fastest) only where it is safe, ``spawn`` otherwise.
    A child forked while another thread of this process holds a lock (malloc's, while a C51 agent's
    background trainer of an earlier episode in this process is still at work; torch's OpenMP pool)
    waits for that lock forever, so fork needs this process to have one thread (``/proc/self/task``
    counts native threads too) and no torch."""
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return "spawn"
    try:
        return "fork" if len(os.listdir("/proc/self/task")) == 1 else "spawn"
    except OSError:  # pragma: no cover - no procfs
        return "spawn"


def _worker_init(parent: int) -> None:
    """Pool worker start-up: one thread, and die with the parent (a killed bench must not leave
    orphan workers running queued jobs; Linux PR_SET_PDEATHSIG)."""
    _single_thread()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no glibc
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job with its problem's ``run_job``; always returns a record (``status`` "ok", or
    "failed" with ``error``)."""
    _single_thread()
    rec: dict[str, Any] = {"schema": SCHEMA, "status": "failed", **{k: v for k, v in job.items()
                                                                   if k != "provenance"}}
    prov = {**base_provenance(), **{k: v for k, v in (job.get("provenance") or {}).items()
                                    if k == "git_revision" and v}}
    rec["provenance"] = prov
    start = time.perf_counter()
    try:
        out = get_problem(job.get("problem")).run_job(job)
        prov.update(out.get("provenance") or {})
        rec.update(status="ok", metrics=out["metrics"], steps=out.get("steps"),
                   wall_s=round(time.perf_counter() - start, 4), error=None)
        rec.update({k: out[k] for k in ("curves", "latency_quantiles") if out.get(k)})
        if out.get("trained_on") and not rec.get("trained_on"):  # the bench's --trained-on wins
            rec["trained_on"] = out["trained_on"]
    except Exception as e:  # one broken policy or trace must not stop a leaderboard
        tb = traceback.format_exc(limit=-4)
        rec.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=tb,
                   wall_s=round(time.perf_counter() - start, 4))
    prov["finished_at"] = now_utc()
    return rec


def _failed(job: dict[str, Any], error: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "status": "failed", **{k: v for k, v in job.items() if k != "provenance"},
            "error": error, "provenance": {**base_provenance(), "finished_at": now_utc()}}


@dataclass
class BenchSummary:
    """What a bench run did."""

    total: int = 0
    skipped: int = 0
    ok: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0


def pending_jobs(jobs: list[dict[str, Any]], results_file: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The jobs without an ``ok`` record in ``results_file`` (what ``--resume`` runs)."""
    done = completed_keys(results_file)
    return [j for j in jobs if job_key(j) not in done]


def declare_training(jobs: list[dict[str, Any]], trained_on: str, policies: list[str] | None) -> None:
    """Record ``trained_on`` (what the policies trained on, shown by the report) with the jobs of
    ``policies``, the ones the bench was asked for (not the references it adds)."""
    if not policies:
        raise ValueError("--trained-on declares the training set of the policies named by --policies; name them")
    if not trained_on.strip():
        raise ValueError("--trained-on must describe a training set: 'none', 'train' (the package's training "
                         "split, docs/leaderboard.md) or what the policy trained on")
    mine = set(policies)
    for j in jobs:
        if j["policy"] in mine:
            j["trained_on"] = trained_on.strip()


def jobs_to_run(jobs: list[dict[str, Any]], results_file: Path, *, resume: bool, fresh: bool, dry_run: bool,
                say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The jobs a bench runs into ``results_file``, after preparing the file (not with
    ``dry_run``, which only reads): ``resume`` sets aside a file of another hss-gym version (said
    with ``say``) and keeps the runs done, refusing runs of another suite definition or request
    count; ``fresh`` discards the file. A file that holds runs is refused with neither, so no
    bench silently mixes into or overwrites earlier results. Called under the file's lock."""
    if resume and not dry_run and (aside := set_aside_other_versions(results_file)) is not None:
        say(f"{results_file} holds runs of another hss-gym version (this is {__version__}): moved to "
            f"{aside.name}; starting over")
    existing = read_results(results_file, warn=False) if results_file.exists() else []
    if existing and not (resume or fresh or dry_run):
        raise ValueError(f"{results_file} already holds {len(existing)} runs: pass --resume to run only the "
                         f"missing ones, or --fresh to discard them and start over")
    if fresh and results_file.exists() and not dry_run:
        results_file.unlink()
    if resume:
        check_compatible(results_file, jobs)
    return pending_jobs(jobs, results_file) if resume else jobs


def wants_ray(ray: bool, local: bool) -> bool:
    """Whether a bench runs on Ray: asked for (``ray``), or ``RAY_ADDRESS`` is set and local
    processes were not asked for (``local``)."""
    return ray or (bool(os.environ.get("RAY_ADDRESS")) and not local)


def run_local(jobs: list[dict[str, Any]], workers: int, emit: Callable[[dict[str, Any]], None]) -> None:
    """Run ``jobs`` in ``workers`` local processes (in this one if ``workers <= 1``), calling
    ``emit`` with each record as its job ends (in completion order). Used by the bench and by
    ``validate``."""
    if not jobs:
        return
    if workers <= 1:
        for j in jobs:
            emit(run_job(j))
        return
    import multiprocessing as mp
    ctx = mp.get_context(start_method())
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_worker_init,
                             initargs=(os.getpid(),)) as ex:
        futs = {ex.submit(run_job, j): j for j in jobs}
        pending = set(futs)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    try:
                        emit(f.result())
                    except Exception as e:  # a worker process died (segfault, out of memory)
                        emit(_failed(futs[f], f"worker process failed: {type(e).__name__}: {e}"))
        except KeyboardInterrupt:  # stop now: drop queued jobs, end the running ones
            ex.shutdown(wait=False, cancel_futures=True)
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                proc.terminate()
            raise


def _ray(jobs: list[dict[str, Any]], emit: Callable[[dict[str, Any]], None],
         address: str | None = None) -> None:
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("--ray needs Ray: pip install 'ray>=2.40'") from e
    if not ray.is_initialized():
        ray.init(address=address or os.environ.get("RAY_ADDRESS") or None, include_dashboard=False,
                 log_to_driver=False)
    task = ray.remote(num_cpus=1, max_retries=1)(run_job)
    refs = {task.remote(j): j for j in jobs}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                try:
                    emit(ray.get(r))
                except Exception as e:  # the worker died or the cluster lost the task
                    emit(_failed(refs[r], f"ray task failed: {type(e).__name__}: {e}"))
    except KeyboardInterrupt:
        for r in pending:
            ray.cancel(r, force=True)
        raise


def run_jobs(jobs: list[dict[str, Any]], results_file: str | os.PathLike[str], *, resume: bool = True,
             workers: int | None = None, use_ray: bool = False, ray_address: str | None = None,
             progress: bool = True, on_record: Callable[[dict[str, Any]], None] | None = None,
             wait: bool = False) -> BenchSummary:
    """Run ``jobs`` (only the missing ones if ``resume``), appending a record per job to
    ``results_file``. Returns a :class:`BenchSummary`; failed runs are in ``summary.failed``.

    Holds the file's lock throughout (another writer: ``ResultsLocked``, or waits if ``wait``);
    a file with runs of another suite digest or request count is refused (``ValueError``)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 (or None: all cores), got {workers!r}")
    with writing(results_file, wait=wait):
        check_compatible(results_file, jobs)
        return _run_jobs_locked(jobs, results_file, resume, workers, use_ray, ray_address, progress, on_record)


def _run_jobs_locked(jobs: list[dict[str, Any]], results_file: str | os.PathLike[str], resume: bool,
                     workers: int | None, use_ray: bool, ray_address: str | None, progress: bool,
                     on_record: Callable[[dict[str, Any]], None] | None) -> BenchSummary:
    start = time.perf_counter()
    todo = pending_jobs(jobs, results_file) if resume else list(jobs)
    summary = BenchSummary(total=len(jobs), skipped=len(jobs) - len(todo))
    rev = git_revision()
    todo = [{**j, "provenance": {"git_revision": rev}} for j in todo]
    fd = open_for_append(results_file)
    bar = None
    if progress and todo:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc="bench", unit="run", dynamic_ncols=True, file=sys.stderr)

    def emit(rec: dict[str, Any]) -> None:
        append_record(fd, rec)
        if rec["status"] == "ok":
            summary.ok += 1
        else:
            summary.failed.append(rec)
        if bar is not None:
            bar.set_postfix_str(f"{rec['policy']} {rec['workload'].rsplit('/', 1)[-1]} {rec['config']}"
                                + (f", {len(summary.failed)} failed" if summary.failed else ""), refresh=False)
            bar.update(1)
        if on_record is not None:
            on_record(rec)

    try:
        if todo:
            if use_ray:
                _ray(todo, emit, ray_address)
            else:
                run_local(todo, workers or os.cpu_count() or 1, emit)
    finally:
        os.close(fd)
        if bar is not None:
            bar.close()
    summary.wall_s = time.perf_counter() - start
    return summary


def describe_failures(failed: Iterable[dict[str, Any]], limit: int = 20) -> str:
    """A short text listing failed runs and their errors (one line each)."""
    lines = []
    for i, r in enumerate(failed):
        if i == limit:
            lines.append("  ...")
            break
        lines.append(f"  {r['policy']} on {r['workload']} / {r['config']} (seed {r['seed']}): {r.get('error')}")
    return "\n".join(lines)
