"""Build the product's LarkClient from the validated settings (docs/configuration.md, "Lark OpenAPI
client").

The CLI, the Dagster resource and the benchmark all construct the client here, so page size,
rate limits, retry attempts and backoff always come from the same configuration keys.
"""

from __future__ import annotations

from timeline_pipeline.lark.client import LarkClient, LarkClientConfig
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment

__all__ = ["LarkNotConfigured", "build_client", "client_config"]


class LarkNotConfigured(Exception):
    """The settings name no usable Lark app; the message is one line for an operator."""


def client_config(
    settings: LarkTimelineSettings, *, app_id: str, app_secret: str, base_url: str
) -> LarkClientConfig:
    if not app_id or not app_secret:
        raise LarkNotConfigured("LARK_APP_ID and LARK_APP_SECRET must be set to read Lark history")
    if not base_url:
        raise LarkNotConfigured("LARK_BASE_URL must not be empty")
    return LarkClientConfig(
        app_id=app_id,
        app_secret=app_secret,
        base_url=base_url,
        page_size=settings.lark_page_size,
        max_requests_per_second=settings.lark_requests_per_second,
        max_requests_per_minute=settings.lark_requests_per_minute,
        retry=RetryPolicy.for_lark_calls(settings),
        timeout_seconds=settings.lark_timeout.total_seconds(),
    )


def build_client(settings: LarkTimelineSettings, runtime: RuntimeEnvironment) -> LarkClient:
    """A client for the app named by LARK_APP_ID / LARK_APP_SECRET at LARK_BASE_URL."""
    return LarkClient(
        client_config(
            settings,
            app_id=runtime.lark_app_id,
            app_secret=runtime.lark_app_secret.get_secret_value(),
            base_url=runtime.lark_base_url,
        )
    )
