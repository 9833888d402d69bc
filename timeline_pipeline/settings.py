"""Configuration: the YAML shape of docs/design.md §13, every bound of section 14, and the
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
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationError,
    field_validator,
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
from timeline_pipeline.i18n.locales import check_time_zone

YAML_SECTION = "services.workspace.timeline.lark"
ENV_PREFIX = "TIMELINE_LARK_"
DEFAULT_DATABASE_URL = "sqlite:///.timeline/timeline.db"
MAX_INGESTION_LOOKBACK = timedelta(hours=72)
MAX_REVIEW_CARD_TTL = timedelta(hours=24)


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
    """Reads the section in its documented camelCase spelling and hands pydantic field names.

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
        # Each field's docstring is its description, which the configuration reference prints.
        use_attribute_docstrings=True,
    )

    # Feature flags (docs/design.md §13, all off by default).
    enabled: bool = False
    """Master switch of the Lark timeline: off stops ingestion, discovery and synthesis."""
    event_ingestion_enabled: bool = False
    """Store messages that arrive as events at `POST /lark/events` (with `enabled`)."""
    reconciliation_enabled: bool = False
    """Run paginated history reconciliation; discovery then also waits until collection has
    covered a window before synthesizing it."""
    summary_enabled: bool = False
    """Regenerate the workspace summary after completed windows (with `enabled`)."""
    workspace_types: list[str] = Field(default_factory=lambda: ["incident"], min_length=1)
    """Workspace types whose bound chats are ingested."""

    # Time bounds.
    ingestion_lookback: PositiveDuration = timedelta(hours=72)
    """Oldest message automatic ingestion touches; a workspace older than this ages out (its
    stored evidence is still synthesized). At most 72h."""
    synthesis_scan_interval: PositiveDuration = timedelta(minutes=2)
    """Interval of the window discovery and summary sensors (at least 30s in Dagster)."""
    synthesis_window: PositiveDuration = timedelta(minutes=10)
    """Length of a synthesis window (fixed UTC buckets); must divide an hour."""
    synthesis_window_close_grace: NonNegativeDuration = timedelta(minutes=3)
    """Wait after a window's end before synthesizing it, for late delivery; not longer than
    `synthesisWindow`."""
    synthesis_context_lookback: NonNegativeDuration = timedelta(minutes=5)
    """Read-only context before a window given to the synthesizer."""
    synthesis_stale_timeout: PositiveDuration = timedelta(minutes=15)
    """A window `processing` longer than this is taken as abandoned and retried as a whole;
    longer than `modelTimeout`."""
    reconcile_interval: PositiveDuration = timedelta(minutes=5)
    """Interval of the incremental reconciliation schedule."""
    reconcile_overlap: NonNegativeDuration = timedelta(minutes=10)
    """How far before its checkpoint an incremental reconciliation reads again."""
    evidence_refresh_interval: PositiveDuration = timedelta(hours=1)
    """Interval of the refresh schedule that re-reads history for edits and recalls."""
    evidence_refresh_lookback: PositiveDuration = timedelta(hours=24)
    """How far back a refresh run re-reads; not longer than `ingestionLookback`."""

    # Synthesis bounds.
    evidence_batch_limit: int = Field(default=40, ge=1, le=1000)
    """Most evidence rows in one model call (chunk)."""
    synthesis_max_prompt_tokens: int = Field(default=6000, ge=256)
    """Estimated-token budget of one prompt: three quarters for the chunk's evidence, one
    quarter for context."""
    synthesis_max_output_tokens: int = Field(default=4096, ge=256, le=16000)
    """`max_tokens` of a synthesis call (a summary call uses at most 2048)."""
    synthesis_window_max_attempts: int = Field(default=3, ge=1, le=20)
    """Whole-window attempts before a window stays `failed` for an operator's replay. Only the
    window's own failures count (invalid output, refused requests, runs that end without
    claiming it); an unavailable model service defers the window instead."""
    synthesis_outage_backoff_base: PositiveDuration = timedelta(minutes=1)
    """First window-level backoff when the model service is unavailable (connection errors,
    timeouts, 5xx/529, 429 beyond its retry-after, after the client's own retries): the window
    waits `pending` until `next_attempt_at` and the attempt is not counted. Doubles per
    consecutive deferral of the window, with jitter."""
    synthesis_outage_backoff_cap: PositiveDuration = timedelta(minutes=15)
    """Longest window-level backoff during an outage; not shorter than
    `synthesisOutageBackoffBase`. Once the model answers again, windows resume within it."""
    synthesis_chunk_max_attempts: int = Field(default=3, ge=1, le=20)
    """Attempts of one chunk (or one summary call) inside a run, with backoff: calls the model
    service failed transiently (the client retries them, honouring retry-after) and answers
    refused as invalid; a chunk out of attempts fails the window's attempt."""
    synthesis_group_gap: PositiveDuration = timedelta(minutes=3)
    """Messages without a thread or reply link this close together form one conversation."""
    model: str = Field(default="claude-sonnet-5-5", min_length=1)
    """Claude model used when `ANTHROPIC_API_KEY` is set."""
    model_timeout: PositiveDuration = timedelta(seconds=60)
    """Timeout of one Messages API request."""
    synthesis_price_input_per_mtok: float | None = Field(default=None, ge=0)
    """Price in USD of a million input tokens of `model`, for the cost a rerun preview
    reports (docs/maintenance.md, "Preview a rerun"); unset: no cost is reported."""
    synthesis_price_output_per_mtok: float | None = Field(default=None, ge=0)
    """Price in USD of a million output tokens of `model`; both prices are needed for a cost."""
    retry_backoff_base: PositiveDuration = timedelta(seconds=1)
    """First backoff of a retry (Lark and model calls); doubles per attempt, full jitter."""
    retry_backoff_cap: PositiveDuration = timedelta(seconds=30)
    """Longest backoff of a retry; not shorter than `retryBackoffBase`."""
    max_retry_after: PositiveDuration = timedelta(seconds=30)
    """Longest wait a `Retry-After` from Lark or the model may impose; longer hints are capped."""

    # Concurrency and backlog.
    max_concurrent_synthesis: int = Field(default=2, ge=1, le=64)
    """Window syntheses at once in the deployment: the number of run lanes; enforced by
    Dagster's run queue, so keep `dagster.yaml` (`timeline/synthesis` limit, pool default)
    equal to it (docs/scaling.md); the health check `run_queue_enforces_concurrency_settings`
    warns when they differ. The tags, lanes and limit checks: `windows/run_queue.py`."""
    max_concurrent_per_workspace: int = Field(default=1, ge=1, le=8)
    """Runs at once per workspace; enforced by the `timeline/workspace` limit in
    `dagster.yaml`, keep it equal; the same health check warns when they differ (the tags and
    the check: `windows/run_queue.py`)."""
    synthesis_run_max_windows: int = Field(default=50, ge=1, le=500)
    """Closed windows one synthesis run takes at most when Claude synthesizes, one after
    another (a batch of one lane, see docs/scaling.md); 1 gives every window a run of its own.
    At tens of seconds a window, 50 keep a run well inside run monitoring's one-hour limit."""
    synthesis_run_max_windows_rules: int = Field(default=500, ge=1, le=5000)
    """The same bound when the rule synthesizer runs (no Anthropic key): a rules window takes
    tens of milliseconds, so a run's seconds of start-up are only worth paying for hundreds."""
    window_backlog_limit_per_workspace: int = Field(default=100, ge=1)
    """Windows requested and not finished per workspace; discovery requests no more. 100 is
    about 17 hours of one chat: a workspace back from an outage is requested in one tick."""
    window_backlog_limit_global: int = Field(default=1000, ge=1)
    """Windows requested and not finished in total; not below the per-workspace limit."""
    backlog_alert_windows: int = Field(default=100, ge=1)
    """Asset check `window_backlog_within_limit` fails above this many pending and
    processing windows."""
    backlog_alert_oldest_uncovered_age: PositiveDuration = timedelta(minutes=30)
    """Asset check `oldest_uncovered_age_within_limit` fails when eligible evidence older
    than this is not covered by a finished window."""

    # Event receiver.
    max_message_chars: int = Field(default=4000, ge=100, le=100_000)
    """Longest message text kept; longer text is cut."""
    event_max_body_bytes: int = Field(default=1_048_576, ge=1024, le=16_777_216)
    """Largest callback body accepted (413 above it)."""
    event_timestamp_skew: PositiveDuration = timedelta(minutes=5)
    """Largest difference between a signed callback's timestamp and the clock."""
    binding_cache_ttl: NonNegativeDuration = timedelta(seconds=10)
    """How long a receiver caches a chat's workspace bindings; a new binding reaches every
    replica within this time."""
    ui_session_ttl: PositiveDuration = timedelta(hours=12)
    """How long a timeline page session lasts after its sign-in link was opened
    (docs/timeline-page.md); `ui revoke` or `token revoke --workspace W --all` ends them earlier."""
    ui_poll_interval: Annotated[Duration, Field(ge=timedelta(seconds=1))] = timedelta(seconds=5)
    """How often an open timeline page asks whether entries changed (an unchanged answer is an
    empty 204)."""
    display_name_cache_size: int = Field(default=10_000, ge=0)
    """Sender display names cached per receiver process (0 turns the cache off)."""
    display_name_cache_ttl: PositiveDuration = timedelta(hours=1)
    """How long a cached display name is used."""
    display_name_batch_size: int = Field(default=50, ge=1, le=50)
    """Users per batch lookup of display names."""

    # Lark OpenAPI client.
    lark_page_size: int = Field(default=50, ge=1, le=50)
    """Messages per history page."""
    lark_requests_per_second: float = Field(default=50.0, gt=0, le=50)
    """Client-side rate limit of Lark OpenAPI calls per process."""
    lark_requests_per_minute: int = Field(default=1000, ge=1, le=1000)
    """Client-side rate limit of Lark OpenAPI calls per minute per process."""
    lark_max_attempts: int = Field(default=5, ge=1, le=20)
    """Attempts of one Lark OpenAPI call (rate limits, 5xx, timeouts)."""
    lark_timeout: PositiveDuration = timedelta(seconds=10)
    """Timeout of one Lark OpenAPI request."""
    reconcile_max_threads: int = Field(default=200, ge=0)
    """Threads whose replies one reconciliation run fetches at most (0: none)."""
    reconcile_pre_floor_scan_limit: int = Field(default=500, ge=50, le=5000)
    """Messages one reconciliation run reads back from the ingestion floor (newest first, in
    pages, within the hour before it) for threads rooted there; past it the run gives up and
    reports `pre_floor_roots_given_up` (docs/design.md §3, "Threads")."""

    # Review cards (docs/review-cards.md).
    review_cards_enabled: bool = False
    """Post an interactive review card to the chat of a window that created drafts, and apply
    curators' decisions from it."""
    review_card_ttl: PositiveDuration = timedelta(hours=24)
    """How long a review card accepts decisions, persisted with the card; at most 24h."""
    review_card_admission_limit_per_workspace: int = Field(default=200, ge=1, le=100_000)
    """Admitted card decisions per workspace waiting for the worker; a callback beyond it is
    refused with a toast (try again shortly)."""
    review_card_worker_concurrency: int = Field(default=4, ge=1, le=64)
    """Decisions the card worker applies at once per process, bounded apart from admission."""
    review_card_lease: PositiveDuration = timedelta(seconds=30)
    """How long a worker holds an admitted decision or a card delivery; an expired lease is
    taken over by another worker or replica."""
    review_card_poll_interval: PositiveDuration = timedelta(seconds=1)
    """How often an idle card worker looks for queued work."""
    review_card_link_base_url: str = ""
    """Public origin of `serve`; when set, each draft on a card links to its entry on the
    timeline page (`/ui/workspaces/{id}`)."""
    interaction_retention: PositiveDuration = timedelta(days=30)
    """How long finished review cards and their admitted decisions are kept: the default
    retention of their lifecycle descriptors, in whole days within their bounds (7..365)."""

    # Pins from the chat (docs/pins.md).
    pin_from_chat_enabled: bool = False
    """Let a workspace's curators pin a chat message to its timeline by reacting to it with
    `pinEmojiType`: the message becomes a human, confirmed entry, and removing the reaction
    hides it. Needs the reaction events subscribed (docs/pins.md)."""
    pin_emoji_type: str = Field(default="Pin", min_length=1, max_length=64, pattern=r"^[!-~]+$")
    """The Lark `reaction_type.emoji_type` that pins (Lark's pushpin by default); every other
    reaction is ignored."""

    # Language and time (docs/i18n.md); each overridable per workspace.
    locale: Literal["auto", "en", "zh-CN"] = "auto"
    """The language of everything a person reads (summary, review cards, pin replies, the
    timeline page, the export): `en`, `zh-CN`, or `auto`, the majority script of the
    workspace's messages. Overridden per workspace by `workspace set-locale`."""
    time_zone: str = Field(default="UTC", min_length=1, max_length=64)
    """The IANA time zone (`Asia/Shanghai`) in which a person reads times; stored times stay
    UTC. Overridden per workspace by `workspace set-time-zone`."""

    # The incident report (docs/report.md).
    report_enabled: bool = False
    """Build the incident report (milestones, durations, sections) when a workspace leaves
    `firing`, and again when its confirmed entries change (the `incident_report` asset)."""
    report_lark_doc_enabled: bool = False
    """Write each report into a Lark Doc in `reportFolderToken` and post its link once into
    the chat; a rebuild updates the same document. Needs `reportEnabled`."""
    report_folder_token: str = Field(default="", max_length=128, pattern=r"^[A-Za-z0-9_-]*$")
    """The Lark Drive folder the report documents are created in (the app needs edit access
    to it); required by `reportLarkDocEnabled`."""
    report_document_url_base: str = Field(default="https://www.feishu.cn/docx/", min_length=1)
    """The web address a document id is appended to for the link posted to the chat and shown
    on the page (your tenant's domain, e.g. `https://acme.feishu.cn/docx/`)."""
    follow_up_tasks_enabled: bool = False
    """When a curator confirms a next-step entry, create a Lark task for it once, linked to
    the entry and the report; hiding the entry later does not delete the task."""

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        check_time_zone(value)
        return value

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
        if self.synthesis_outage_backoff_cap < self.synthesis_outage_backoff_base:
            raise ValueError(
                "synthesisOutageBackoffCap: must not be shorter than synthesisOutageBackoffBase"
            )
        if self.review_card_ttl > MAX_REVIEW_CARD_TTL:
            raise ValueError("reviewCardTtl: must not exceed 24h")
        if self.window_backlog_limit_per_workspace > self.window_backlog_limit_global:
            raise ValueError(
                "windowBacklogLimitPerWorkspace: must not exceed windowBacklogLimitGlobal"
            )
        if self.report_lark_doc_enabled and not self.report_enabled:
            raise ValueError("reportLarkDocEnabled: needs reportEnabled")
        if self.report_lark_doc_enabled and not self.report_folder_token:
            raise ValueError("reportLarkDocEnabled: needs reportFolderToken")
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

    model_config = SettingsConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL, validation_alias=AliasChoices("TIMELINE_DATABASE_URL")
    )
    """The product database: `sqlite:///path` or `postgresql+psycopg://user@host:5432/db`."""
    lark_app_id: str = Field(default="", validation_alias=AliasChoices("LARK_APP_ID"))
    """The Lark app's id; also how the app's own messages are recognised and excluded."""
    lark_app_secret: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_APP_SECRET")
    )
    """The Lark app's secret, for tenant access tokens (reconciliation, name lookups)."""
    lark_encrypt_key: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_ENCRYPT_KEY")
    )
    """Verifies the signature of callbacks and decrypts encrypted ones."""
    lark_verification_token: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("LARK_VERIFICATION_TOKEN")
    )
    """The token Lark puts in every callback."""
    lark_base_url: str = Field(
        default="https://open.larksuite.com", validation_alias=AliasChoices("LARK_BASE_URL")
    )
    """Origin of the Lark OpenAPI; `timeline-pipeline lark simulate` prints a local one."""
    anthropic_api_key: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("ANTHROPIC_API_KEY")
    )
    """Turns on Claude for synthesis and the summary; without it the rule-based ones run."""
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL")
    )
    """Origin of the Messages API (default: the SDK's)."""
    api_cursor_secret: SecretStr = Field(
        default=SecretStr(""), validation_alias=AliasChoices("TIMELINE_API_CURSOR_SECRET")
    )
    """Signs API paging cursors (a random key per process when unset); several `serve`
    replicas behind one balancer must share it."""
    maintenance_port: str | None = Field(
        default=None, validation_alias=AliasChoices("MAINTENANCE_PORT")
    )
    """Port (1 .. 65535) of the loopback-only maintenance listener that `serve` starts; unset
    disables it. Read as text: an invalid value disables only the listener, with a logged
    error, and never stops `serve` or any other command."""


class Settings:
    """Both halves of the configuration, loaded and validated once."""

    def __init__(self, timeline: LarkTimelineSettings, runtime: RuntimeEnvironment) -> None:
        self.timeline = timeline
        self.runtime = runtime


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
