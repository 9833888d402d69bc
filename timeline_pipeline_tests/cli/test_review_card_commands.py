"""The review-card commands' group: `review-cards`, and its earlier name `interactions`, which
scripts written for it still run (docs/review-cards.md)."""

from __future__ import annotations

from click.testing import CliRunner

from timeline_pipeline.cli.main import cli


def test_the_group_is_listed_as_review_cards_and_its_old_name_is_hidden() -> None:
    listed = CliRunner().invoke(cli, ["--help"])

    assert listed.exit_code == 0
    assert "review-cards" in listed.output
    assert "interactions" not in listed.output


def test_the_old_name_runs_the_same_commands() -> None:
    new = CliRunner().invoke(cli, ["review-cards", "work", "--help"])
    old = CliRunner().invoke(cli, ["interactions", "work", "--help"])

    assert new.exit_code == old.exit_code == 0
    assert old.output.replace("interactions", "review-cards") == new.output
