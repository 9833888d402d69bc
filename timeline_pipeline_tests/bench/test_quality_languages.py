"""The quality benchmark reports each half per language (bench/quality/run.py).

A vocabulary can serve English chats and miss Chinese ones entirely; a figure for the whole half
would hide it, so the tuning and held-out halves are also scored per language
(`languages.json` in the gold directory).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.quality.gold import LANGUAGES_FILE, load_languages, load_splits
from bench.quality.run import LANGUAGES, Row, by_language, rows

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"


def _row(name: str, produced: int, expected: int, matched: int) -> Row:
    return Row(name, 10, 10, expected, produced, matched, 0, 0, 1, 0, 1, 0, 10, 0)


def test_every_transcript_of_the_gold_set_names_a_known_language() -> None:
    languages = load_languages(GOLD)
    assert set(load_splits(GOLD)) <= set(languages)
    assert set(languages.values()) <= set(LANGUAGES)


def test_a_transcript_the_file_does_not_name_is_english(tmp_path: Path) -> None:
    (tmp_path / LANGUAGES_FILE).write_text(json.dumps({"a": "zh"}))
    assert load_languages(tmp_path) == {"a": "zh"}
    assert load_languages(tmp_path / "missing") == {}
    set_rows = [_row("a", 2, 4, 1), _row("b", 3, 3, 3), _row("overall", 5, 7, 4)]
    found = by_language(set_rows, {"a": "zh"})
    assert list(found) == ["en", "zh"]
    assert (found["zh"].expected, found["zh"].produced, found["zh"].matched) == (4, 2, 1)
    assert (found["en"].precision, found["en"].recall) == (1.0, 1.0)


def test_the_halves_are_reported_per_language_and_the_tuned_set_is_not() -> None:
    rules = {
        "tuned": [_row("t", 1, 1, 1), _row("overall", 1, 1, 1)],
        "tuning": [_row("a", 2, 4, 1), _row("b", 3, 3, 3), _row("overall", 5, 7, 4)],
        "held_out": [_row("c", 4, 4, 2), _row("overall", 4, 4, 2)],
    }
    table = rows(rules, None, (), {"a": "mixed", "c": "zh", "t": "zh"})
    figures = {r.figure: r.value for r in table}
    assert figures["rules precision, tuning half, mixed (1 transcript)"] == 0.5
    assert figures["rules recall, tuning half, en (1 transcript)"] == 1.0
    assert figures["rules recall, held-out half, zh (1 transcript)"] == 0.5
    assert not any("tuned set, " in figure for figure in figures)


def test_each_language_is_set_against_english_on_the_held_out_half() -> None:
    rules = {
        "held_out": [
            _row("e", 10, 10, 6),
            _row("z", 10, 10, 5),
            _row("m", 8, 10, 6),
            _row("overall", 28, 30, 17),
        ]
    }
    table = rows(rules, None, (), {"z": "zh", "m": "mixed"})
    gaps = {r.figure: r for r in table if "against English" in r.figure}
    zh = gaps["rules precision against English, held-out half, zh"]
    assert (zh.value, zh.met) == (-0.1, False)
    mixed = gaps["rules recall against English, held-out half, mixed"]
    assert (mixed.value, mixed.met) == (0.0, True)
    assert len(gaps) == 4
