"""A workspace's `Presentation`: the language and zone every surface a person reads uses
(docs/i18n.md).

The workspace's own choice wins; NULL follows the `locale` and `timeZone` settings; `auto` reads
the majority script of the workspace's first messages (`i18n.locales.locale_of_texts`). One seam
for the page, the review cards, the pin replies, the summary, the export and the CLI, so that
they never disagree about a workspace's language.
"""

from __future__ import annotations

from sqlalchemy import Connection

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.i18n.locales import AUTO, Presentation, check_time_zone, resolve_locale
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence
from timeline_pipeline.store import workspaces as workspace_store

__all__ = ["LANGUAGE_SAMPLE", "presentation_for", "presentation_of"]

LANGUAGE_SAMPLE = 200
"""How many of a workspace's first messages an `auto` locale reads: enough for a majority, few
enough for one indexed read per page or card."""


def presentation_for(
    conn: Connection, workspace: Workspace, settings: LarkTimelineSettings
) -> Presentation:
    """The workspace's locale (its messages read only for `auto`) and zone."""
    choice = workspace.locale or settings.locale
    texts = (
        evidence.language_sample(conn, workspace.id, limit=LANGUAGE_SAMPLE)
        if choice == AUTO
        else ()
    )
    zone = check_time_zone(workspace.time_zone or settings.time_zone)
    return Presentation(resolve_locale(choice, texts), zone)


def presentation_of(
    conn: Connection, workspace_id: str, settings: LarkTimelineSettings
) -> Presentation:
    """`presentation_for` the stored workspace; WorkspaceNotFound when there is none."""
    return presentation_for(conn, workspace_store.require(conn, workspace_id), settings)
