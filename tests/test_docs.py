"""The manual's shape: README.md stays short, docs/index.md lists every page, links resolve.

README.md is the first page (what, install, quickstart, environments, agents, summaries, layout);
everything longer lives in docs/, and docs/index.md links every page there, so no page is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
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
    from hss_gym.envs.features import feature_bins, feature_names
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
    from hss_gym.envs.parallel import HSSParallelEnv
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
