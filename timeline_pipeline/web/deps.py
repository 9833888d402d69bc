"""The dependencies of `serve`'s routes, in one place: `Annotated[..., Depends(...)]` aliases.

Every provider reads the app's resources (`ServeResources`, built by http/resources.py) through
`AppResources`, the part of them every router may ask for: the web core sits below the routers
and the app that composes them (docs/design.md, "Layers"), so it names no router's service. A
test swaps one with `app.dependency_overrides[get_curation_service] = lambda: fake`, as FastAPI
documents. The few places that run before FastAPI's dependency solving (the API's gate, the
plain `/lark/events` route, kept plain because solving would cost more than verifying a
callback) ask `resolve`, which honours the same overrides. A provider of one router's own
service lives with that router (the Lark event service's in receiver/router.py).

No `from __future__ import annotations`: FastAPI reads these annotations at route definition.
"""

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Protocol, TypeVar, cast

from fastapi import Depends, Request
from sqlalchemy import Engine

from timeline_pipeline.curation.curators import CuratorService
from timeline_pipeline.curation.evidence import EvidenceService
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.observability.metrics import ReceiverMetrics
from timeline_pipeline.report.service import ReportService
from timeline_pipeline.settings import Settings
from timeline_pipeline.web.cursors import CursorCodec

__all__ = [
    "AppResources",
    "CurationServiceDep",
    "CuratorServiceDep",
    "CursorsDep",
    "EngineDep",
    "EvidenceServiceDep",
    "MetricsDep",
    "ReportServiceDep",
    "SettingsDep",
    "get_curation_service",
    "get_curator_service",
    "get_cursors",
    "get_engine",
    "get_evidence_service",
    "get_metrics",
    "get_report_service",
    "get_resources",
    "get_settings",
    "resolve",
]

T = TypeVar("T")


class AppResources(Protocol):
    """What every router may read of the app's resources (`ServeResources` has these and more)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def metrics(self) -> ReceiverMetrics: ...

    @property
    def curation(self) -> CurationService: ...

    @property
    def evidence(self) -> EvidenceService: ...

    @property
    def cursors(self) -> CursorCodec: ...

    @property
    def report(self) -> ReportService: ...


def get_resources(request: Request) -> AppResources:
    return cast(AppResources, request.app.state.resources)


def get_settings(request: Request) -> Settings:
    return get_resources(request).settings


def get_engine(request: Request) -> Engine:
    return get_resources(request).engine


def get_metrics(request: Request) -> ReceiverMetrics:
    return get_resources(request).metrics


def get_curation_service(request: Request) -> CurationService:
    return get_resources(request).curation


def get_evidence_service(request: Request) -> EvidenceService:
    return get_resources(request).evidence


def get_curator_service(request: Request) -> CuratorService:
    return CuratorService(get_resources(request).engine)


def get_cursors(request: Request) -> CursorCodec:
    return get_resources(request).cursors


def get_report_service(request: Request) -> ReportService:
    return get_resources(request).report


def resolve(request: Request, provider: Callable[[Request], T]) -> T:
    """`provider(request)`, or its override in `app.dependency_overrides` (called with the
    request when it takes an argument), for code that runs outside dependency solving."""
    override: Callable[..., Any] | None = request.app.dependency_overrides.get(provider)
    if override is None:
        return provider(request)
    if inspect.signature(override).parameters:
        return cast(T, override(request))
    return cast(T, override())


SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]
MetricsDep = Annotated[ReceiverMetrics, Depends(get_metrics)]
CurationServiceDep = Annotated[CurationService, Depends(get_curation_service)]
EvidenceServiceDep = Annotated[EvidenceService, Depends(get_evidence_service)]
CursorsDep = Annotated[CursorCodec, Depends(get_cursors)]
CuratorServiceDep = Annotated[CuratorService, Depends(get_curator_service)]
ReportServiceDep = Annotated[ReportService, Depends(get_report_service)]
