"""What both Claude callers are built from (`llm/setup.py`): rules when no Anthropic key is set,
else one retry-free client and the retry policy of model calls, from the synthesis settings."""

from __future__ import annotations

from datetime import timedelta

from timeline_pipeline.llm.setup import claude_setup, model_key
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings


def _settings(key: str = "", base_url: str | None = None) -> Settings:
    timeline = LarkTimelineSettings(model="claude-test", model_timeout=timedelta(seconds=12))
    runtime = RuntimeEnvironment(ANTHROPIC_API_KEY=key, ANTHROPIC_BASE_URL=base_url)
    return Settings(timeline, runtime)


def test_the_given_key_wins_over_the_environment_and_none_means_rules() -> None:
    assert model_key(_settings("sk-env"), "sk-given") == "sk-given"
    assert model_key(_settings("sk-env"), None) == "sk-env"
    assert model_key(_settings(), None) == ""
    assert claude_setup(_settings(), None, None) is None


def test_a_key_gives_one_retry_free_client_with_the_synthesis_settings() -> None:
    settings = _settings("sk-env", "http://127.0.0.1:9")

    setup = claude_setup(settings, None, None)

    assert setup is not None
    assert setup.model == "claude-test"
    assert setup.client.max_retries == 0
    assert setup.client.timeout == 12.0
    assert str(setup.client.base_url).startswith("http://127.0.0.1:9")
    assert setup.retry == RetryPolicy.for_model_calls(settings.timeline)
    given = claude_setup(settings, "sk-given", "http://127.0.0.1:8")
    assert given is not None and str(given.client.base_url).startswith("http://127.0.0.1:8")
    assert given.client.api_key == "sk-given"
