"""The configuration reference is rendered from the settings models and docs/configuration.md
carries it verbatim, so documentation and code cannot drift apart."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic.alias_generators import to_camel

from timeline_pipeline.cli.main import cli
from timeline_pipeline.durations import parse_duration
from timeline_pipeline.settings import ENV_PREFIX, LarkTimelineSettings, RuntimeEnvironment
from timeline_pipeline.settings_reference import (
    BLOCK_END,
    BLOCK_START,
    TIMELINE_GROUPS,
    ReferenceIncomplete,
    render_reference,
    replace_block,
)

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def rows(rendered: str) -> dict[str, list[str]]:
    """Table rows by their first cell (the YAML key, or the variable for environment-only)."""
    found: dict[str, list[str]] = {}
    for line in rendered.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            found[cells[0].strip("`")] = cells
    return found


def test_the_documented_block_is_exactly_the_rendered_reference() -> None:
    document = REFERENCE.read_text(encoding="utf-8")

    assert replace_block(document, render_reference()) == document, (
        "docs/configuration.md's configuration reference is stale: run "
        "`timeline-pipeline config reference --write docs/configuration.md`"
    )


def test_every_setting_has_a_row_with_its_yaml_key_variable_and_description() -> None:
    table = rows(render_reference())

    for name, field in LarkTimelineSettings.model_fields.items():
        _key, variable, _type, _default, _bounds, description = table[to_camel(name)]
        assert variable == f"`{ENV_PREFIX}{name.upper()}`"
        assert description == " ".join((field.description or "").split())
    for field in RuntimeEnvironment.model_fields.values():
        alias = field.validation_alias
        variable = str(getattr(alias, "choices", [None])[0])
        assert variable in table, variable
    assert len(table) == len(LarkTimelineSettings.model_fields) + len(
        RuntimeEnvironment.model_fields
    )


def test_rows_show_type_default_and_bounds_as_an_operator_writes_them() -> None:
    table = rows(render_reference())

    assert table["synthesisWindow"][2:5] == ["duration", "`10m`", "> 0s"]
    assert table["ingestionLookback"][3] == "`72h`"  # hours, never days
    assert table["synthesisWindowCloseGrace"][4] == ">= 0s"
    assert table["evidenceBatchLimit"][2:5] == ["integer", "`40`", "1 .. 1000"]
    assert table["larkRequestsPerSecond"][2:5] == ["number", "`50`", "> 0, <= 50"]
    assert table["workspaceTypes"][2:5] == ["list of strings", "`[incident]`", "not empty"]
    assert table["enabled"][2:4] == ["boolean", "`false`"]
    assert table["TIMELINE_DATABASE_URL"][1:3] == ["string", "`sqlite:///.timeline/timeline.db`"]
    assert table["LARK_APP_SECRET"][1:3] == ["secret", "(none)"]
    assert table["MAINTENANCE_PORT"][1:3] == ["string", "(none)"]


def test_every_rendered_duration_default_reads_back_as_the_default() -> None:
    table = rows(render_reference())
    defaults = LarkTimelineSettings()

    for name in LarkTimelineSettings.model_fields:
        value = getattr(defaults, name)
        if isinstance(value, timedelta):
            assert parse_duration(table[to_camel(name)][3].strip("`")) == value, name


def test_a_setting_without_a_description_stops_the_rendering() -> None:
    class Undocumented(LarkTimelineSettings):
        brand_new_limit: int = 3

    with pytest.raises(ReferenceIncomplete, match="brand_new_limit has no description"):
        render_reference(Undocumented)


def test_a_new_setting_lands_under_the_heading_of_its_block() -> None:
    class Extended(LarkTimelineSettings):
        lark_extra_timeout: int = 1
        """A documented addition at the end of the last block."""

    rendered = render_reference(Extended)
    last_heading = TIMELINE_GROUPS[-1][1]
    last_section = rendered.split(f"#### {last_heading}", 1)[1].split("###", 1)[0]
    assert "`larkExtraTimeout`" in last_section


def test_the_command_prints_the_reference_and_rewrites_a_stale_block(tmp_path: Path) -> None:
    runner = CliRunner()
    printed = runner.invoke(cli, ["config", "reference"])
    assert printed.exit_code == 0 and printed.stdout == render_reference()

    document = tmp_path / "README.md"
    document.write_text(f"# x\n\n{BLOCK_START}\nstale\n{BLOCK_END}\n\n## after\n")
    written = runner.invoke(cli, ["config", "reference", "--write", str(document)])
    assert written.exit_code == 0
    text = document.read_text()
    assert "stale" not in text and text.endswith(f"{BLOCK_END}\n\n## after\n")
    assert replace_block(text, render_reference()) == text

    unmarked = tmp_path / "NOTES.md"
    unmarked.write_text("# no block here\n")
    refused = runner.invoke(cli, ["config", "reference", "--write", str(unmarked)])
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: cannot update") and "config-reference" in (
        refused.stderr
    )
    assert unmarked.read_text() == "# no block here\n"
