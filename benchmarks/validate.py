"""Replay validation of a results file (like CompilerGym's leaderboard validation).

``validate_results`` re-runs a sample of the ``ok`` runs of a results file and compares every
recorded metric with the re-run's. The simulator is deterministic for a seed, so the default
tolerance is **exact** (``rtol=0``): any difference means the results were edited, produced by
different code, or by a policy that is not deterministic for its seed. A looser ``rtol`` can be
given for policies with nondeterministic numerics (e.g. multi-threaded GPU training).

Before re-running anything it refuses, with the reason:

* records from another hss-gym version than the one installed (the simulator may differ);
* records whose inputs the problem's ``precheck`` finds changed (HSS: a configuration hash that
  differs from this version's configuration of that name, or a trace hash — sha256 of the
  trace's columns — that differs from the trace this installation generates or reads for it).

After the re-run, the provenance that identifies the inputs (trace, configuration, profile, ...)
must be identical too.

**It runs no code that a results file names unless the maintainer allows it.** A record names the
code that re-runs it: a ``module:factory`` policy, a ``module:attribute`` problem. Built-in policies
(registered names, the other problems' names) and problems are re-run freely; a named module is
imported only if its top-level package is in ``allow`` (``hss-gym validate --allow PKG``), and never
from the current folder or the results file's folder (they are taken off ``sys.path`` meanwhile: a
``tqdm.py`` or a package lying beside a submission is not imported in place of an installed one,
and a package found only there is refused: install it). The runs of a refused spec are reported
as not validated, with the reason, and the validation is incomplete (:attr:`ValidationReport.complete`).
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from hss_gym._version import __version__
from hss_gym.benchmarks.results import latest_by_key
from hss_gym.benchmarks.problems import get_problem
from hss_gym.agents.models import model_code, model_format
from hss_gym.benchmarks.results import job_key
from hss_gym.benchmarks.runner import run_local

#: metrics compared (every RunMetrics field)
IGNORED = {"wall_s"}
#: provenance that may differ between a run and its re-run (everything else identifies inputs)
VOLATILE = {"hss_gym_version", "git_revision", "python", "platform", "host", "finished_at"}


@dataclass
class Check:
    """The outcome for one record: ``ok``, ``mismatch`` (metric differences), ``refused`` (its
    inputs differ from this installation's) or ``skipped`` (not re-run: it names code that
    validate may not import)."""

    record: dict[str, Any]
    status: str
    reason: str = ""
    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)

    def describe(self) -> str:
        r = self.record
        what = f"{r['policy']} on {r['workload'].rsplit('/', 1)[-1]} / {r['config']} seed {r['seed']}"
        if self.status == "ok":
            return f"OK       {what}"
        if self.status == "refused":
            return f"REFUSED  {what}: {self.reason}"
        if self.status == "skipped":
            return f"NOT VALIDATED {what}: {self.reason}"
        d = "; ".join(f"{k}: recorded {a!r}, re-run {b!r}" for k, a, b in self.diffs[:5])
        return f"MISMATCH {what}: {d}"


@dataclass
class ValidationReport:
    """All checks; ``passed`` when every chosen run was re-run and matched, ``failed`` when one was
    refused or mismatched; neither when some were not re-run (``complete`` is False)."""

    checks: list[Check]
    refused_file: str | None = None
    total_ok_runs: int = 0
    rtol: float = 0.0

    @property
    def passed(self) -> bool:
        return self.refused_file is None and bool(self.checks) and all(c.status == "ok" for c in self.checks)

    @property
    def complete(self) -> bool:
        """Whether every chosen run was re-run (none names code that validate may not import)."""
        return all(c.status != "skipped" for c in self.checks)

    @property
    def failed(self) -> bool:
        return self.refused_file is not None or not self.checks or any(
            c.status in ("mismatch", "refused") for c in self.checks)

    def summary(self) -> str:
        if self.refused_file:
            return f"REFUSED: {self.refused_file}"
        n = {s: sum(c.status == s for c in self.checks) for s in ("ok", "mismatch", "refused", "skipped")}
        tol = "exact match" if self.rtol == 0 else f"relative tolerance {self.rtol:g}"
        verdict = "PASSED" if self.passed else "FAILED" if self.failed else "INCOMPLETE"
        text = (f"{verdict}: {len(self.checks) - n['skipped']} of {self.total_ok_runs} runs re-run ({tol}): "
                f"{n['ok']} ok, {n['mismatch']} mismatched, {n['refused']} refused")
        if n["skipped"]:
            text += f"; {n['skipped']} not validated (code the results file names that may not be imported)"
        return text


def _close(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        if rtol == 0:
            return fa == fb
        return math.isclose(fa, fb, rel_tol=rtol, abs_tol=0.0)
    return a == b


def compare_metrics(recorded: dict[str, Any], rerun: dict[str, Any], rtol: float = 0.0) -> list[tuple[str, Any, Any]]:
    """The (metric, recorded, re-run) triples that differ beyond ``rtol``."""
    diffs = []
    for k in sorted(set(recorded) | set(rerun)):
        if k in IGNORED:
            continue
        a, b = recorded.get(k), rerun.get(k)
        if not _close(a, b, rtol):
            diffs.append((k, a, b))
    return diffs


def precheck(rec: dict[str, Any]) -> str | None:
    """Why a record cannot be validated by this installation (None if it can)."""
    prov = rec.get("provenance") or {}
    if prov.get("hss_gym_version") != __version__:
        return (f"recorded with hss-gym {prov.get('hss_gym_version')}, this is hss-gym {__version__}: "
                f"validate with the version that produced the results")
    try:
        problem = get_problem(rec.get("problem"))
    except ValueError as e:
        return str(e)
    return problem.precheck(rec) if problem.precheck is not None else None


def named_code(rec: dict[str, Any], policies: bool = True) -> list[tuple[str, str]]:
    """The code outside hss-gym's built-ins that re-running ``rec`` would import, as (spec,
    module) pairs: the module of a ``module:factory`` policy and of a ``module:attribute``
    problem. A registered policy name (another problem's included) or a built-in problem imports
    only hss-gym's own modules; a name that is neither imports nothing (its re-run fails).
    ``policies=False``: the problem's only (all that a report, which runs nothing, imports).
    A trained model (``sb3:PATH``, ``torch:PATH``) is read as data, except a TorchScript module,
    which is code (``torch``)."""
    out = []
    named = ((rec.get("problem"), "problem "), (rec.get("policy"), "")) if policies else ((rec.get("problem"), "problem "),)
    for spec, label in named:
        if isinstance(spec, str) and label == "" and model_format(spec):
            code = model_code(spec)  # weights are data; a TorchScript module is code
            if code is not None:
                out.append((spec, code))
        elif isinstance(spec, str) and ":" in spec:
            out.append((label + spec, spec.partition(":")[0]))
    return out


def _unsafe_folders(folders: Iterable[str | os.PathLike[str]]) -> set[str]:
    """The folders nothing is imported from: the current one and ``folders``, resolved."""
    return {os.path.realpath(os.getcwd()), *(os.path.realpath(f) for f in folders)}


@contextmanager
def no_imports_from(folders: Iterable[str | os.PathLike[str]] = ()) -> Iterator[None]:
    """Take the current folder (``''`` and its path, which ``python -m`` puts first) and
    ``folders`` off ``sys.path`` meanwhile, so that no module lying there is imported (worker
    processes inherit the path); put it back after."""
    unsafe = _unsafe_folders(folders)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) not in unsafe]
    try:
        yield
    finally:
        sys.path[:] = saved


def _found_in(top: str) -> list[str]:
    """The folders the top-level module ``top`` would be imported from (none: not found)."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    places = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.has_location and spec.origin else [])
    return [os.path.dirname(os.path.realpath(p)) for p in places]


def code_refusal(module: str, allow: Iterable[str], folders: Iterable[str | os.PathLike[str]] = (),
                 command: str = "validate") -> str | None:
    """Why ``command`` (validate, report) may not import ``module`` (None: it may): its top-level
    package is not in ``allow``, is not installed, or would be imported from the current folder
    or ``folders``."""
    top = module.split(".")[0]
    if top not in set(allow):
        return (f"imports {module!r}, code the results file names: pass --allow {top or repr(top)} to run it "
                f"(only for code you trust)")
    unsafe = _unsafe_folders(folders)
    where = _found_in(top)
    if not where:
        return (f"module {top!r} is not installed ({command} never imports from the current folder or the "
                f"results file's): install it")
    bad = sorted(set(where) & unsafe)
    if bad:
        return (f"module {top!r} would be imported from {bad[0]}, the current folder or the results file's, "
                f"which {command} never imports from: install it")
    return None


@dataclass(frozen=True)
class CodeUse:
    """One distinct spec (policy, or ``problem <spec>``) of the runs to re-run: the module outside
    hss-gym's built-ins it imports (None: built-in) and why that is refused (None: allowed)."""

    spec: str
    module: str | None = None
    refused: str | None = None

    def describe(self) -> str:
        if self.module is None:
            return f"{self.spec}: built-in"
        if self.refused is not None:
            return f"{self.spec}: would import {self.module}: not run, {self.refused}"
        where = ", ".join(_found_in(self.module.split(".")[0]))
        return f"{self.spec}: imports {self.module} (from {where}; allowed)"


def code_uses(records: Iterable[dict[str, Any]], allow: Iterable[str] = (),
              folders: Iterable[str | os.PathLike[str]] = (), command: str = "validate") -> dict[str, CodeUse]:
    """The distinct policy and problem specs of ``records``, each with what it imports and whether
    ``command`` may (``allow``: top-level packages the maintainer trusts; never from the current
    folder or ``folders``). Built-in policies are listed too, by name. ``command="report"``: the
    problem specs only (a report imports a record's problem, never its policy)."""
    allow, folders = list(allow), list(folders)
    policies = command != "report"
    out: dict[str, CodeUse] = {}
    for rec in records:
        named = named_code(rec, policies)
        if policies and not any(spec == rec.get("policy") for spec, _ in named):
            out.setdefault(str(rec.get("policy")), CodeUse(str(rec.get("policy"))))
        for spec, module in named:
            if spec not in out:
                out[spec] = CodeUse(spec, module, code_refusal(module, allow, folders, command))
    return out


def _check(rec: dict[str, Any], new: dict[str, Any], rtol: float) -> Check:
    """Compare a record with its re-run's record. A trace file's location is no input (a re-run
    may read it from ``traces_dir``): its content is, by the file's and the requests' sha256."""
    if new["status"] != "ok":
        return Check(rec, "mismatch", diffs=[("status", "ok", f"failed: {new.get('error')}")])
    diffs = compare_metrics(rec["metrics"], new["metrics"], rtol)
    for k, v in new["provenance"].items():  # the inputs as the problem identifies them
        if k not in VOLATILE and _located(rec["provenance"].get(k)) != _located(v):
            diffs.append((f"provenance {k}", rec["provenance"].get(k), v))
    return Check(rec, "ok" if not diffs else "mismatch", diffs=diffs)


def _located(value: Any) -> Any:
    """A provenance value without the trace file's path (``{"source": {"path": ...}}``)."""
    if isinstance(value, dict) and isinstance(value.get("source"), dict) and "path" in value["source"]:
        return {**value, "source": {k: v for k, v in value["source"].items() if k != "path"}}
    return value


def relocate(rec: dict[str, Any], traces_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``rec`` with its trace file read from ``traces_dir`` (by file name) when the recorded path
    does not exist there: results name trace files by the absolute paths of the machine that ran
    them, and ``hss-gym validate --traces DIR`` re-runs them from a copy of the files elsewhere
    (the trace hashes check that it is the same file). Other records as given."""
    w = rec.get("workload")
    if traces_dir is None or not isinstance(w, str) or os.sep not in w or os.path.exists(w):
        return rec
    candidate = os.path.join(traces_dir, os.path.basename(w))
    return {**rec, "workload": candidate} if os.path.isfile(candidate) else rec


def sampling(all_runs: bool, sample: int | None) -> tuple[int | None, bool]:
    """``(sample, per_cell)`` for :func:`choose`: every run (``all_runs``), ``sample`` random
    runs, or, when neither is asked for, one run of every cell, so no cell goes unchecked."""
    if all_runs:
        return None, False
    return sample, sample is None


def choose(records: list[dict[str, Any]], sample: int | None = 5, seed: int = 0, per_cell: bool = False,
           tracks: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The ``ok`` runs ``validate_results`` re-runs: ``sample`` drawn at random (all if ``None``),
    or with ``per_cell`` one drawn from every (policy, workload, configuration) cell; only runs of
    ``tracks`` if given. ``seed`` draws the choice."""
    ok = [r for r in latest_by_key(records).values() if r.get("status") == "ok"]
    if tracks is not None:
        wanted = set(tracks)
        ok = [r for r in ok if r.get("track") in wanted]
    rng = random.Random(seed)
    if per_cell:
        cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in ok:
            cells.setdefault((r.get("policy"), r.get("workload"), r.get("config")), []).append(r)
        return [rng.choice(runs) for runs in cells.values()]
    return ok if sample is None or sample >= len(ok) else rng.sample(ok, sample)


def validate_results(records: list[dict[str, Any]], sample: int | None = 5, seed: int = 0,
                     rtol: float = 0.0, progress: Callable[[Check], None] | None = None,
                     per_cell: bool = False, tracks: Iterable[str] | None = None,
                     workers: int = 1, allow: Iterable[str] = (),
                     folders: Iterable[str | os.PathLike[str]] = (),
                     traces_dir: str | os.PathLike[str] | None = None) -> ValidationReport:
    """Re-run the runs :func:`choose` picks (``sample`` random ``ok`` runs, or with ``per_cell``
    one of every (policy, workload, configuration) cell, ``hss-gym validate``'s default, so no
    cell of a leaderboard goes unchecked; only ``tracks`` if given) in ``workers`` processes, and
    compare their metrics. Checks are in the order the re-runs end.

    A file with any record from another hss-gym version is refused as a whole. A run whose
    policy or problem is a module outside ``allow`` (top-level package names), or found only in
    the current folder or ``folders`` (the results file's), is not re-run: its check is
    ``skipped``, with the reason (see the module docstring). ``traces_dir``: where to read trace
    files whose recorded paths do not exist here (:func:`relocate`).
    """
    folders = list(folders)
    with no_imports_from(folders):
        return _validate(records, sample, seed, rtol, progress, per_cell, tracks, workers,
                         code_uses(records, allow, folders), traces_dir)


def _validate(records: list[dict[str, Any]], sample: int | None, seed: int, rtol: float,
              progress: Callable[[Check], None] | None, per_cell: bool, tracks: Iterable[str] | None,
              workers: int, uses: dict[str, CodeUse],
              traces_dir: str | os.PathLike[str] | None) -> ValidationReport:
    ok = [r for r in latest_by_key(records).values() if r.get("status") == "ok"]
    rep = ValidationReport([], total_ok_runs=len(ok), rtol=rtol)
    versions = sorted({str((r.get("provenance") or {}).get("hss_gym_version")) for r in records})
    if versions and versions != [__version__]:
        rep.refused_file = (f"the results file has runs from hss-gym {', '.join(versions)}; this is hss-gym "
                            f"{__version__}. Validate with the version that produced them (pip install "
                            f"hss-gym=={versions[0]}), or re-run the bench with this one")
        return rep
    if tracks is not None:
        known = {r.get("track") for r in ok}
        unknown = sorted(set(tracks) - known)
        if unknown:
            rep.refused_file = (f"no successful runs of track(s) {', '.join(map(str, unknown))} in the results "
                                f"file (its tracks: {', '.join(sorted(map(str, known)))})")
            return rep
    if not ok:
        rep.refused_file = "the results file has no successful runs to validate"
        return rep

    def add(chk: Check) -> None:
        rep.checks.append(chk)
        if progress is not None:
            progress(chk)

    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    jobs = []
    for rec in choose(records, sample, seed, per_cell, tracks):
        refused = [uses[spec].refused for spec, _ in named_code(rec) if uses[spec].refused]
        if refused:  # before precheck, which would import a named problem
            add(Check(rec, "skipped", refused[0]))
            continue
        run = relocate(rec, traces_dir)
        why = precheck(run)
        if why is not None:
            w = rec.get("workload")
            if isinstance(w, str) and os.sep in w and not os.path.exists(run["workload"]):
                why += (f" (the trace file is not here: --traces DIR reads it from DIR/{os.path.basename(w)})"
                        if traces_dir is None else f" (nor is {os.path.basename(w)} in {traces_dir})")
            add(Check(rec, "refused", why))
            continue
        by_key[job_key(run)] = rec
        jobs.append({k: run[k] for k in ("suite", "problem", "track", "workload", "config", "policy", "seed",
                                          "n_requests", "options", "suite_digest") if k in run})
    run_local(jobs, workers, lambda new: add(_check(by_key[job_key(new)], new, rtol)))
    return rep
