"""Configuration: the YAML shape of seed 000 section 18, every bound of section 14, and the
environment variables that DESIGN.md names.

Values come from, highest first: environment (`TIMELINE_LARK_<KEY>` for the timeline section,
fixed names for connections and secrets), the YAML file named by `TIMELINE_CONFIG` (section
`services.workspace.timeline.lark`), then the defaults below. A bad value stops the process at
start with one line naming the key, because a misconfigured bound discovered at 3 a.m. during an
incident costs far more than a refused start.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from timeline_pipeline.durations import DurationError, format_duration, parse_duration

YAML_SECTION = "services.workspace.timeline.lark"
ENV_PREFIX = "TIMELINE_LARK_"
DEFAULT_DATABASE_URL = "sqlite:///.timeline/timeline.db"
MAX_INGESTION_LOOKBACK = timedelta(hours=72)


class SettingsError(Exception):
    """A configuration problem, phrased as one line naming the key."""


def _to_duration(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except DurationError as exc:
            raise ValueError(str(exc)) from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("durations need a unit, e.g. 30s, 2m, 72h")
    return value


Duration = Annotated[
    timedelta,
    BeforeValidator(_to_duration),
    PlainSerializer(format_duration, return_type=str),
]
NonNegativeDuration = Annotated[Duration, Field(ge=timedelta(0))]
PositiveDuration = Annotated[Duration, Field(gt=timedelta(0))]


class _CamelCaseYamlSource(YamlConfigSettingsSource):
    """Reads the section in the seed's camelCase spelling and hands pydantic field names.

    Field names stay snake_case so that environment variables read `TIMELINE_LARK_SYNTHESIS_WINDOW`;
    a snake_case key in the YAML file is refused, so the file has one spelling only.
    """

    def __init__(self, settings_cls: type[BaseSettings], **kwargs: Any) -> None:
        super().__init__(settings_cls, **kwargs)
        converted: dict[str, Any] = {}
        for key, value in self.init_kwargs.items():
            if "_" in key:
                raise SettingsError(
                    f"invalid setting {YAML_SECTION}.{key}: unknown key (keys are camelCase)"
                )
            converted[to_snake(key)] = value
        self.init_kwargs = converted


class LarkTimelineSettings(BaseSettings):
    """`services.workspace.timeline.lark`: feature flags and every bound of the pipeline."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    # Feature flags (seed 000 section 18, all off by default).
    enabled: bool = False
    event_ingestion_enabled: bool = False
    reconciliation_enabled: bool = False
    summary_enabled: bool = False
    workspace_types: list[str] = Field(default_factory=lambda: ["incident"], min_length=1)

    # Time bounds.
    ingestion_lookback: PositiveDuration = timedelta(hours=72)
    synthesis_scan_interval: PositiveDuration = timedelta(minutes=2)
    synthesis_window: PositiveDuration = timedelta(minutes=10)
    synthesis_window_close_grace: NonNegativeDuration = timedelta(minutes=3)
    synthesis_context_lookback: NonNegativeDuration = timedelta(minutes=5)
    synthesis_stale_timeout: PositiveDuration = timedelta(minutes=15)
    reconcile_interval: PositiveDuration = timedelta(minutes=5)
    reconcile_overlap: NonNegativeDuration = timedelta(minutes=10)
    evidence_refresh_interval: PositiveDuration = timedelta(hours=1)
    evidence_refresh_lookback: PositiveDuration = timedelta(hours=24)

    # Synthesis bounds.
    evidence_batch_limit: int = Field(default=40, ge=1, le=1000)
    synthesis_max_prompt_tokens: int = Field(default=6000, ge=256)
    synthesis_max_output_tokens: int = Field(default=4096, ge=256, le=16000)
    synthesis_window_max_attempts: int = Field(default=3, ge=1, le=20)
    synthesis_chunk_max_attempts: int = Field(default=3, ge=1, le=20)
    synthesis_group_gap: PositiveDuration = timedelta(minutes=3)
    model: str = Field(default="claude-sonnet-5-5", min_length=1)
    model_timeout: PositiveDuration = timedelta(seconds=60)
    retry_backoff_base: PositiveDuration = timedelta(seconds=1)
    retry_backoff_cap: PositiveDuration = timedelta(seconds=30)
    max_retry_after: PositiveDuration = timedelta(seconds=30)

    # Concurrency and backlog.
    max_concurrent_synthesis: int = Field(default=2, ge=1, le=64)
    max_concurrent_per_workspace: int = Field(default=1, ge=1, le=8)
    window_backlog_limit_per_workspace: int = Field(default=50, ge=1)
    window_backlog_limit_global: int = Field(default=500, ge=1)
    backlog_alert_windows: int = Field(default=100, ge=1)
    backlog_alert_oldest_uncovered_age: PositiveDuration = timedelta(minutes=30)

    # Event receiver.
    max_message_chars: int = Field(default=4000, ge=100, le=100_000)
    event_max_body_bytes: int = Field(default=1_048_576, ge=1024, le=16_777_216)
    event_timestamp_skew: PositiveDuration = timedelta(minutes=5)
    binding_cache_ttl: NonNegativeDuration = timedelta(seconds=10)
    display_name_cache_size: int = Field(default=10_000, ge=0)
    display_name_cache_ttl: PositiveDuration = timedelta(hours=1)
    display_name_batch_size: int = Field(default=50, ge=1, le=50)

    # Lark OpenAPI client.
    lark_page_size: int = Field(default=50, ge=1, le=50)
    lark_requests_per_second: float = Field(default=50.0, gt=0, le=50)
    lark_requests_per_minute: int = Field(default=1000, ge=1, le=1000)
    lark_max_attempts: int = Field(default=5, ge=1, le=20)
    lark_timeout: PositiveDuration = timedelta(seconds=10)
    reconcile_max_threads: int = Field(default=200, ge=0)

    @model_validator(mode="after")
    def _check_relations(self) -> LarkTimelineSettings:
        hour = timedelta(hours=1)
        if self.synthesis_window > hour or hour % self.synthesis_window:
            raise ValueError("synthesisWindow: must divide an hour (e.g. 5m, 10m, 15m, 30m, 1h)")
        if self.synthesis_window_close_grace > self.synthesis_window:
            raise ValueError("synthesisWindowCloseGrace: must not be longer than synthesisWindow")
        if self.ingestion_lookback > MAX_INGESTION_LOOKBACK:
            raise ValueError("ingestionLookback: must not exceed 72h")
        if self.evidence_refresh_lookback > self.ingestion_lookback:
            raise ValueError("evidenceRefreshLookback: must not exceed ingestionLookback")
        if self.synthesis_stale_timeout <= self.model_timeout:
            raise ValueError("synthesisStaleTimeout: must be longer than modelTimeout")
        if self.retry_backoff_cap < self.retry_backoff_base:
            raise ValueError("retryBackoffCap: must not be shorter than retryBackoffBase")
        if self.window_backlog_limit_per_workspace > self.window_backlog_limit_global:
            raise ValueError(
                "windowBacklogLimitPerWorkspace: must not exceed windowBacklogLimitGlobal"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_path = os.environ.get("TIMELINE_CONFIG")
        if config_path:
            path = Path(config_path)
            if not path.is_file():
                raise SettingsError(f"invalid setting TIMELINE_CONFIG: no such file {config_path}")
            # A shared file without our section leaves the defaults in force.
            with contextlib.suppress(KeyError):
                sources.append(
                    _CamelCaseYamlSource(
                        settings_cls, yaml_file=path, yaml_config_section=YAML_SECTION
                    )
                )
        return tuple(sources)


class RuntimeEnvironment(BaseSettings):
    """Connections and secrets, each under the exact variable name that DESIGN.md gives."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL, validation_alias=AliasChoices("TIMELINE_DATABASE_URL")
    )
    lark_app_id: str = Field(default="", validation_alias=AliasChoices("LARK_APP_ID"))
    lark_app_secret: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_APP_SECRET")
    )
    lark_encrypt_key: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_ENCRYPT_KEY")
    )
    lark_verification_token: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_VERIFICATION_TOKEN")
    )
    lark_base_url: str = Field(
        default="https://open.larksuite.com", validation_alias=AliasChoices("LARK_BASE_URL")
    )
    anthropic_api_key: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL")
    )
    api_cursor_secret: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("TIMELINE_API_CURSOR_SECRET")
    )
    """Signs API paging cursors; several `serve` replicas behind one balancer must share it."""
    maintenance_port: int | None = Field(
        default=None, ge=1, le=65535, validation_alias=AliasChoices("MAINTENANCE_PORT")
    )


class Settings:
    """Both halves of the configuration, loaded and validated once."""

    def __init__(self, timeline: LarkTimelineSettings, runtime: RuntimeEnvironment) -> None:
        self.timeline = timeline
        self.runtime = runtime

    @cached_property
    def claude_enabled(self) -> bool:
        return bool(self.runtime.anthropic_api_key.get_secret_value())


def _unknown_env_keys() -> list[str]:
    known = {ENV_PREFIX + name.upper() for name in LarkTimelineSettings.model_fields}
    return sorted(k for k in os.environ if k.startswith(ENV_PREFIX) and k not in known)


def _describe(exc: ValidationError, section: str) -> str:
    error = exc.errors()[0]
    loc = ".".join(str(part) for part in error["loc"] if part != "__root__")
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc and ":" in message:
        key, _, rest = message.partition(":")
        return f"invalid setting {section}.{key.strip()}: {rest.strip()}"
    key = to_camel(loc) if loc else "?"
    if error["type"] == "extra_forbidden":
        return f"invalid setting {section}.{key}: unknown key"
    return f"invalid setting {section}.{key}: {message}"


def load_timeline_settings(**overrides: Any) -> LarkTimelineSettings:
    """Load the timeline section; raise SettingsError with one line naming the key."""
    unknown = _unknown_env_keys()
    if unknown:
        raise SettingsError(f"invalid setting {unknown[0]}: unknown environment key")
    try:
        return LarkTimelineSettings(**overrides)
    except SettingsError:
        raise
    except ValidationError as exc:
        raise SettingsError(_describe(exc, YAML_SECTION)) from None
    except Exception as exc:  # yaml.YAMLError, OSError, TypeError: one line, never a traceback
        detail = " ".join(str(exc).split())
        raise SettingsError(f"invalid configuration file TIMELINE_CONFIG: {detail}") from None


def load_runtime_environment() -> RuntimeEnvironment:
    try:
        return RuntimeEnvironment()
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "environment"
        raise SettingsError(f"invalid setting {key}: {error['msg']}") from None


def load_settings(**overrides: Any) -> Settings:
    return Settings(load_timeline_settings(**overrides), load_runtime_environment())
