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


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


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
