"""The timeline page, served by `serve` under `/ui` (docs/timeline-page.md).

One router per resource (`ui/routers/`): `sign_in` (the one-time link, the session, sign-out),
`timeline` (the page, its entry list, the Markdown export), `entries` (one entry: its fragment,
evidence, edit form, and the curation actions Confirm, Hide, Restore, Edit, Add), `summary`,
`report` (the incident report's view, with its milestones' forms), and `static` (the page's own
files). What they share is in `ui/pages.py` (who is asking, the
reads, the answers after a change), `ui/forms.py` and `ui/responses.py`. None of it is in the
API's OpenAPI document.
"""

from fastapi import APIRouter

from timeline_pipeline.ui.responses import UI_PREFIX
from timeline_pipeline.ui.routers import entries, report, sign_in, static, summary, timeline

__all__ = ["ui_router"]

ui_router = APIRouter(prefix=UI_PREFIX, include_in_schema=False)
for _resource in (timeline, entries, summary, report, sign_in, static):
    ui_router.include_router(_resource.router)
