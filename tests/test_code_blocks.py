"""Every code block of the docs is exercised: README.md, docs/*.md, benchmarks/SUBMISSION.md, examples/README.md.

* ```python blocks run verbatim, each in a fresh interpreter in a temporary folder (README.md's are
  run by test_readme.py, which also checks what they print). A block that must not run in a test
  says why on the line just before its fence, ``<!-- not run: REASON -->``; one that takes
  seconds of CPU, ``<!-- slow test: REASON -->``, runs with the slow tests; one that needs an
  optional extra which is not installed is skipped, naming it. A block that is a file of a
  package (first line ``# mypkg/policies.py``) is written there and its factory played for an
  episode, the way ``hss-gym bench --policies mypkg.policies:make`` would.
* ```bash blocks are syntax-checked (``bash -n``), and every ``hss-gym`` command in them is parsed
  by the CLI's own parser (an unknown subcommand or option fails); running them would take
  minutes to hours (benches, validations).
* ```json blocks parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "SUBMISSION.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "examples" / "README.md"]
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
SLOW = re.compile(r"^<!-- slow test: (.+?) -->$")
EXTRA_OF = {"torch": "agents", "sklearn": "agents", "matplotlib": "agents", "stable_baselines3": "sb3",
            "torchrl": "torchrl", "ray": "rllib"}


def fenced_blocks(text: str) -> list[tuple[int, str, str, str]]:
    """(line, language, body, the line before the fence) of each fenced block of ``text``."""
    out, lang, buf, start, before = [], None, [], 0, ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if lang is None:
            m = re.match(r"^\s*```(\S*)\s*$", line)
            if m:
                lang, buf, start, before = m.group(1), [], i + 1, lines[i - 1].strip() if i else ""
        elif re.match(r"^\s*```\s*$", line):
            out.append((start, lang, "\n".join(buf) + "\n", before))
            lang = None
        else:
            buf.append(line)
    return out


def blocks_of(language: str) -> list[pytest.param]:
    params = []
    for page in PAGES:
        for line, lang, body, before in fenced_blocks(page.read_text(encoding="utf-8")):
            if lang == language:
                where = f"{page.relative_to(ROOT).as_posix()}:{line}"
                marks = [pytest.mark.slow] if SLOW.match(before) else []
                params.append(pytest.param(page, body, before, id=where, marks=marks))
    return params


PYTHON = [p for p in blocks_of("python") if p.values[0].name != "README.md" or p.values[0].parent != ROOT]
BASH = blocks_of("bash")


def run_python(code: str, cwd: Path, where: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env=env)
    if out.returncode != 0:
        missing = re.search(r"No module named '([\w.]+)'", out.stderr)
        top = missing.group(1).split(".")[0] if missing else None
        if top in EXTRA_OF:
            pytest.skip(f"{where} needs {top!r}, from the '{EXTRA_OF[top]}' extra (pip install "
                        f"'hss-gym[{EXTRA_OF[top]}]'), which is not installed")
    assert out.returncode == 0, f"{where} failed:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"
    return out


def test_every_page_is_inventoried() -> None:
    """The pages scanned are the docs: a new page under docs/ is scanned too."""
    assert len(PYTHON) >= 10 and len(BASH) >= 8
    assert {p.values[0].name for p in PYTHON} >= {"hss.md", "agents.md", "SUBMISSION.md"}


@pytest.mark.parametrize("page,code,before", PYTHON)
def test_python_block_runs(page: Path, code: str, before: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    where = request.node.callspec.id
    reason = NOT_RUN.match(before)
    if reason:
        assert len(reason.group(1).strip()) > 10, f"{where}: say why it is not run"
        pytest.skip(f"{where} is marked not run: {reason.group(1)}")
    first = code.splitlines()[0]
    module = re.fullmatch(r"# ([\w/]+)\.py", first.strip())
    if module:  # a file of a package: write it, then play its factory for an episode
        path = tmp_path / f"{module.group(1)}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(code, encoding="utf-8")
        name = module.group(1).replace("/", ".")
        code = (f"from hss_gym.agents import make_env, make_policy, run_episode\n"
                f"p = make_policy({name + ':make'!r})\n"
                f"r = run_episode(p, make_env(p, 'perf_opt', 'lun2', n_requests=2_000), seed=0)\n"
                f"assert r.steps == 2_000, r.steps\n")
    run_python(code, tmp_path, where)


@pytest.mark.parametrize("page,code,before", BASH)
def test_bash_block_parses(page: Path, code: str, before: str) -> None:
    out = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
    assert out.returncode == 0, f"bash -n: {out.stderr}"
    from hss_gym import cli
    parser = cli.build_parser()
    for line in code.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("nice -n"):
            line = line.split(None, 3)[3]
        if not line.startswith("hss-gym "):
            continue
        try:
            parser.parse_args(shlex.split(line)[1:])
        except SystemExit:
            pytest.fail(f"{line!r}: the hss-gym command line refuses it")


@pytest.mark.parametrize("page,code,before", blocks_of("json"))
def test_json_block_parses(page: Path, code: str, before: str) -> None:
    json.loads(code)


def test_not_run_marker_is_recognised() -> None:
    """The marker as the pages write it, and the fence parser: a test that can fail."""
    text = "x\n<!-- not run: needs a block device -->\n```python\nprint(1)\n```\n```bash\nls\n```\n"
    blocks = fenced_blocks(text)
    assert [(b[1], b[2]) for b in blocks] == [("python", "print(1)\n"), ("bash", "ls\n")]
    assert NOT_RUN.match(blocks[0][3]).group(1) == "needs a block device"
    assert SLOW.match("<!-- slow test: a whole episode -->") and not SLOW.match(blocks[0][3])
