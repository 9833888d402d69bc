"""The languages the product speaks, and how `auto` picks one from a chat (docs/i18n.md).

Pure: the workspace's stored choice and the texts of its messages in, a `Locale` out. Stored
times stay UTC; a `Presentation` only says how a person reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "AUTO",
    "LOCALE_CHOICES",
    "Locale",
    "Presentation",
    "check_locale_choice",
    "check_time_zone",
    "locale_of_texts",
    "resolve_locale",
]

AUTO = "auto"
"""The setting's and a workspace's default: the majority script of the workspace's messages."""


class Locale(StrEnum):
    """A language the message catalogs speak (`locale/<babel name>/LC_MESSAGES`)."""

    EN = "en"
    ZH_CN = "zh-CN"

    @property
    def babel_name(self) -> str:
        """Babel's and gettext's spelling (`zh_CN`), where the product's is BCP 47 (`zh-CN`)."""
        return self.value.replace("-", "_")


LOCALE_CHOICES: tuple[str, ...] = (AUTO, *(locale.value for locale in Locale))

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
"""A Latin word of two letters or more: `p99`, `3s` or a lone `a` say nothing of the language."""


def check_locale_choice(value: str) -> str:
    """`value` if it is `auto` or a known locale; ValueError naming the choices otherwise."""
    if value not in LOCALE_CHOICES:
        raise ValueError(f"invalid locale {value!r}: expected one of {', '.join(LOCALE_CHOICES)}")
    return value


def check_time_zone(name: str) -> ZoneInfo:
    """The IANA zone `name` (`Asia/Shanghai`, `UTC`); ValueError with the reason otherwise."""
    if not name or len(name) > 64 or name.startswith(("/", ".")) or ".." in name:
        raise ValueError(f"invalid time zone {name!r}: expected an IANA name such as Asia/Shanghai")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"invalid time zone {name!r}: expected an IANA name such as Asia/Shanghai"
        ) from None


def _votes_chinese(text: str) -> bool | None:
    """Whether one message is Chinese: more Han characters than Latin words (a Chinese sentence
    with English terms, `rollback 已经开始了`, is Chinese); None when it has neither."""
    han = len(_HAN.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    if han == 0 and latin == 0:
        return None
    return han > 0 and han >= latin


def locale_of_texts(texts: Iterable[str]) -> Locale:
    """The majority script of a chat, one vote a message; English on a tie or with no text."""
    chinese = english = 0
    for text in texts:
        vote = _votes_chinese(text)
        if vote is True:
            chinese += 1
        elif vote is False:
            english += 1
    return Locale.ZH_CN if chinese > english else Locale.EN


def resolve_locale(choice: str, texts: Iterable[str]) -> Locale:
    """A workspace's locale: its explicit choice, or for `auto` the majority of its messages."""
    if choice == AUTO:
        return locale_of_texts(texts)
    return Locale(check_locale_choice(choice))


@dataclass(frozen=True, slots=True)
class Presentation:
    """How a person reads a workspace: its language and the zone its times are shown in."""

    locale: Locale
    time_zone: ZoneInfo

    @classmethod
    def default(cls) -> Presentation:
        """English and UTC: what every surface showed before workspaces had a language."""
        return cls(Locale.EN, ZoneInfo("UTC"))
