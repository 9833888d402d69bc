"""A workspace's language: its own choice, else the majority script of its chat."""

from __future__ import annotations

import pytest

from timeline_pipeline.i18n.locales import (
    LOCALE_CHOICES,
    Locale,
    check_locale_choice,
    check_time_zone,
    locale_of_texts,
    resolve_locale,
)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["支付网关 p99 飙到 3s，订单失败率 12%", "收到", "rollback 已经开始了"], Locale.ZH_CN),
        (["HPA 暂时 disable，陈晨 approve 了", "ok", "在看了"], Locale.ZH_CN),
        (["db primary is down", "rolling back", "收到"], Locale.EN),
        (["p99 3s", "12%", "👍"], Locale.EN),  # no word of either script: English
        (["ok", "收到"], Locale.EN),  # a tie stays English
        ([], Locale.EN),
    ],
)
def test_auto_reads_the_majority_script_one_vote_a_message(
    texts: list[str], expected: Locale
) -> None:
    assert locale_of_texts(texts) is expected
    assert resolve_locale("auto", texts) is expected


def test_an_explicit_choice_wins_over_the_chat() -> None:
    assert resolve_locale("en", ["全部是中文的消息"]) is Locale.EN
    assert resolve_locale("zh-CN", ["all English"]) is Locale.ZH_CN


@pytest.mark.parametrize("bad", ["zh", "fr", "EN", "", "zh_CN"])
def test_an_unknown_locale_is_refused_with_the_choices(bad: str) -> None:
    with pytest.raises(ValueError, match="expected one of auto, en, zh-CN"):
        check_locale_choice(bad)
    assert bad not in LOCALE_CHOICES


@pytest.mark.parametrize("bad", ["Mars/Base", "", "../etc/passwd", "/etc/localtime", "UTC+8"])
def test_an_unknown_time_zone_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="IANA name"):
        check_time_zone(bad)


def test_babel_names_are_gettext_spellings() -> None:
    assert Locale.ZH_CN.babel_name == "zh_CN"
    assert Locale.EN.babel_name == "en"
