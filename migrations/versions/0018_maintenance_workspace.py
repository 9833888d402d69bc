"""A maintenance job knows its workspace (docs/maintenance.md, "Legal holds"; docs/lifecycle.md):
`maintenance_jobs.workspace_id`, filled from the job's `parameters.workspace_id` (every
processor's scope; the scope key where an old row lacks it), with the keyset index
`(workspace_id, updated_at, id)` the lifecycle purge walks. The descriptor then scopes the
table by workspace, so a workspace hold reaches its jobs and the dry-run reports them held.

No foreign key: a job is the record of an operator's action and outlives nothing it names,
like a legal hold. The downgrade drops the column and its index, and keeps every row.

A rerun preview's report in a job keeps ids and counts, never text (its titles are read from
the preview's scratch rows when the report is shown): the titles that reports stored before
this revision carry are dropped here.

Revision ID: 0018_maintenance_workspace
Revises: 0017_pin_tombstones
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from timeline_pipeline.db.types import JSONType

revision: str = "0018_maintenance_workspace"
down_revision: str | None = "0017_pin_tombstones"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "maintenance_jobs"
INDEX = "ix_maintenance_jobs_workspace_id_updated_at_id"
TEXT_KEYS = ("title", "old_title")
ITEM_KINDS = ("added", "changed", "unchanged", "dropped", "left_alone")


def upgrade() -> None:
    with op.batch_alter_table(TABLE, recreate="never") as batch:
        batch.add_column(sa.Column("workspace_id", sa.String(128), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE maintenance_jobs "
            "SET workspace_id = COALESCE(parameters_json ->> 'workspace_id', scope_key)"
        )
    else:
        op.execute(
            "UPDATE maintenance_jobs "
            "SET workspace_id = "
            "COALESCE(json_extract(parameters_json, '$.workspace_id'), scope_key)"
        )
    op.create_index(INDEX, TABLE, ["workspace_id", "updated_at", "id"])
    _drop_preview_titles()


def _without_text(report: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    changed = False
    for window in report.get("windows") or []:
        for kind in ITEM_KINDS:
            for item in window.get(kind) or [] if isinstance(window, dict) else []:
                for key in TEXT_KEYS:
                    if isinstance(item, dict) and key in item:
                        del item[key]
                        changed = True
    return report, changed


def _drop_preview_titles() -> None:
    jobs = sa.table(
        TABLE,
        sa.column("id", sa.String(36)),
        sa.column("job_type", sa.String(64)),
        sa.column("result_json", JSONType),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(jobs.c.id, jobs.c.result_json).where(
            jobs.c.job_type == "window_rerun", jobs.c.result_json.is_not(None)
        )
    ).all()
    for job_id, result in rows:
        report = (result or {}).get("preview") if isinstance(result, dict) else None
        if not isinstance(report, dict):
            continue
        bare, changed = _without_text(report)
        if changed:
            bind.execute(
                jobs.update()
                .where(jobs.c.id == job_id)
                .values(result_json={**result, "preview": bare})
            )


def downgrade() -> None:
    op.drop_index(INDEX, table_name=TABLE)
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("workspace_id")
