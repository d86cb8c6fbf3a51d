"""Results files: one JSON line per run, appended atomically, with provenance.

A results file (``OUT/results.jsonl``) holds one record per finished run, successful or not::

    {"schema": "hss-gym-result/1", "status": "ok" | "failed",
     "suite": "quick", "suite_digest": "...", "track": "perf_opt",
     "workload": "ycsb-b", "config": "perf_opt", "policy": "random", "seed": 0, "n_requests": 20000,
     "metrics": {...RunMetrics...}, "latency_quantiles": {"q": [...], "us": [...]},
     "steps": 20000, "wall_s": 0.4, "error": null,
     "provenance": {"hss_gym_version": "0.1.0", "git_revision": "e38d97f...", "python": "3.11.9",
                    "host": "...", "finished_at": "2025-...Z",
                    "trace": {"name": "ycsb-b", "requests": 20000, "sha256": "...",
                              "source": {generator and parameters, or path and file sha256}},
                    "config_hash": HSSConfig.digest() of the named configuration,
                    "env_config_hash": digest of the configuration the policy ran on
                                       (Fast-Only enlarges the fast device),
                    "policy_name": "random", "env_options": {...},
                    "model": {a trained model's format, file, sha256, env_id, card_sha256}
                             (only for "sb3:PATH" / "torch:PATH" policies)}}

Each record is written with a single ``write`` on a file opened with ``O_APPEND`` and flushed, so a
killed run leaves at most one partial last line, which :func:`read_results` skips and
:func:`repair_last_line` cuts off before the runs done are counted (a whole last record that lost
only its newline is kept, and the newline restored). The *job key* (suite, track, workload,
config, policy, seed, n_requests) identifies a run; ``--resume`` runs only the jobs without an
``ok`` record (failed runs are tried again).

**One writer per results file.** A bench or a ``replay`` (both through :func:`writing`) holds an
exclusive lock (:class:`ResultsLock`, ``fcntl.flock`` on ``results.jsonl.lock`` beside the file,
which holds the writer's PID) from before it reads the file (to find the runs to do) until its last
record is written: a second writer on the same ``--out`` is refused with the holder's PID (or waits, ``wait=True``), and the
runs a resume chooses are computed under the lock, so it never redoes a run another process
finished. The lock is released by the kernel when its holder dies, even by SIGKILL.
:func:`check_compatible` refuses to add runs of another suite definition (digest) or request count
to a file.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import platform
import subprocess
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from hss_gym import _version
from hss_gym._version import __version__

SCHEMA = "hss-gym-result/1"
KEY_FIELDS = ("suite", "track", "workload", "config", "policy", "seed", "n_requests")
#: the latency CDF stored with each run (percentiles)
QUANTILES: tuple[float, ...] = tuple([0.0, 1.0, 5.0] + [float(q) for q in range(10, 100, 5)]
                                     + [96.0, 97.0, 98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0])


def job_key(rec: dict[str, Any]) -> tuple[Any, ...]:
    """The identity of a run (a job or its record): its cell, policy, length and options."""
    return tuple(rec.get(k) for k in KEY_FIELDS) + (json.dumps(rec.get("options") or {}, sort_keys=True),)


def trace_sha256(trace: Any) -> str:
    """sha256 of a Trace's columns (time, op, offset, size, stream): the requests actually run,
    whatever file format or generator they came from."""
    h = hashlib.sha256()
    for col in ("time_us", "op", "offset", "size", "stream"):
        a = np.ascontiguousarray(getattr(trace, col))
        h.update(col.encode())
        h.update(str(a.dtype.str).encode())
        h.update(a.tobytes())
    return h.hexdigest()


_GIT: dict[str, str | None] = {}


def git_revision() -> str | None:
    """The git commit of the hss-gym source tree (``+dirty`` if modified), or None."""
    if "rev" in _GIT:
        return _GIT["rev"]
    root = Path(_version.__file__).resolve().parent.parent  # hss_gym/'s parent: the checkout
    rev: str | None = None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if out.returncode == 0:
            rev = out.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5)
            if dirty.returncode == 0 and dirty.stdout.strip():
                rev += "+dirty"
    except (OSError, subprocess.SubprocessError):
        rev = None
    _GIT["rev"] = rev
    return rev


def base_provenance() -> dict[str, Any]:
    """Provenance shared by every run of this process."""
    return {"hss_gym_version": __version__, "git_revision": git_revision(),
            "python": platform.python_version(), "platform": platform.platform(terse=True),
            "host": platform.node()}


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def dumps(rec: dict[str, Any]) -> str:
    """One record as one JSON line (floats round-trip exactly; NaN/inf as in Python's json)."""
    return json.dumps(rec, default=_json_default, sort_keys=False, separators=(",", ":"))


def _is_record(line: bytes) -> bool:
    """Whether ``line`` parses as a whole JSON object (a record, of a bench or a replay)."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        return False


def repair_last_line(path: str | os.PathLike[str]) -> None:
    """Make a results file end with a whole line, before its runs are counted or it is appended to.

    A last line without its newline that parses as a whole record is a finished run that lost only
    the newline: the newline is restored and the record kept (it counts as done). Anything else
    there is a line cut short by a killed run: it is removed (with a warning), so its run counts as
    not done and is run again. Either way the file holds exactly the records of the runs done, and
    the next record starts on a line of its own. Reads only the last line (from the end)."""
    p = Path(path)
    if not p.is_file():
        return
    with p.open("rb+") as f:
        end = f.seek(0, os.SEEK_END)
        if not end:
            return
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return
        start, tail = end, b""
        while start and b"\n" not in tail:
            step = min(start, 1 << 16)
            start -= step
            f.seek(start)
            tail = f.read(step) + tail
        cut = start + tail.rfind(b"\n") + 1
        f.seek(cut)
        if _is_record(f.read()):
            f.write(b"\n")  # at the end: the read left the position there
            f.flush()
            os.fsync(f.fileno())
            return
        warnings.warn(f"{p}: removing a partial last line ({end - cut} bytes) left by an interrupted run",
                      stacklevel=2)
        f.truncate(cut)


def open_for_append(path: str | os.PathLike[str]) -> int:
    """Open ``path`` for atomic appends (created if missing), first repairing its last line
    (:func:`repair_last_line`). Returns an OS file descriptor."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    repair_last_line(p)
    return os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def append_record(fd: int, rec: dict[str, Any]) -> None:
    """Append one record with a single write (atomic for O_APPEND on a local file system)."""
    data = (dumps(rec) + "\n").encode()
    n = os.write(fd, data)
    if n != len(data):  # pragma: no cover - a full disk
        raise OSError(f"short write of a result record ({n} of {len(data)} bytes)")
    os.fsync(fd)


def _open_results(p: Path) -> Any:
    """A results file for reading as bytes: plain, or compressed by zstd (``.zst``) or gzip
    (``.gz``), as committed leaderboards keep theirs."""
    if p.suffix == ".zst":
        import io

        import zstandard
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(p.open("rb"), closefd=True))
    if p.suffix == ".gz":
        import gzip
        return gzip.open(p, "rb")
    return p.open("rb")


def read_results(path: str | os.PathLike[str], warn: bool = True) -> list[dict[str, Any]]:
    """Every well-formed record of a results file (plain, ``.zst`` or ``.gz``), in file order
    (partial/corrupt lines skipped with a warning naming their line numbers, the first few)."""
    p = Path(path)
    if not p.exists():
        return []
    out: list[dict[str, Any]] = []
    bad: list[int] = []  # line numbers (from 1)
    with _open_results(p) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                bad.append(number)
                continue
            if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
                out.append(rec)
            else:
                bad.append(number)
    if bad and warn:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        warnings.warn(f"{p}: skipped {len(bad)} malformed line(s): line{'s' if len(bad) > 1 else ''} {shown}",
                      stacklevel=2)
    return out


def latest_by_key(records: Iterable[dict[str, Any]], ok_only: bool = False) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The last record of each job key (a later ``ok`` always wins over a failure)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        if ok_only and r.get("status") != "ok":
            continue
        k = job_key(r)
        if k in out and out[k].get("status") == "ok" and r.get("status") != "ok":
            continue
        out[k] = r
    return out


def completed_keys(path: str | os.PathLike[str]) -> set[tuple[Any, ...]]:
    """Keys of the jobs with an ``ok`` record in ``path``."""
    return {job_key(r) for r in read_results(path, warn=False) if r.get("status") == "ok"}


def set_aside_other_versions(path: str | os.PathLike[str]) -> Path | None:
    """Rename a results file that holds runs of another hss-gym version to
    ``<name>.hss-gym-<versions>.jsonl`` beside it (a new name, never over a file), so that
    resuming with this version starts over instead of mixing runs whose simulator or agents may
    differ; return the new path, or None when every run is of this version (or there is no file)."""
    p = Path(path)
    if not p.exists():
        return None
    versions = sorted({str((r.get("provenance") or {}).get("hss_gym_version")) for r in read_results(p, warn=False)})
    if not versions or versions == [__version__]:
        return None
    stem = f"{p.stem}.hss-gym-{'+'.join(v for v in versions if v != __version__)}"
    dest, k = p.with_name(stem + p.suffix), 1
    while dest.exists():
        k += 1
        dest = p.with_name(f"{stem}.{k}{p.suffix}")
    p.rename(dest)
    return dest


def latency_quantiles(latencies: np.ndarray) -> dict[str, list[float]]:
    """The stored latency CDF: the :data:`QUANTILES` percentiles of per-request latency (µs)."""
    lat = np.asarray(latencies, dtype=np.float64)
    return {"q": list(QUANTILES), "us": [float(v) for v in np.percentile(lat, QUANTILES)]}


def results_path(out: str | os.PathLike[str]) -> Path:
    """``OUT/results.jsonl`` for an output directory (or the file itself if given); a directory
    holding only a compressed ``results.jsonl.zst`` / ``.gz`` (a committed leaderboard) gives that."""
    p = Path(out)
    if p.suffix in (".jsonl", ".zst", ".gz"):
        return p
    plain = p / "results.jsonl"
    if not plain.exists():
        for packed in (p / "results.jsonl.zst", p / "results.jsonl.gz"):
            if packed.exists():
                return packed
    return plain


def gather_results(paths: Iterable[str]) -> tuple[list[dict[str, Any]], list[Path]]:
    """The records of every results file ``paths`` name (a file, or a bench output directory:
    :func:`results_path`), in order, and those files. A path naming no results file is an error
    that says what to give."""
    records: list[dict[str, Any]] = []
    files = []
    for p in paths:
        f = Path(p) if Path(p).is_file() else results_path(p) if Path(p).is_dir() or not p.endswith(".jsonl") else Path(p)
        if not f.exists():
            raise FileNotFoundError(f"no results file {str(f)!r} (give a results.jsonl or the bench output directory)")
        files.append(f)
        records += read_results(f)
    return records, files


def check_out_dir(d: Path, option: str) -> None:
    """An output directory must be a directory, or not exist yet below directories: else a
    ``ValueError`` that names ``option`` (the command-line option that gave it) and the culprit."""
    for p in (d, *d.parents):
        if p.exists():
            if not p.is_dir():
                raise ValueError(f"{option} {d}: {p} exists and is not a directory")
            break


# ------------------------------------------------------------------------------- one writer
class ResultsLocked(RuntimeError):
    """Another process is writing the results file."""


_HELD: dict[str, list[Any]] = {}  # lock path -> [fd, depth]: re-entrant within a process


class ResultsLock:
    """An exclusive lock on a results file for one writer (see the module docstring).

    ``with ResultsLock(path):`` takes ``path + ".lock"`` with ``fcntl.flock(LOCK_EX)`` and writes
    this process's PID into it. Held by another process: :class:`ResultsLocked` naming its PID,
    or with ``wait=True`` block until it is released (``on_wait(pid)`` is called first, e.g. to say
    so). Re-entrant within a process (``run_jobs`` inside a bench that already holds it).
    """

    def __init__(self, path: str | os.PathLike[str], wait: bool = False,
                 on_wait: Any = None) -> None:
        self.results = Path(path)
        self.path = self.results.with_name(self.results.name + ".lock")
        self.wait, self.on_wait = wait, on_wait

    def holder(self) -> int | None:
        """The PID written by the last holder (None if none is recorded)."""
        try:
            text = self.path.read_text().strip()
            return int(text) if text else None
        except (OSError, ValueError):
            return None

    def __enter__(self) -> "ResultsLock":
        key = str(self.path.resolve())
        if key in _HELD:
            _HELD[key][1] += 1
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                pid = self.holder()
                who = f"PID {pid}" if pid else "another process"
                if not self.wait:
                    raise ResultsLocked(f"{self.results} is being written by another hss-gym bench or replay ({who}): "
                                        f"wait for it to finish (or pass --wait), or use another --out") from None
                if self.on_wait is not None:
                    self.on_wait(pid)
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        _HELD[key] = [fd, 1]
        self._key = key
        return self

    def __exit__(self, *exc: Any) -> None:
        key = str(self.path.resolve())
        held = _HELD.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del _HELD[key]
            try:
                os.ftruncate(held[0], 0)  # no stale PID (the file itself stays: others may wait on it)
            finally:
                os.close(held[0])  # releases the flock


@contextmanager
def writing(path: str | os.PathLike[str], wait: bool = False, on_wait: Any = None) -> Iterator[None]:
    """Be the one writer of a results file: hold its :class:`ResultsLock` and repair its last line
    (:func:`repair_last_line`) before the caller reads which runs are done. What ``bench`` and
    ``replay`` do before they choose the runs to do, until their last record is written."""
    with ResultsLock(path, wait=wait, on_wait=on_wait):
        repair_last_line(path)
        yield


def check_compatible(path: str | os.PathLike[str], jobs: Iterable[dict[str, Any]]) -> None:
    """Refuse (``ValueError``) to add ``jobs`` to a results file holding runs of another suite
    definition (``suite_digest``) or, for the same (suite, track), another request count: a report
    over such a file would mix runs that are not comparable and show only the latest."""
    jobs = list(jobs)
    recs = read_results(path, warn=False)
    if not recs or not jobs:
        return
    digests = {j.get("suite_digest") for j in jobs}
    n_of = {(j.get("suite"), j.get("track")): j.get("n_requests") for j in jobs}
    other_digest = sorted({str(r.get("suite_digest")) for r in recs if r.get("suite_digest") not in digests})
    if other_digest:
        raise ValueError(f"{path} holds runs of another suite definition (suite digest {', '.join(other_digest)}; "
                         f"this bench: {', '.join(sorted(map(str, digests)))}): use another --out, or --fresh "
                         f"to discard them")
    for r in recs:
        k = (r.get("suite"), r.get("track"))
        if k in n_of and r.get("n_requests") != n_of[k]:
            raise ValueError(f"{path} holds runs of track {k[1]!r} with {r.get('n_requests')} requests; this "
                             f"bench asks for {n_of[k]}: use another --out (or the same --n), or --fresh to "
                             f"discard them")
