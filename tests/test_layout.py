"""The layers of the source tree (issue 29): the device models and the native HSS core in
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
