"""Every ```python block of README.md runs verbatim, each in a fresh interpreter.

A block is the first code a new user copies, so it is run exactly as written (no trimming, no
monkeypatching: the README keeps its blocks fast instead), in a temporary directory (blocks may
write files). A block that needs an optional extra which is not installed is skipped, naming the
missing module and the extra. The first block promises "same seed, same episode": it is run twice
and must print the same thing.
"""

from __future__ import annotations

import re
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
