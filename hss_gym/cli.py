"""The ``hss-gym`` command line.

    hss-gym bench --suite quick                 run a leaderboard suite, print the table, write reports
    hss-gym report results/quick                Markdown + HTML leaderboard from results files
    hss-gym validate results/quick              re-run a sample of runs, check the metrics match
    hss-gym list [workloads|configs|devices|policies|suites]
    hss-gym convert SRC DST                     any trace -> columnar cache
    hss-gym replay --workload ycsb-b            fast reference replays (Fast-Only, LRU, Slow-Only) in C
    hss-gym clean [--dry-run]                   remove the files of killed real-backend runs
    hss-gym calibrate ...                       measure a real device, write a simulator profile

``bench`` writes one JSON line per run to ``OUT/results.jsonl`` as soon as the run ends (with
provenance); ``--resume`` finishes only the missing runs of an interrupted bench. See
``hss-gym <command> --help`` and ``benchmarks/SUBMISSION.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from hss_gym._version import __version__

DEFAULT_CONFIGS = "perf_opt,cost_opt,tri,quad,pmem"
EXIT_USAGE, EXIT_FAILED_RUNS, EXIT_INCOMPLETE = 2, 3, 4


def _csv(s: str | None) -> list[str] | None:
    return [x.strip() for x in s.split(",") if x.strip()] if s else None


def _ints(s: str | list[int] | None) -> list[int] | None:
    if not s:
        return None
    if isinstance(s, list):  # already parsed by seed_list
        return s
    return seed_list(s)


# Numeric options are checked by argparse itself (``type=``), before any work: a bad value ends
# with "hss-gym COMMAND: error: argument --n: ..." and exit status 2, never a traceback.
MAX_SEED = 2**63


def int_arg(low: int, high: int | None = None) -> Any:
    """An argparse ``type`` for an integer in [low, high]."""
    def parse(text: str) -> int:
        where = f">= {low}" if high is None else f"in [{low}, {high:_}]"
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer {where}, got {text!r}") from None
        if v < low or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"must be an integer {where}, got {v}")
        return v
    parse.__name__ = "integer"
    return parse


def real_arg(low: float, low_open: bool = False) -> Any:
    """An argparse ``type`` for a finite number >= low (> low if ``low_open``)."""
    def parse(text: str) -> float:
        where = f"{'>' if low_open else '>='} {low:g}"
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a finite number {where}, got {text!r}") from None
        if not math.isfinite(v) or v < low or (low_open and v == low):
            raise argparse.ArgumentTypeError(f"must be a finite number {where}, got {text}")
        return v
    parse.__name__ = "number"
    return parse


def seed_list(text: str) -> list[int]:
    """An argparse ``type``: comma-separated seeds, each an integer in [0, 2**63)."""
    out = []
    for x in text.split(","):
        if not x.strip():
            continue
        try:
            v = int(x.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"seeds must be comma-separated integers >= 0, got {text!r}") from None
        if not 0 <= v < MAX_SEED:
            raise argparse.ArgumentTypeError(f"seeds must be integers in [0, 2**63), got {v} in {text!r}")
        out.append(v)
    if not out:
        raise argparse.ArgumentTypeError(f"seeds must be comma-separated integers >= 0, got {text!r}")
    return out


def _max_requests() -> int:
    from hss_gym.workloads.registry import MAX_REQUESTS
    return int(MAX_REQUESTS)


# ------------------------------------------------------------------------------------ bench
def cmd_bench(args: argparse.Namespace) -> int:
    from hss_gym.benchmarks.results import check_out_dir, results_path, writing
    from hss_gym.benchmarks.runner import declare_training, make_jobs
    from hss_gym.benchmarks.suites import load_suite, with_overrides, without_missing_extras

    suite = load_suite(args.suite, traces_dir=args.traces)
    suite = with_overrides(suite, policies=_csv(args.policies), tracks=_csv(args.tracks),
                           workloads=_csv(args.workloads), configs=_csv(args.configs),
                           seeds=_ints(args.seeds), n_requests=args.n, oracle=not args.no_oracle)
    suite, missing = without_missing_extras(suite)
    if missing:
        lines = "; ".join(f"{p} {why}" for p, why in missing.items())
        if args.policies:  # named ones are an error, up front; the suite's own are left out
            raise ValueError(f"--policies: not installed here: {lines}")
        if not args.quiet:
            print(f"left out ({len(missing)} of {len(suite.policies) + len(missing)} policies; install the "
                  f"extra to run them): {lines}", file=sys.stderr)
    out = Path(args.out or os.path.join("results", suite.name))
    rpath = results_path(out)
    check_out_dir(rpath.parent, "--out")
    if rpath.is_dir():
        raise ValueError(f"--out {out}: {rpath} is a directory, not a results file")
    jobs = make_jobs(suite)
    if args.trained_on is not None:
        declare_training(jobs, args.trained_on, _csv(args.policies))
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    if args.dry_run:  # reads only: no lock
        return _bench(args, suite, out, rpath, jobs, say)
    waiting = (lambda pid: say(f"{rpath} is being written by PID {pid or '?'}: waiting for it to finish"))
    with writing(rpath, wait=args.wait, on_wait=waiting):  # one writer, from the resume choice to the end
        return _bench(args, suite, out, rpath, jobs, say)


def _bench(args: argparse.Namespace, suite: Any, out: Path, rpath: Path, jobs: list[dict[str, Any]],
           say: Any) -> int:
    from hss_gym.benchmarks.report import print_table, write_reports
    from hss_gym.benchmarks.results import read_results
    from hss_gym.benchmarks.runner import describe_failures, jobs_to_run, run_jobs, wants_ray
    todo = jobs_to_run(jobs, rpath, resume=args.resume, fresh=args.fresh, dry_run=args.dry_run, say=say)
    n_tracks = len(suite.tracks)
    say(f"suite {suite.name}: {n_tracks} track(s), {len(suite.policies)} policies "
        f"({', '.join(suite.policies)}), {len(jobs)} runs; {len(todo)} to run -> {rpath}")
    if args.dry_run:
        for j in todo:
            print(f"{j['track']}\t{j['workload']}\t{j['config']}\t{j['policy']}\tseed {j['seed']}\tn {j['n_requests']}")
        return 0
    use_ray = wants_ray(args.ray, args.local)
    if use_ray:
        say(f"distributing over Ray ({args.ray_address or os.environ.get('RAY_ADDRESS') or 'a local Ray instance'})")
    summary = run_jobs(jobs, rpath, resume=bool(args.resume), workers=args.jobs, use_ray=use_ray,
                       ray_address=args.ray_address, progress=not args.quiet)  # re-enters our lock
    say(f"{summary.ok} runs ok, {len(summary.failed)} failed, {summary.skipped} already done; "
        f"{summary.wall_s:.1f} s")
    records = read_results(rpath)
    print(print_table(records))
    if not args.no_report:
        md, page = write_reports(records, out, title=f"hss-gym leaderboard: {suite.name}",
                                 command=args.command_line, with_figures=not args.no_figures)
        print(f"report: {md}  {page}\nresults: {rpath}")
    if summary.failed:
        print(f"\n{len(summary.failed)} run(s) failed (recorded in {rpath.name}; `--resume` retries them):\n"
              + describe_failures(summary.failed), file=sys.stderr)
        return EXIT_FAILED_RUNS
    return 0


# ------------------------------------------------------------------------------------ report
def cmd_report(args: argparse.Namespace) -> int:
    """Write the reports. A record's ``module:attribute`` problem is imported only under validate's
    rules (``--allow PKG``, never from the current folder or the results files'): a report of an
    untrusted submission runs none of its code."""
    from hss_gym.benchmarks.report import print_table, write_reports
    from hss_gym.benchmarks.results import gather_results
    from hss_gym.benchmarks.validate import code_uses, no_imports_from
    records, files = gather_results(args.results)
    if not records:
        raise ValueError(f"no result records in {', '.join(map(str, files))}")
    folders = sorted({f.parent for f in files})
    with no_imports_from(folders):
        uses = code_uses(records, _allowed(args), folders, command="report").values()
        refused = [u.describe() for u in uses if u.refused is not None]
        if refused:
            raise ValueError("report: not written, the results name problems outside hss-gym: "
                             + "; ".join(refused))
        for use in uses:
            print(f"report: {use.describe()}")
        out = Path(args.out) if args.out else files[0].parent
        md, page = write_reports(records, out, title=args.title, command=args.command_line,
                                 with_figures=not args.no_figures)
        if not args.quiet:
            print(print_table(records))
    print(f"report: {md}  {page}")
    return 0


def _allowed(args: argparse.Namespace) -> list[str]:
    """The top-level packages of ``--allow`` (repeatable, comma-separated)."""
    return [p for a in args.allow for p in _csv(a) or []]


def _add_allow(parser: argparse.ArgumentParser, what: str) -> None:
    """``--allow PKG[,PKG]``, the same for validate and report: ``what`` the code it imports."""
    parser.add_argument("--allow", action="append", default=[], metavar="PKG[,PKG]",
                        help=f"import {what} of these top-level packages, installed (repeatable or "
                             "comma-separated; only code you trust: it is imported and run). Built-ins "
                             "need none")


# ---------------------------------------------------------------------------------- validate
def cmd_validate(args: argparse.Namespace) -> int:
    from hss_gym.benchmarks.validate import no_imports_from
    results = Path(args.results)
    folder = results if results.is_dir() else results.parent
    with no_imports_from([folder]):  # nothing lying beside the results (or here) is imported
        return _validate(args, folder)


def _validate(args: argparse.Namespace, folder: Path) -> int:
    import secrets

    from tqdm import tqdm

    from hss_gym.benchmarks.results import gather_results
    from hss_gym.benchmarks.validate import choose, code_uses, sampling, validate_results
    records, _ = gather_results([args.results])
    sample, per_cell = sampling(args.all, args.sample)
    tracks = _csv(args.tracks)
    allow = _allowed(args)
    seed = secrets.randbelow(MAX_SEED) if args.seed is None else args.seed
    if not args.all:  # a fresh draw each time (a fixed one would always check the same runs)
        print(f"validate: sample seed {seed} (repeat this choice with --seed {seed})")
    chosen = choose(records, sample, seed, per_cell, tracks)
    uses = code_uses(chosen, allow, [folder])
    print(f"validate: {len(uses)} policy/problem spec(s) in the runs to re-run:")
    for use in uses.values():
        print(f"  {use.describe()}")
    bar = tqdm(total=len(chosen), desc="validate", unit="run", disable=args.quiet, file=sys.stderr)

    def progress(chk: Any) -> None:
        bar.update(1)
        if chk.status != "ok" or args.verbose:
            bar.write(chk.describe())

    rep = validate_results(records, sample=sample, seed=seed, rtol=args.rtol, progress=progress,
                           per_cell=per_cell, tracks=tracks, workers=args.jobs, allow=allow, folders=[folder],
                           traces_dir=args.traces)
    bar.close()
    print(rep.summary())
    return 0 if rep.passed else 1 if rep.failed else EXIT_INCOMPLETE


# -------------------------------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    import importlib.util

    from hss_gym.agents.base import POLICIES
    from hss_gym.backends.sim import builtin_profiles, load_profile
    from hss_gym.benchmarks.suites import list_suites, load_suite
    from hss_gym.config import CONFIGURATIONS
    from hss_gym.workloads.registry import list_workloads
    from hss_gym.workloads.synthetic import FAMILIES, TARGETS

    what = {"configurations": "configs", "config": "configs", "workload": "workloads",
            "policy": "policies", "suite": "suites", "device": "devices"}.get(args.what, args.what)
    if what in ("all", "workloads"):
        print("workloads (synthetic, Harmonia Table 4; read %, mean size KiB, mean gap µs):")
        for w in list_workloads():
            if w in TARGETS:
                t = TARGETS[w]
                print(f"  {w:10s} {FAMILIES.get(w, ''):8s} {t.read_pct:5.1f}% {t.size_kib:6.1f} KiB {t.gap_us:7.1f} µs")
            else:
                from hss_gym.workloads.mixes import MIXES
                if w in MIXES:
                    print(f"  {w:10s} mix      {' + '.join(MIXES[w])}")
                else:
                    print(f"  {w:16s} learning scenario with a known answer (hss_gym.workloads.learning)")
        print("  or the path of a trace file (hss-gym convert --help lists the formats)")
    if what in ("all", "configs"):
        print("configurations (devices fastest first; capacity as a fraction of the workload footprint):")
        for name, (devs, fr) in CONFIGURATIONS.items():
            print(f"  {name:10s} {' + '.join(devs):22s} fractions {', '.join(map(str, fr))}")
    if what in ("all", "devices"):
        print("devices:")
        for d in builtin_profiles():
            print(f"  {d:6s} {load_profile(d).name}")
    if what in ("all", "policies"):
        print("policies (by name, 'module:factory' for your own, or a trained model: 'sb3:PATH.zip', 'torch:PATH.pt', 'rllib:DIR'):")
        for name, spec in POLICIES.items():
            mod = spec.partition(":")[0]
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            print(f"  {name:15s} {spec}" + ("" if found else "   (not available: module not found)"))
        from hss_gym.benchmarks.problems import MODEL_PROBLEMS, get_problem, list_problems
        for prob in list_problems():
            if prob != "hss":
                models = ("; a trained model: sb3:PATH.zip, torch:PATH.pt, rllib:DIR" if prob in MODEL_PROBLEMS
                          else "")
                print(f"  {prob} problem: {', '.join(get_problem(prob).policies())}{models}")
    if what in ("all", "problems"):
        from hss_gym.benchmarks.problems import get_problem, list_problems
        print("problems (a suite's \"problem\"):")
        for prob in list_problems():
            print(f"  {prob:9s} {get_problem(prob).title}")
    if what in ("all", "suites"):
        print("suites:")
        for s in list_suites():
            try:
                su = load_suite(s, check=False, traces_dir="DIR")
                desc = su.description
                runs = ", ".join(f"{t.name}" for t in su.tracks) + f"; problem {su.problem}"
            except ValueError as e:  # pragma: no cover
                desc, runs = str(e), ""
            print(f"  {s:13s} {desc}\n  {'':13s} tracks: {runs}")
    return 0


# ------------------------------------------------------------------------------------ traces
def cmd_traces(args: argparse.Namespace) -> int:
    """``hss-gym traces list | info NAME | fetch NAME...``: the pinned real-trace catalogue."""
    import json

    from hss_gym.workloads import catalogue as cat

    if args.action == "list":
        print(f"catalogue traces (cache: {cat.cache_dir()}; name them as catalogue:NAME):")
        for e in cat.ENTRIES:
            here = "cached" if cat.local_path(e.name).exists() else (
                "not cached" if e.url else "not cached, no URL pinned")
            print(f"  {e.name:18s} {e.format:12s} {e.requests:>9,} requests {e.size / 1e6:6.2f} MB"
                  f"  {here}")
        return 0
    if not args.names and not args.all:
        raise ValueError(f"hss-gym traces {args.action} needs trace names (or --all); "
                         f"the catalogue: {', '.join(cat.names())}")
    names = cat.names() if args.all else args.names
    with _terminate_as_exit():  # a SIGTERMed fetch removes its partial download too
        return _traces(args, names)


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Meanwhile SIGTERM raises SystemExit (status 143), so ``finally`` clauses run (the default
    ends the process at once, leaving temporary files behind); in the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _traces(args: argparse.Namespace, names: list[str]) -> int:
    """``traces info`` / ``fetch`` of ``names``."""
    from hss_gym.workloads import catalogue as cat
    for name in names:
        if args.action == "info":
            info = cat.entry(name).info()
            info["cached"] = str(cat.local_path(name)) if cat.local_path(name).exists() else None
            print(json.dumps(info, indent=2))
        else:
            path = cat.fetch(name, mirror=args.mirror, force=args.force)
            print(f"{cat.entry(name).name}: {path} (sha256 verified)")
    return 0


# ----------------------------------------------------------------------------------- convert
def cmd_convert(args: argparse.Namespace) -> int:
    from hss_gym.benchmarks.results import check_out_dir
    from hss_gym.workloads.readers import convert
    src, dst = Path(args.src), Path(args.dst)
    if not src.exists():
        raise FileNotFoundError(f"convert: no trace file {args.src!r}")
    if src.is_dir():
        raise ValueError(f"convert: SRC {args.src} is a directory; give a trace file")
    if dst.is_dir():
        raise ValueError(f"convert: DST {args.dst} is an existing directory; give the path of the cache file "
                         f"to write (e.g. {dst / (src.name + '.npz')})")
    check_out_dir(dst.parent, "convert: DST's directory")
    convert(args.src, args.dst, format=args.format, force=args.force)
    print(f"wrote {args.dst}")
    return 0


# ------------------------------------------------------------------------------------- clean
def cmd_clean(args: argparse.Namespace) -> int:
    """Remove (or list) the device files of real-backend runs that were killed."""
    from hss_gym.backends.leftovers import clean_leftovers, state_dir
    found = clean_leftovers(dry_run=args.dry_run)
    present = [lo for lo in found if lo.present]
    verb = "would remove" if args.dry_run else "removed"
    for lo in present:
        size = ""
        try:
            st = os.stat(lo.path)
            size = f" ({st.st_blocks * 512 / 2**20:.1f} MiB on disk)"
        except OSError:
            pass
        print(f"{verb} {lo.path}{size if args.dry_run else ''}: left by PID {lo.pid}, which is gone")
    gone = len(found) - len(present)
    print(f"{len(present)} leftover file(s) of killed real-backend runs {verb}"
          + (f"; {gone} recorded file(s) already gone or replaced (not touched)" if gone else "")
          + f" (records: {state_dir()})")
    return 0


# ------------------------------------------------------------------------------------ replay
def cmd_replay(args: argparse.Namespace) -> int:
    """Reference replays entirely in C (no Python per request): quick device-model sanity checks."""
    from hss_gym.benchmarks.results import check_out_dir
    from hss_gym.replay import references_table, replay_references, write_references_report

    out = Path(args.out)
    check_out_dir(out, "--out")
    rpath = out / "results.jsonl"
    configs, workloads = _csv(args.config) or [], _csv(args.workload) or []
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    waiting = (lambda pid: say(f"{rpath} is being written by PID {pid or '?'}: waiting for it to finish"))
    done = replay_references(workloads, configs, args.n, args.seed, rpath, fresh=args.fresh, wait=args.wait,
                             on_wait=waiting, progress=not args.quiet)
    table = references_table(done, workloads, configs, args.seed)
    report = write_references_report(out, table, args.n, args.seed)
    print(table)
    print(f"\nreport: {report}  results: {rpath}")
    return 0


# --------------------------------------------------------------------------------- calibrate
CALIBRATE_HELP = "measure a real device (file or block device) and write a simulator device profile"


def _calibrate_module() -> tuple[Any, str | None]:
    """``hss_gym.backends.calibrate`` (imported lazily), or None and why it is unavailable."""
    try:
        from hss_gym.backends import calibrate as cal
        cal.add_calibrate_arguments, cal.run_calibrate  # noqa: B018 - the interface it must have
        return cal, None
    except Exception as e:  # ImportError, an error while importing it, or a missing function
        return None, f"{type(e).__name__}: {e}"


def _calibrate_unavailable(why: str) -> int:
    print(f"hss-gym: error: calibrate is not available: the module hss_gym.backends.calibrate could "
          f"not be loaded ({why}). It ships with the real-device backend; reinstall hss-gym from a "
          f"source tree that has backends/calibrate.py.", file=sys.stderr)
    return EXIT_USAGE


def _add_calibrate(sub: Any) -> None:
    cal, why = _calibrate_module()
    if cal is not None:
        p = sub.add_parser("calibrate", help=CALIBRATE_HELP, description=CALIBRATE_HELP)
        cal.add_calibrate_arguments(p)
        p.set_defaults(func=cal.run_calibrate)
    else:
        p = sub.add_parser("calibrate", help=CALIBRATE_HELP + " (unavailable in this installation)",
                           description=f"{CALIBRATE_HELP}. Unavailable in this installation: {why}")
        p.set_defaults(func=lambda a: _calibrate_unavailable(str(why)))


# ------------------------------------------------------------------------------------ parser
MAIN_EPILOG = """\
first steps:
  hss-gym list                              what can be run: workloads, configurations, policies, suites
  hss-gym bench --suite quick               the quick leaderboard (a few minutes on 2 cores)
  hss-gym bench --suite quick --policies mypkg.mymod:make_policy
                                            your policy against Fast-Only (and Oracle) on the quick suite
  hss-gym report results/quick              rebuild report.md / report.html from the results
  hss-gym validate results/quick            re-run one random run of every cell, check they reproduce exactly
"""

BENCH_EPILOG = """\
examples:
  hss-gym bench                                         quick suite, all policies, all cores
  hss-gym bench --suite hss-bench-v2 --jobs 16          the standard HSS leaderboard
  hss-gym bench --suite hss-bench-v2 --ray              ... on a Ray cluster (or set RAY_ADDRESS)
  hss-gym bench --suite quick --policies random,cde --workloads ycsb-b --n 5000
  hss-gym bench --suite real --traces ~/traces          every trace file of a directory
  hss-gym bench --suite my_suite.json --resume          finish an interrupted bench

Each run = a fresh policy instance + one episode (learners learn online). Results go to
OUT/results.jsonl (one JSON line per run, with provenance), then OUT/report.md and report.html.
Runs that fail (a policy that does not import or crashes) are recorded with their error; the
others continue, and the exit status is 3.
"""


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = argparse.ArgumentParser(
        prog="hss-gym", formatter_class=fmt, epilog=MAIN_EPILOG,
        description="hss-gym: reinforcement-learning environments for data placement and migration in "
                    "hybrid storage systems. This command runs and checks leaderboards of placement/"
                    "migration policies and converts traces.")
    ap.add_argument("--version", action="version", version=f"hss-gym {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("bench", formatter_class=fmt, epilog=BENCH_EPILOG,
                       help="run policies over a benchmark suite and write a leaderboard",
                       description="Run policies over the workloads and configurations of a suite, one "
                                   "episode per (workload, configuration, seed, policy), and write the "
                                   "leaderboard.")
    b.add_argument("--suite", default="quick",
                   help="suite name (see `hss-gym list suites`) or a suite JSON file (default: quick)")
    b.add_argument("--policies", metavar="P1,P2",
                   help="comma-separated policies instead of the suite's: registered names "
                        "(`hss-gym list policies`), module:factory, or a trained model (sb3:PATH.zip, torch:PATH.pt, rllib:DIR); "
                        "fast_only (and oracle) are added as references")
    b.add_argument("--trained-on", metavar="TEXT",
                   help="declare what the --policies trained on, recorded with their runs and shown by the report: "
                        "'none', 'train' (the package's training split) or a description (benchmarks/SUBMISSION.md)")
    b.add_argument("--no-oracle", action="store_true", help="do not run the Oracle (no %% of Oracle column)")
    b.add_argument("--workloads", metavar="W1,W2", help="only these workloads (names or trace files)")
    b.add_argument("--configs", metavar="C1,C2", help="only these configurations")
    b.add_argument("--tracks", metavar="T1,T2", help="only these tracks of the suite")
    b.add_argument("--seeds", metavar="S1,S2", type=seed_list,
                   help="seeds instead of the suite's (e.g. 0,1,2; each in [0, 2**63))")
    b.add_argument("--n", type=int_arg(1, _max_requests()), metavar="REQUESTS",
                   help="requests per workload instead of the suite's (>= 1)")
    b.add_argument("--traces", metavar="DIR", help="directory of trace files for the `real` suite")
    b.add_argument("--out", metavar="DIR", help="output directory (default: results/SUITE)")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", help="run only the runs missing from OUT/results.jsonl")
    g.add_argument("--fresh", action="store_true", help="delete OUT/results.jsonl and start over")
    b.add_argument("--jobs", "-j", type=int_arg(1), metavar="N", help="local worker processes, >= 1 (default: all cores)")
    b.add_argument("--wait", action="store_true",
                   help="if another bench or replay is writing OUT/results.jsonl, wait for it instead of refusing")
    b.add_argument("--ray", action="store_true",
                   help="distribute the runs over Ray (default address: $RAY_ADDRESS, else a local Ray)")
    b.add_argument("--ray-address", metavar="ADDR", help="Ray cluster address (implies nothing without --ray "
                                                         "unless RAY_ADDRESS is set)")
    b.add_argument("--local", action="store_true", help="use local processes even if RAY_ADDRESS is set")
    b.add_argument("--dry-run", action="store_true", help="list the runs that would be run, run nothing")
    b.add_argument("--no-report", action="store_true", help="do not write report.md / report.html")
    b.add_argument("--no-figures", action="store_true", help="HTML report without figures (faster)")
    b.add_argument("--quiet", "-q", action="store_true", help="no progress bar or status lines")
    b.set_defaults(func=cmd_bench)

    r = sub.add_parser("report", help="write the Markdown and HTML leaderboard of results files",
                       description="Build report.md (leaderboard tables) and report.html (tables and "
                                   "figures, self-contained) from one or more results files. No code the "
                                   "results name is imported unless --allow names its package (a "
                                   "'module:attribute' problem; as validate), and nothing from the current "
                                   "folder or the results files'.")
    r.add_argument("results", nargs="+", help="results.jsonl files or bench output directories")
    r.add_argument("--out", metavar="DIR", help="where to write the reports (default: next to the first file)")
    r.add_argument("--title", default="hss-gym leaderboard")
    r.add_argument("--no-figures", action="store_true", help="HTML without figures")
    r.add_argument("--quiet", "-q", action="store_true", help="do not print the tables")
    _add_allow(r, "the 'module:attribute' problems that records name")
    r.set_defaults(func=cmd_report)

    v = sub.add_parser("validate", help="re-run a sample of a results file's runs and check the metrics",
                       description="Re-run a random sample of the successful runs of a results file and "
                                   "compare every metric with the recorded one: by default one run of "
                                   "every (policy, workload, configuration) cell, drawn with a fresh seed "
                                   "that is printed (--seed repeats a draw). The simulator is "
                                   "deterministic, so by default they must match exactly. Results from "
                                   "another hss-gym version, or whose trace or configuration hash differs "
                                   "from this installation's, are refused with the reason. No code the "
                                   "results file names is imported unless --allow names its package: the "
                                   "runs of other 'module:factory' policies (or 'module:attribute' "
                                   "problems) are not validated, and nothing is imported from the current "
                                   "folder or the results file's. Exit status 0 = passed, 1 = failed, "
                                   "4 = incomplete (runs not validated).")
    v.add_argument("results", help="a results.jsonl file or a bench output directory")
    v.add_argument("--sample", type=int_arg(1), default=None, metavar="K",
                   help="re-run K random runs, >= 1 (default: one run of every cell)")
    v.add_argument("--all", action="store_true", help="re-run every run")
    v.add_argument("--rtol", type=real_arg(0.0), default=0.0,
                   help="relative tolerance, >= 0 (default 0: exact match, the simulator is deterministic)")
    v.add_argument("--seed", type=int_arg(0, MAX_SEED - 1), default=None,
                   help="seed of the sample choice (>= 0; default: a fresh one, printed)")
    v.add_argument("--tracks", metavar="T1,T2", help="only runs of these tracks")
    v.add_argument("--traces", metavar="DIR",
                   help="read trace files the results name by paths that do not exist here from DIR, by "
                        "file name (as bench --suite real --traces DIR read them)")
    v.add_argument("--jobs", "-j", type=int_arg(1), default=1, metavar="N",
                   help="local worker processes for the re-runs, >= 1 (default 1)")
    _add_allow(v, "and re-run the 'module:factory' policies (and 'module:attribute' problems)")
    v.add_argument("--verbose", "-v", action="store_true", help="print every checked run")
    v.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    v.set_defaults(func=cmd_validate)

    li = sub.add_parser("list", help="list workloads, configurations, devices, policies and suites")
    li.add_argument("what", nargs="?", default="all",
                    choices=["all", "workloads", "configs", "configurations", "devices", "policies", "problems",
                             "suites"])
    li.set_defaults(func=cmd_list)

    tr = sub.add_parser("traces", help="the pinned catalogue of public real traces: list, info NAME, "
                                       "fetch NAME (downloaded once, sha256-verified)")
    tr.add_argument("action", choices=["list", "info", "fetch"])
    tr.add_argument("names", nargs="*", help="catalogue trace names")
    tr.add_argument("--all", action="store_true", help="every trace of the catalogue")
    tr.add_argument("--mirror", default=None,
                    help="base URL holding the files by file name (default: $HSS_GYM_MIRROR, else "
                         "each trace's pinned URL)")
    tr.add_argument("--force", action="store_true", help="download again even if cached")
    tr.set_defaults(func=cmd_traces)

    c = sub.add_parser("convert", help="convert a trace file (any supported format) to the columnar cache format")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--format", default=None, help="input format (default: auto-detect)")
    c.add_argument("--force", action="store_true", help="replace DST if it exists (never SRC itself)")
    c.set_defaults(func=cmd_convert)

    rp = sub.add_parser("replay", help="fast reference replays in C (Fast-Only, LRU eviction, Slow-Only)")
    rp.add_argument("--workload", default="ycsb-b",
                    help="comma-separated workload names or trace paths (see `hss-gym list workloads`)")
    rp.add_argument("--config", default=DEFAULT_CONFIGS, help=f"comma-separated configurations (default {DEFAULT_CONFIGS})")
    rp.add_argument("--n", type=int_arg(1, _max_requests()), default=100_000,
                    help="requests per synthetic workload (>= 1)")
    rp.add_argument("--seed", type=int_arg(0, MAX_SEED - 1), default=0, help="seed (>= 0)")
    rp.add_argument("--out", default="results/replay", help="output directory (results.jsonl, report.md)")
    rp.add_argument("--fresh", action="store_true", help="discard earlier results instead of resuming")
    rp.add_argument("--wait", action="store_true",
                    help="if another bench or replay is writing OUT/results.jsonl, wait for it instead of refusing")
    rp.add_argument("--quiet", action="store_true", help="no progress bar")
    rp.set_defaults(func=cmd_replay)

    cl = sub.add_parser("clean", help="remove the device files left by killed real-backend runs",
                        description="Find the device files that real-backend runs (backend='uring') created "
                                    "and could not remove because they were killed (SIGKILL, power loss), and "
                                    "remove them. Only files still as created are removed (same inode); runs "
                                    "still running are left alone. SIGTERM/SIGHUP/Ctrl-C clean up by themselves.")
    cl.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    cl.set_defaults(func=cmd_clean)

    _add_calibrate(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["calibrate"] and not {"-h", "--help"} & set(argv[1:]):
        cal, why = _calibrate_module()
        if cal is None:  # its options are unknown without the module: say why, do not parse
            return _calibrate_unavailable(str(why))
    args = build_parser().parse_args(argv)
    args.command_line = "hss-gym " + shlex.join(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, RuntimeError, LookupError) as e:
        # a user mistake (bad name, path, option or file): the message, never a traceback
        msg = str(e) if not isinstance(e, KeyError) else str(e.args[0] if e.args else e)
        print(f"hss-gym: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as e:
        # a trace's reader says which file and how many requests to ask for; anything else: --n
        print(f"hss-gym: error: {str(e) or 'out of memory; ask for fewer requests (--n)'}",
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hss-gym: interrupted (finished runs are saved; rerun with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
