"""Chinese word segmentation for the rule synthesizer: the cues and the category model read words.

Chinese is written without spaces, so a vocabulary that reads characters sees the `到` of `降到`
(a rate falling) inside `飙到` (a rate spiking), and the `未` of a negation inside `未来`
(docs/design.md §7, bench/quality/NOTES.md "Chinese and mixed chats"). jieba, a maintained
segmenter that ships its dictionary, splits each run of Chinese characters into words, with an
incident-domain user dictionary kept as data beside this module (`incident_words_zh.txt`:
回滚, 扩容, 熔断, 摘流量 ...). The segmented form puts one space between words and around each
Chinese run, so that a cue can name a whole word with `\\b` as the English cues do, and English
words are left exactly as they were written.

The dictionary loads once per process, on first use (about a second); jieba's prefix cache goes
to a directory of the user's own under the system temporary directory, never into the
repository, and jieba writes it by an atomic rename, so parallel processes sharing `/tmp` read
either a whole cache or none. jieba's own log lines are silenced: nothing is printed to stderr.
Segmented texts are cached, since the same message is read by several windows and cues.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["USER_DICTIONARY", "segmented", "words"]

USER_DICTIONARY = "incident_words_zh.txt"
"""One word a line, optionally with a frequency: jieba's user dictionary format."""
_DEFAULT_FREQUENCY = 20_000
"""High enough that a domain word wins over the general dictionary's split of it."""
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CACHE_SIZE = 8192

_lock = threading.Lock()
_tokenizer: Any = None
"""jieba's Tokenizer (jieba ships no type information), built on first use."""


def _cache_dir() -> str:
    """A directory of this user's under the system temporary directory (not the repository)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"timeline-pipeline-jieba-{uid}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _load() -> Any:
    global _tokenizer
    if _tokenizer is not None:
        return _tokenizer
    with _lock:
        if _tokenizer is None:
            import jieba  # type: ignore[import-untyped]

            logging.getLogger("jieba").setLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            tokenizer.tmp_dir = _cache_dir()
            tokenizer.initialize()
            text = resources.files(__package__).joinpath(USER_DICTIONARY).read_text("utf-8")
            for line in text.splitlines():
                fields = line.split("#", 1)[0].split()
                if fields:
                    frequency = int(fields[1]) if len(fields) > 1 else _DEFAULT_FREQUENCY
                    tokenizer.add_word(fields[0], frequency)
            _tokenizer = tokenizer
        return _tokenizer


def words(run: str) -> list[str]:
    """The words of a run of Chinese characters, by the dictionary alone (no guessed words:
    the same text always gives the same words, whatever else the process has read)."""
    return [w for w in _load().lcut(run, HMM=False) if w.strip()]


@lru_cache(maxsize=_CACHE_SIZE)
def segmented(text: str) -> str:
    """`text` with every Chinese run split into words: one space between words and around the
    run; everything else (English, numbers, punctuation, line breaks) as it was.

    "支付网关p99飙到3s" -> "支付 网关 p99 飙到 3s". A text without Chinese is returned unchanged
    and the dictionary is not loaded for it.
    """
    if not _CJK_RUN.search(text):
        return text
    pieces: list[str] = []
    end = 0
    for match in _CJK_RUN.finditer(text):
        pieces.append(text[end : match.start()])
        if match.start() > 0 and not text[match.start() - 1].isspace():
            pieces.append(" ")
        pieces.append(" ".join(words(match.group(0))))
        end = match.end()
        if end < len(text) and not text[end].isspace():
            pieces.append(" ")
    pieces.append(text[end:])
    return "".join(pieces)
