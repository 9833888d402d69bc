"""`/api/workspaces/{id}/curators`: who may decide drafts from the chat's review cards.

A card callback counts only from a curator of its workspace (docs/review-cards.md), so this
list is who can confirm, hide or edit what the chat sees. Reading it takes `timeline:read`;
changing it `timeline:curate`. Every change is audited (curation/curators.py).

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Final

from fastapi import APIRouter, Path, Request, Response, status

from timeline_pipeline.api.auth import AuthorizedWorkspace, request_actor
from timeline_pipeline.api.errors import ERROR_RESPONSES, problem, workspace_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import doc
from timeline_pipeline.api.schemas import CuratorOut, CuratorsOut
from timeline_pipeline.domain.keys import InvalidKey
from timeline_pipeline.web.deps import CuratorServiceDep

OPEN_ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,128}$"
OpenId = Annotated[
    str,
    Path(max_length=128, pattern=OPEN_ID_PATTERN, description="A Lark open_id (`ou_...`)."),
]

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)


@contextmanager
def _curator_errors() -> Iterator[None]:
    with workspace_errors():
        try:
            yield
        except InvalidKey as exc:
            raise problem(422, "invalid_input", str(exc)) from None


def _changed(
    change: Callable[..., bool], request: Request, workspace_id: str, open_id: str
) -> bool:
    """A change of the workspace's curators (`CuratorService.add` or `.remove`), audited as the
    request's token: whether it changed anything; its refusals are problems."""
    with _curator_errors():
        return change(workspace_id, open_id, actor=request_actor(request))


@router.get(
    "/workspaces/{workspace_id}/curators",
    response_model=CuratorsOut,
    responses=doc(404, "No such workspace."),
    tags=["curators"],
    summary="The workspace's curators (whose review-card actions count)",
)
def list_curators(workspace_id: AuthorizedWorkspace, service: CuratorServiceDep) -> CuratorsOut:
    with _curator_errors():
        found = service.curators(workspace_id)
    return CuratorsOut(items=[CuratorOut(open_id=o) for o in found])


@router.put(
    "/workspaces/{workspace_id}/curators/{open_id}",
    response_model=CuratorOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": CuratorOut, "description": "Already a curator; nothing changed."},
        **doc(404, "No such workspace."),
    },
    tags=["curators"],
    summary="Make a Lark user a curator of the workspace (idempotent)",
)
def put_curator(
    request: Request,
    workspace_id: AuthorizedWorkspace,
    open_id: OpenId,
    response: Response,
    service: CuratorServiceDep,
) -> CuratorOut:
    created = _changed(service.add, request, workspace_id, open_id)
    if not created:
        response.status_code = status.HTTP_200_OK
    return CuratorOut(open_id=open_id, created=created)


@router.delete(
    "/workspaces/{workspace_id}/curators/{open_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=doc(404, "No such workspace, or the user is not a curator of it."),
    tags=["curators"],
    summary="Stop counting a user's review-card actions",
)
def delete_curator(
    request: Request,
    workspace_id: AuthorizedWorkspace,
    open_id: OpenId,
    service: CuratorServiceDep,
) -> Response:
    if not _changed(service.remove, request, workspace_id, open_id):
        raise problem(404, "curator_not_found", f"{open_id!r} is not a curator of this workspace")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
