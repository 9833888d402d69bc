"""How a workspace is read: its own language and zone, else the settings, `auto` from its chat."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from timeline_pipeline.curation.presentation import LANGUAGE_SAMPLE, presentation_of
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline.store.workspaces import WorkspaceError, WorkspaceNotFound
from timeline_pipeline_tests.store.factories import T0, make_workspace, message

DEFAULTS = LarkTimelineSettings()


def _say(engine: Engine, *texts: str, workspace_id: str = "inc-1") -> None:
    with engine.begin() as conn:
        for number, text in enumerate(texts):
            evidence.upsert(
                conn, message(text, workspace_id=workspace_id, message_id=f"om_{number}")
            )


def test_defaults_read_an_english_chat_in_english_and_utc(engine: Engine) -> None:
    make_workspace(engine)
    _say(engine, "db primary is down", "rolling back now")
    with engine.connect() as conn:
        shown = presentation_of(conn, "inc-1", DEFAULTS)
    assert (shown.locale, shown.time_zone.key) == (Locale.EN, "UTC")


def test_auto_reads_a_chinese_chat_in_chinese(engine: Engine) -> None:
    make_workspace(engine)
    _say(engine, "支付网关 p99 飙到 3s", "rollback 已经开始了", "ok")
    with engine.connect() as conn:
        assert presentation_of(conn, "inc-1", DEFAULTS).locale is Locale.ZH_CN


def test_recalled_messages_do_not_vote(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message("db is down", message_id="om_en"))
        for number in range(3):
            evidence.upsert(conn, message("已撤回", message_id=f"om_r{number}", deleted=True))
    with engine.connect() as conn:
        assert presentation_of(conn, "inc-1", DEFAULTS).locale is Locale.EN


def test_the_workspace_choice_wins_over_the_settings_and_the_chat(engine: Engine) -> None:
    make_workspace(engine, locale="en", time_zone="Asia/Shanghai")
    _say(engine, "数据库主库挂了", "已经切主了")
    settings = LarkTimelineSettings(locale="zh-CN", time_zone="Europe/Berlin")
    with engine.connect() as conn:
        shown = presentation_of(conn, "inc-1", settings)
    assert (shown.locale, shown.time_zone.key) == (Locale.EN, "Asia/Shanghai")


def test_the_settings_apply_to_a_workspace_without_a_choice(engine: Engine) -> None:
    make_workspace(engine)
    _say(engine, "db primary is down")
    settings = LarkTimelineSettings(locale="zh-CN", time_zone="Asia/Shanghai")
    with engine.connect() as conn:
        shown = presentation_of(conn, "inc-1", settings)
    assert (shown.locale, shown.time_zone.key) == (Locale.ZH_CN, "Asia/Shanghai")


def test_a_changed_choice_is_read_back_and_default_follows_the_setting_again(
    engine: Engine,
) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        changed = workspaces.set_language(conn, "inc-1", locale="zh-CN", time_zone="Asia/Tokyo")
    assert (changed.locale, changed.time_zone) == ("zh-CN", "Asia/Tokyo")
    with engine.begin() as conn:
        workspaces.set_language(conn, "inc-1", locale=None)
    with engine.connect() as conn:
        found = workspaces.require(conn, "inc-1")
    assert (found.locale, found.time_zone) == (None, "Asia/Tokyo")


@pytest.mark.parametrize(
    "change", [{"locale": "fr"}, {"time_zone": "Mars/Base"}, {"time_zone": "UTC+8"}]
)
def test_a_bad_choice_is_refused_and_changes_nothing(
    engine: Engine, change: dict[str, str]
) -> None:
    make_workspace(engine, locale="en", time_zone="UTC")
    with pytest.raises(WorkspaceError), engine.begin() as conn:
        workspaces.set_language(conn, "inc-1", **change)
    with pytest.raises(WorkspaceError), engine.begin() as conn:
        workspaces.create(conn, "inc-2", **change)
    with engine.connect() as conn:
        found = workspaces.require(conn, "inc-1")
        assert workspaces.get(conn, "inc-2") is None
    assert (found.locale, found.time_zone) == ("en", "UTC")


def test_an_unknown_workspace_is_refused(engine: Engine) -> None:
    with pytest.raises(WorkspaceNotFound), engine.begin() as conn:
        workspaces.set_language(conn, "nope", locale="en")
    with pytest.raises(WorkspaceNotFound), engine.connect() as conn:
        presentation_of(conn, "nope", DEFAULTS)


def test_auto_reads_only_the_first_messages_so_the_language_settles(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        for number in range(LANGUAGE_SAMPLE):
            evidence.upsert(conn, message("db is down", message_id=f"om_e{number}", at=T0))
        later = T0.replace(hour=11)
        for number in range(LANGUAGE_SAMPLE + 1):
            evidence.upsert(conn, message("已经恢复了", message_id=f"om_z{number}", at=later))
    with engine.connect() as conn:
        assert presentation_of(conn, "inc-1", DEFAULTS).locale is Locale.EN
