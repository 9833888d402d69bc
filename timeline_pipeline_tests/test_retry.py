"""The one retry policy: full-jitter exponential backoff, a capped Retry-After, tenacity below."""

from __future__ import annotations

from datetime import timedelta

import pytest

from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings

POLICY = RetryPolicy(attempts=4, backoff_base=1.0, backoff_cap=5.0, max_retry_after=30.0)


class Flaky(Exception):
    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("flaky")
        self.retry_after = retry_after


def test_the_backoff_ceiling_doubles_per_attempt_up_to_the_cap() -> None:
    assert [POLICY.ceiling(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_the_backoff_is_full_jitter_below_the_ceiling() -> None:
    assert POLICY.backoff(3, lambda: 0.0) == 0.0
    assert POLICY.backoff(3, lambda: 0.5) == 2.0
    assert POLICY.backoff(3, lambda: 0.999) < POLICY.ceiling(3)


def test_a_server_hint_replaces_the_backoff_but_never_beyond_the_cap() -> None:
    assert POLICY.wait(1, 3.0) == 3.0
    assert POLICY.wait(1, 3600.0) == 30.0
    assert POLICY.wait(1, -1.0) == 0.0


def test_call_retries_what_it_is_told_to_and_waits_the_hint_or_the_backoff() -> None:
    sleeps: list[float] = []
    outcomes: list[Exception | str] = [Flaky(retry_after=7.0), Flaky(), "done"]

    def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    result = POLICY.call(
        attempt,
        retry_on=lambda error: isinstance(error, Flaky),
        retry_after=lambda error: getattr(error, "retry_after", None),
        sleep=sleeps.append,
    )

    assert result == "done"
    assert sleeps[0] == 7.0
    assert 0.0 <= sleeps[1] <= POLICY.ceiling(2)


def test_call_gives_up_after_its_attempts_and_reraises_the_last_error() -> None:
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise Flaky()

    with pytest.raises(Flaky):
        POLICY.call(attempt, retry_on=lambda error: True, sleep=lambda _s: None)
    assert len(calls) == POLICY.attempts


def test_an_error_it_is_not_told_to_retry_surfaces_at_once() -> None:
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise KeyError("permanent")

    with pytest.raises(KeyError):
        POLICY.call(attempt, retry_on=lambda error: isinstance(error, Flaky), sleep=lambda _s: None)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"attempts": 0},
        {"backoff_base": -1.0},
        {"backoff_cap": -1.0},
        {"max_retry_after": -0.5},
    ],
)
def test_impossible_bounds_are_refused(bad: dict[str, float]) -> None:
    fields: dict[str, float] = {
        "attempts": 1,
        "backoff_base": 0.0,
        "backoff_cap": 0.0,
        "max_retry_after": 0.0,
        **bad,
    }
    with pytest.raises(ValueError, match="must"):
        RetryPolicy(**fields)  # type: ignore[arg-type]


def test_the_settings_build_one_policy_per_kind_of_call_from_the_same_bounds() -> None:
    settings = LarkTimelineSettings.model_validate(
        {
            "retry_backoff_base": "2s",
            "retry_backoff_cap": "9s",
            "max_retry_after": "11s",
            "lark_max_attempts": 6,
            "synthesis_chunk_max_attempts": 2,
        }
    )
    assert settings.retry_backoff_base == timedelta(seconds=2)
    assert RetryPolicy.for_lark_calls(settings) == RetryPolicy(6, 2.0, 9.0, 11.0)
    assert RetryPolicy.for_model_calls(settings) == RetryPolicy(2, 2.0, 9.0, 11.0)
