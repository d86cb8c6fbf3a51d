"""The layers of the source tree: the device models and the native HSS core in
``backends/`` sit below the environments and import nothing from the rest of ``hss_gym``, in
Python or in C; every folder of the design card is where the README's layout says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ROOT / "backends"


def python_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a Python file, relative imports resolved to hss_gym.backends."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the package it sits in, i.e. below backends/
                out.append((node.lineno, "hss_gym.backends"))
            else:
                out.append((node.lineno, node.module or ""))
    return out


def test_backends_import_nothing_above_them():
    wrong = [f"{p.relative_to(ROOT)}:{line}: imports {mod}"
             for p in sorted(BACKENDS.rglob("*.py"))
             for line, mod in python_imports(p)
             if (mod == "hss_gym" or mod.startswith("hss_gym.")) and not
             (mod == "hss_gym.backends" or mod.startswith("hss_gym.backends."))]
    assert not wrong, "backends/ must not import the layers above it:\n" + "\n".join(wrong)


def test_backends_c_sources_include_only_backends_headers():
    """Every quoted #include in backends/ names a header that lives in backends/ (include paths in
    setup.py and the Makefile point only there)."""
    headers = {p.name for p in BACKENDS.rglob("*.h")}
    wrong = []
    for p in sorted([*BACKENDS.rglob("*.c"), *BACKENDS.rglob("*.h")]):
        for n, line in enumerate(p.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m and Path(m.group(1)).name not in headers:
                wrong.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not wrong, "\n".join(wrong)


def test_python_import_check_sees_a_violation(tmp_path: Path):
    """The import check above is not vacuous: it reports an import of the env layer."""
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom hss_gym.workloads.trace import Trace\nfrom . import sim\n")
    assert python_imports(bad) == [(1, "numpy"), (2, "hss_gym.workloads.trace"), (3, "hss_gym.backends")]


@pytest.mark.parametrize("folder", ["hss_gym", "agents", "backends", "benchmarks", "examples", "tests"])
def test_design_card_folders_exist(folder: str):
    assert (ROOT / folder).is_dir()


def test_make_run_installs_what_the_quick_suite_needs_without_pytorch():
    """`make run` installs hss-gym[lite] (no PyTorch) and says what it does: the policies of the
    quick suite that need PyTorch are the 3 optional baselines docs/install.md names, left out."""
    import shutil
    import subprocess

    from hss_gym.agents.base import NEEDS
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")
    from hss_gym.benchmarks.suites import load_suite
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not any(d.startswith("torch") for d in extras["lite"]) and set(extras["lite"]) < set(extras["agents"])
    torch_policies = [p for p in load_suite("quick").policies if "torch" in NEEDS.get(p, ())]
    assert torch_policies == ["archivist", "rnn_hss", "sibyl+rnn_hss"]
    assert "Archivist, RNN-HSS, Sibyl+RNN-HSS" in " ".join((ROOT / "docs" / "install.md").read_text().split())
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    plan = subprocess.run(["make", "-n", "run", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    assert "pip install -qq --progress-bar off -e '.[lite]'" in plan
    assert plan.count('echo "[make $(date +%H:%M:%S)]') >= 4, plan  # set-up, ready, C build, suite, done


def test_the_page_shift_is_defined_once_and_agrees_with_the_page_size():
    """``PAGE_SHIFT`` is assigned only in hss_gym/hss.py (everything else imports it), and the
    page it gives is the traces' PAGE_SIZE and the HSS core's page."""
    from hss_gym.backends import _core
    from hss_gym.hss import PAGE_SHIFT
    from hss_gym.workloads.trace import PAGE_SIZE
    assert 1 << PAGE_SHIFT == PAGE_SIZE == _core.PAGE_BYTES
    defined = [f"{p.relative_to(ROOT)}:{node.lineno}"
               for folder in ("hss_gym", "agents", "backends", "benchmarks")
               for p in sorted((ROOT / folder).rglob("*.py"))
               for node in ast.walk(ast.parse(p.read_text(), str(p)))
               if isinstance(node, (ast.Assign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == "PAGE_SHIFT"
                       for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    assert [d.split(":")[0] for d in defined] == ["hss_gym/hss.py"], f"PAGE_SHIFT assigned at {defined}"


_ISSUE_REF = re.compile(r"\b[Ii]ssues? ?#?\d+")


def test_the_source_names_no_issue_numbers():
    """Comments and docstrings state the rule or the reason and point to docs/ for numbers; an
    issue number says nothing to a reader of the code."""
    found = [f"{p.relative_to(ROOT)}:{i}" for folder in ("hss_gym", "agents", "backends", "benchmarks", "examples")
             for p in sorted((ROOT / folder).rglob("*")) if p.suffix in (".py", ".c", ".h")
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _ISSUE_REF.search(line)]
    assert not found, found
    assert _ISSUE_REF.search("# see issue 13") and not _ISSUE_REF.search("# see the issue tracker")


#: Function-local imports of the package's own modules allowed outside the command line: each
#: one loads an optional heavy dependency (PyTorch, an optional C extension) only where it is
#: needed, or a registry entry on demand, and says so in a comment. A local import that only
#: hides an import cycle breaks the cycle in the wrong place: move the shared piece down instead.
MAX_LOCAL_IMPORTS = 15


def local_project_imports(root: Path) -> list[str]:
    """``path:line: statement`` of every import of hss_gym (absolute or relative) placed inside a
    function body, in the package's four source folders, files with "cli" in their name aside."""
    found = []
    for folder in ("hss_gym", "agents", "backends", "benchmarks"):
        for p in sorted((root / folder).rglob("*.py")):
            if "cli" in p.name:
                continue
            src = p.read_text(encoding="utf-8")
            seen: set[int] = set()
            for fn in ast.walk(ast.parse(src, str(p))):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom):
                        own = node.level > 0 or (node.module or "").split(".")[0] == "hss_gym"
                    else:
                        own = isinstance(node, ast.Import) and any(a.name.split(".")[0] == "hss_gym" for a in node.names)
                    if own and id(node) not in seen:
                        seen.add(id(node))
                        found.append(f"{p.relative_to(root)}:{node.lineno}: {ast.get_source_segment(src, node)}")
    return found


def test_few_function_local_imports_of_the_package():
    """Modules import each other at the top; the few local imports left are the lazy ones."""
    found = local_project_imports(ROOT)
    assert len(found) <= MAX_LOCAL_IMPORTS, (f"{len(found)} function-local imports of hss_gym (at most "
                                             f"{MAX_LOCAL_IMPORTS}):\n" + "\n".join(found))


def test_local_import_count_sees_a_local_import(tmp_path: Path):
    """The count above is not vacuous: it sees absolute and relative imports in (nested) functions,
    once each, and skips top-level imports and command-line files."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.py").write_text(
        "import hss_gym\nimport numpy\n\ndef f():\n    from hss_gym.agents import base\n"
        "    def g():\n        from . import models\n        import numpy\n    return g\n")
    (tmp_path / "agents" / "some_cli.py").write_text("def f():\n    import hss_gym.agents\n")
    assert local_project_imports(tmp_path) == ["agents/a.py:5: from hss_gym.agents import base",
                                              "agents/a.py:7: from . import models"]
