"""The manual's shape: README.md stays short, docs/index.md lists every page, links resolve,
and tests/README.md maps every module whose test file is not named after it to its tests.

README.md is the first page (what, install, quickstart, environments, agents, summaries, layout);
everything longer lives in docs/, and docs/index.md links every page there, so no page is lost.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
#: the folders installed as the package (setup.cfg's package_dir); benchmarks/perf is not installed
PACKAGE_ROOTS = ("hss_gym", "agents", "backends", "benchmarks")
NOT_INSTALLED = ("benchmarks/perf/",)
MAX_README_LINES = 250
#: a Markdown link's target: ](target) or ](target#anchor), not an absolute URL
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def local_links(text: str) -> list[str]:
    """Relative link targets of ``text``, outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z]+:", t)]


def test_readme_is_short() -> None:
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move details to docs/"


def test_readme_links_the_docs_index() -> None:
    assert "docs/index.md" in local_links(README.read_text(encoding="utf-8"))


def test_docs_index_links_every_page() -> None:
    index = DOCS / "index.md"
    linked = {(DOCS / t).resolve() for t in local_links(index.read_text(encoding="utf-8"))}
    pages = {p.resolve() for p in DOCS.glob("*.md") if p.name != "index.md"}
    missing = sorted(p.name for p in pages - linked)
    assert not missing, f"docs/index.md does not link: {', '.join(missing)}"


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_local_links_resolve(page: Path) -> None:
    broken = [t for t in local_links(page.read_text(encoding="utf-8")) if not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def _hss_section(title: str) -> str:
    text = (DOCS / "hss.md").read_text(encoding="utf-8")
    return text.split(f"### {title}", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def test_hss_observation_tables_match_the_code() -> None:
    """docs/hss.md's feature order and bins are the env's (both feature sets)."""
    from hss_gym.envs.hss.features import feature_bins, feature_names
    section = _hss_section("Observations")
    rows = [r.split("|") for r in section.splitlines() if re.match(r"^\| \d+ \| \w+ \|", r)]
    assert [(int(r[1]), r[2].strip()) for r in rows] == list(enumerate(feature_names(2)))
    for r, bins in zip(rows, feature_bins(2)):
        assert r[4].strip().startswith("N" if r[2].strip() == "curr_dev" else str(bins)), r
    sibyl = next(r for r in section.splitlines() if r.startswith("| feature |"))
    assert [c.strip() for c in sibyl.split("|")[2:-1]] == list(feature_names(2, "sibyl"))


def test_hss_options_and_infos_tables_are_complete() -> None:
    """Every env option and every infos key the two-agent env gives is in docs/hss.md's tables."""
    import inspect

    from hss_gym import hss_v0
    from hss_gym.config import HSSConfig
    from hss_gym.envs.hss.env import HSSParallelEnv
    options = _hss_section("Options")
    documented = set(re.findall(r"`(\w+)`", options))
    env_opts = set(inspect.signature(HSSParallelEnv.__init__).parameters) - {"self", "config_options"}
    cfg_opts = set(HSSConfig.__dataclass_fields__) - {"meta", "devices", "name"} | {"fast_fraction"}
    missing = (env_opts | cfg_opts | {"paths", "backend_options"}) - documented
    assert not missing, f"docs/hss.md's options table lacks {sorted(missing)}"
    infos = _hss_section("Infos, per step")
    env = hss_v0.parallel_env("perf_opt", "lun2", n_requests=50)
    _, last = env.reset(seed=0)
    seen = {(a, k) for a in last for k in last[a]}
    while env.agents:
        _, _, _, _, last = env.step({"placement": 0, "migration": max(last["migration"]["device"], 0)})
        seen |= {(a, k) for a in last for k in last[a]}
    rows = {r.split("|")[1].strip().strip("`"): r.split("|")[2].strip() for r in infos.splitlines()
            if r.startswith("| `")}
    for agent, key in seen:
        assert key in rows and rows[key] in ("both", agent), (agent, key)
    assert all(m.all() for m in (last["placement"]["action_mask"], last["migration"]["action_mask"]))


def package_modules() -> list[str]:
    """Every module of the package, as a repository path: its .py files, except the
    ``__init__.py`` files that define no function or class (docstrings and re-exports)."""
    out = []
    for folder in PACKAGE_ROOTS:
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel.startswith(NOT_INSTALLED):
                continue
            if p.name == "__init__.py" and not any(
                    isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in ast.parse(p.read_text()).body):
                continue
            out.append(rel)
    return out


def found_by_name(module: str, test_names: list[str]) -> bool:
    """Whether ``tests/test_<name>.py`` or ``tests/test_<name>_*.py`` is among ``test_names`` (file
    stems without ``test_``), ``name`` the module's (a package's for ``__init__.py``) without a
    leading ``_`` or a ``_vN`` version suffix."""
    parts = module.split("/")
    name = parts[-2] if parts[-1] == "__init__.py" else parts[-1][:-3]
    name = re.sub(r"_v\d+$", "", name.lstrip("_"))
    return any(t == name or t.startswith(name + "_") for t in test_names)


def map_rows() -> list[tuple[list[str], list[str]]]:
    """tests/README.md's table: (module paths or patterns, test files) per row. A cell's name
    without a ``/`` is in the folder of the path before it."""
    rows = []
    for line in (TESTS / "README.md").read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if len(cells) != 4 or not cells[1].strip().startswith("`"):
            continue
        paths: list[str] = []
        for item in re.findall(r"`([^`]+)`", cells[1]):
            paths.append(item if "/" in item else paths[-1].rsplit("/", 1)[0] + "/" + item)
        rows.append((paths, re.findall(r"test_\w+\.py", cells[2])))
    return rows


def test_every_module_has_tests_found_by_name_or_in_the_map() -> None:
    names = [p.stem[len("test_"):] for p in TESTS.glob("test_*.py")]
    patterns = [p for paths, _ in map_rows() for p in paths]
    lost = [m for m in package_modules()
            if not found_by_name(m, names) and not any(fnmatch.fnmatch(m, p) for p in patterns)]
    assert not lost, f"tests/README.md does not say where the tests of these modules are: {lost}"


def test_the_map_names_existing_modules_and_tests() -> None:
    modules = package_modules()
    rows = map_rows()
    assert len(rows) > 10
    for paths, tests in rows:
        for p in paths:
            assert any(fnmatch.fnmatch(m, p) for m in modules), f"tests/README.md: no module {p}"
        assert tests, f"tests/README.md: no test file for {paths}"
        for t in tests:
            assert (TESTS / t).is_file(), f"tests/README.md: no tests/{t} (for {paths})"


def test_found_by_name_sees_a_module_without_its_test_file() -> None:
    """The completeness check above is not vacuous: the naming rule tells the cases apart."""
    names = ["cli", "cli_misuse", "fleetio", "envs"]
    assert found_by_name("hss_gym/cli.py", names) and found_by_name("hss_gym/fleetio_v1.py", names)
    assert found_by_name("hss_gym/envs/_contract.py", ["contract"])
    assert found_by_name("hss_gym/workloads/readers/__init__.py", ["readers_property"])
    assert not found_by_name("hss_gym/envs/hss/single.py", names)
    assert not found_by_name("hss_gym/client.py", names)
