"""Text hygiene for rule synthesis: mentions, links and filler never reach a title, and the same
action said two ways is one topic."""

from __future__ import annotations

import pytest

from timeline_pipeline.synthesis.text import (
    casual_spelling,
    clean_text,
    make_title,
    sentences,
    topic_words,
)


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("@Maya Chen ok so the replica is promoted", "The replica is promoted"),
        ("@_user_1 restarted api https://grafana.example.com/d/x", "Restarted api"),
        ("hmm, yes. disk is full!!", "Disk is full"),
        (
            "Follow-ups\nFollow-ups:\n- add alert\n- write runbook",
            "Follow-ups: add alert; write runbook",
        ),
    ],
)
def test_titles_are_concise_clean_sentences(raw: str, title: str) -> None:
    assert make_title(raw) == title


def test_long_titles_are_cut_at_a_word_boundary() -> None:
    title = make_title("restarted " + "the api gateway " * 30)
    assert len(title) <= 120
    assert title.endswith("gateway…") or title.endswith("the…") or title.endswith("api…")


def test_clean_text_keeps_lines_but_drops_mentions_and_links() -> None:
    assert clean_text("@all heads up\nsee https://x.example.com/a  now") == "heads up\nsee now"


def test_sentences_split_on_stops_and_lines_and_drop_bullets() -> None:
    assert sentences("Rolled back v4.18.0. Errors gone!\n1) add alert\n- write runbook") == [
        "Rolled back v4.18.0.",
        "Errors gone!",
        "add alert",
        "write runbook",
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("rolling back the api", "rollback of the api done"),
        ("failed over to the replica", "failover complete"),
        ("restarting workers", "workers restarted"),
        ("purge the queue", "queue purged"),
        ("turned off the flag", "flag disabled"),
    ],
)
def test_one_action_said_two_ways_shares_a_topic(first: str, second: str) -> None:
    assert topic_words(first) & topic_words(second)


def test_numbers_are_topics_and_stopwords_are_not() -> None:
    assert {"85%", "the", "is"}.isdisjoint(topic_words("the rate is 85%"))
    assert "85" in topic_words("the rate is 85%")


def test_terse_spelling_is_read_as_usual_but_words_that_only_look_like_it_are_left() -> None:
    assert casual_spelling("ill put it back, cant reach it, thats baseline") == (
        "i'll put it back, can't reach it, that's baseline"
    )
    assert casual_spelling("an ill-formed request") == "an ill-formed request"
    assert casual_spelling("it\u2019s back") == "it's back"
