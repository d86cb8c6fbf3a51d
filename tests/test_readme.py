"""Every ```python block of README.md runs verbatim, each in a fresh interpreter.

A block is the first code a new user copies, so it is run exactly as written (no trimming, no
monkeypatching: the README keeps its blocks fast instead), in a temporary directory (blocks may
write files). A block that needs an optional extra which is not installed is skipped, naming the
missing module and the extra. The first block promises "same seed, same episode": it is run twice
and must print the same thing.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
#: modules that only optional extras install, and the extra that brings each
EXTRA_OF = {"torch": "agents", "sklearn": "agents", "matplotlib": "agents",
            "stable_baselines3": "sb3", "torchrl": "torchrl", "ray": "rllib"}


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python fenced blocks of ``text``, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def env_table_cells(text: str) -> list[str]:
    """The "create it" cells of the README's environments table (the code span of column 2)."""
    section = text.split("\n## Environments", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "`" in r]
    return [re.fullmatch(r"`([^`]+)`", r.split(" | ")[1].strip()).group(1) for r in rows]


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))
ENV_CELLS = env_table_cells(README.read_text(encoding="utf-8"))


def run_block(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter in ``cwd``; skip when an optional extra is missing."""
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        missing = re.search(r"No module named '([\w.]+)'", out.stderr)
        top = missing.group(1).split(".")[0] if missing else None
        if top in EXTRA_OF:
            pytest.skip(f"needs {top!r}, from the '{EXTRA_OF[top]}' extra (pip install 'hss-gym[{EXTRA_OF[top]}]'), "
                        f"which is not installed")
    assert out.returncode == 0, f"README block failed:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"
    return out


def test_readme_has_blocks() -> None:
    assert len(BLOCKS) >= 4 and "parallel_env" in BLOCKS[0]


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], tmp_path)
    if "loss_curves" in BLOCKS[index]:  # prints numbers (mean latency, loss), not a (step, loss) tuple
        values = out.stdout.strip().splitlines()[-1].split()
        assert [float(v) for v in values] and len(values) == 2, out.stdout


def test_readme_first_block_same_seed_same_episode(tmp_path: Path) -> None:
    """The first snippet samples random actions: seeded, two runs print the same result."""
    first = run_block(BLOCKS[0], tmp_path).stdout
    second = run_block(BLOCKS[0], tmp_path).stdout
    assert first.strip() and first == second


def test_readme_env_table_lists_every_env() -> None:
    text = " ".join(ENV_CELLS)
    for name in ("hss_v0.parallel_env(", "hss/Placement-v0", "hss/Migration-v0", "fleetio_v1.parallel_env(",
                 "hss/RLAlloc-v0", "hss/LQoCo-v0"):
        assert name in text, name


@pytest.mark.parametrize("index", range(len(ENV_CELLS)), ids=[f"env{i}" for i in range(len(ENV_CELLS))])
def test_readme_env_table_row_runs(index: int, tmp_path: Path) -> None:
    """Each row of the environments table is copy-pasteable as written: it makes an env that resets."""
    run_block(ENV_CELLS[index] + "\nenv.reset(seed=0)\nprint(type(env).__name__)", tmp_path)


#: the most runs a README validate command may re-run: it must take minutes (24 real-trace runs
#: took 52 s on the loaded 2-core machine)
MAX_VALIDATE_SAMPLE = 30
ROOT = README.parent
SHARED_TRACES = ROOT.parent / "shared" / "traces"


def validate_commands(text: str) -> list[list[str]]:
    """The ``hss-gym validate ...`` commands of ``text`` (code spans, wrapped or not, and code
    blocks), outside tables, as argument lists."""
    prose = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    spans = re.findall(r"`(hss-gym validate [^`]+)`", prose.replace("\n", " "))
    lines = [ln.split("#")[0] for ln in prose.splitlines() if ln.strip().startswith("hss-gym validate ")]
    return [shlex.split(c) for c in spans + lines]


VALIDATE_COMMANDS = validate_commands(README.read_text(encoding="utf-8"))


def _records(results: Path) -> list[dict]:
    from hss_gym.benchmarks.results import read_results, results_path
    return read_results(results_path(results))


def test_readme_validate_commands_are_sampled_and_name_their_traces() -> None:
    """README's validate commands run as written on a fresh clone (beside ../shared): the CLI
    takes them, they re-run a sample of at most MAX_VALIDATE_SAMPLE runs of a committed results
    folder, and every trace file those runs read is found where the command says (--traces DIR,
    relative to the clone) or is a pinned catalogue trace."""
    from hss_gym.cli import build_parser
    from hss_gym.workloads import catalogue
    assert VALIDATE_COMMANDS, "README.md names no hss-gym validate command"
    pinned = {e.sha256 for e in catalogue.ENTRIES if e.url}
    for cmd in VALIDATE_COMMANDS:
        args = build_parser().parse_args(cmd[1:])
        assert args.sample is not None and args.sample <= MAX_VALIDATE_SAMPLE and not args.all, (
            f"{' '.join(cmd)}: re-runs more than a sample (--sample K, K <= {MAX_VALIDATE_SAMPLE})")
        results = ROOT / args.results
        assert results.is_dir(), f"{' '.join(cmd)}: no committed results folder {args.results}"
        files = {(r["workload"], (r["provenance"]["trace"].get("source") or {}).get("sha256"))
                 for r in _records(results) if os.sep in r["workload"]}
        unpinned = sorted(os.path.basename(w) for w, sha in files if sha not in pinned)
        if unpinned:
            assert args.traces is not None, f"{' '.join(cmd)}: {unpinned} have no pinned URL and no --traces DIR"
            traces = (ROOT / args.traces).resolve()
            if traces == SHARED_TRACES.resolve() and not SHARED_TRACES.is_dir():
                pytest.skip(f"{SHARED_TRACES} is absent: the development workspace's traces")
            missing = [n for n in unpinned if not (traces / n).is_file()]
            assert not missing, f"{' '.join(cmd)}: {missing} are not in {traces}"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(VALIDATE_COMMANDS)), ids=[f"validate{i}" for i in range(len(VALIDATE_COMMANDS))])
def test_readme_validate_command_passes_in_minutes(index: int) -> None:
    """The command itself, from the clone's root, as written: PASSED within 5 minutes."""
    from hss_gym import __version__
    from hss_gym.cli import build_parser
    cmd = VALIDATE_COMMANDS[index]
    args = build_parser().parse_args(cmd[1:])
    if args.traces is not None and not (ROOT / args.traces).is_dir():
        pytest.skip(f"{args.traces} (the development workspace's traces) is absent")
    versions = {r["provenance"].get("hss_gym_version") for r in _records(ROOT / args.results)}
    if versions != {__version__}:
        pytest.skip(f"{args.results} holds runs of hss-gym {sorted(map(str, versions))}, this is {__version__}: "
                    f"validate refuses them until the leaderboard is re-run with it")
    out = subprocess.run([sys.executable, "-c", "import sys; from hss_gym.cli import main; sys.exit(main())",
                          *cmd[1:], "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "PASSED" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
