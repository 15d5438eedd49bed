"""The docs stay true to the code: the configuration reference is generated from it, and every
relative link (and the heading it points at) exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_memory import config_reference
from agent_memory.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _prose(text: str) -> str:
    """The text without code blocks and code spans, where link syntax is only an example."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = _HEADING.findall(_FENCE.sub("", page.read_text(encoding="utf-8")))
    return {_slug(heading) for heading in headings}


def _relative_links(page: Path) -> list[str]:
    links = _LINK.findall(_prose(page.read_text(encoding="utf-8")))
    return [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I)]


# --- the generated configuration reference ------------------------------------------------------


def test_configuration_reference_is_current():
    current = CONFIGURATION.read_text(encoding="utf-8")
    expected = config_reference.splice(current, config_reference.render())
    assert current == expected, (
        "docs/configuration.md is out of date: run "
        "python -m agent_memory.config_reference --write docs/configuration.md"
    )


def test_every_setting_is_documented_with_its_variable_and_default():
    region = config_reference.render()
    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description"
        variable = config_reference.env_names(name, field)[0]
        row = next(line for line in region.splitlines() if line.startswith(f"| `{variable}`"))
        assert field.description.split()[0] in row


def test_env_names_follow_the_aliases_and_the_prefix():
    fields = Settings.model_fields
    assert config_reference.env_names("mongodb_uri", fields["mongodb_uri"]) == [
        "MONGODB_URI",
        "AGENT_MEMORY_MONGODB_URI",
    ]
    assert config_reference.env_names("search_tier", fields["search_tier"]) == [
        "AGENT_MEMORY_SEARCH_TIER"
    ]


def test_the_reference_shows_defaults_bounds_and_choices():
    table = config_reference.settings_table()
    tier = next(line for line in table.splitlines() if "AGENT_MEMORY_SEARCH_TIER" in line)
    assert "`auto` \\| `atlas` \\| `plain`" in tier and "| `auto` |" in tier
    timeout = next(line for line in table.splitlines() if "CONNECT_TIMEOUT_MS" in line)
    assert "≥ 100, ≤ 120,000" in timeout and "| `5000` |" in timeout
    assert "| `MONGODB_URI` (or `AGENT_MEMORY_MONGODB_URI`) | secret | unset |" in table


def test_dataclass_tables_take_defaults_and_comments_from_the_code():
    from agent_memory.memory.long_term.decay import DecayConfig
    from agent_memory.memory.long_term.ranking import RankingWeights

    decay = config_reference.dataclass_table(DecayConfig)
    assert "| `factor` | `0.95` |" in decay and "| `period_days` | `30.0` |" in decay
    ranking = config_reference.dataclass_table(RankingWeights)
    assert "Pseudo-count of neutral ratings" in ranking


def test_check_fails_on_a_stale_page_and_write_repairs_it(tmp_path, capsys):
    page = tmp_path / "configuration.md"
    stale = config_reference.splice(
        CONFIGURATION.read_text(encoding="utf-8"),
        f"{config_reference.BEGIN}\n| `AGENT_MEMORY_GONE` | str | unset | removed |\n"
        f"{config_reference.END}",
    )
    page.write_text(stale, encoding="utf-8")
    assert config_reference.main(["--check", str(page)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert config_reference.main(["--write", str(page)]) == 0
    assert config_reference.main(["--check", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == CONFIGURATION.read_text(encoding="utf-8")


def test_a_page_without_markers_is_an_error_not_a_rewrite(tmp_path, capsys):
    page = tmp_path / "plain.md"
    page.write_text("# nothing generated here\n", encoding="utf-8")
    assert config_reference.main(["--write", str(page)]) == 2
    assert "no generated region" in capsys.readouterr().err
    assert page.read_text(encoding="utf-8") == "# nothing generated here\n"


# --- links ------------------------------------------------------------------------------------


def test_the_docs_exist():
    names = {page.name for page in DOCS.glob("*.md")}
    assert {"README.md", "concepts.md", "configuration.md", "atlas.md", "operations.md"} <= names


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_relative_links_point_at_existing_files_and_headings(page):
    broken = []
    for link in _relative_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A title: with `code`\n\nSee [b](b.md#a-title-with-code) and [web](https://x.invalid).\n"
        "`[not](a-link.md)`\n\n```markdown\n[also not](gone.md)\n```\n",
        encoding="utf-8",
    )
    assert _relative_links(page) == ["b.md#a-title-with-code"]
    assert "a-title-with-code" in _anchors(page)
