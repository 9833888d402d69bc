"""A maintenance job knows its workspace (docs/maintenance.md, "Legal holds"; docs/lifecycle.md):
`maintenance_jobs.workspace_id`, filled from the job's `parameters.workspace_id` (every
processor's scope; the scope key where an old row lacks it), with the keyset index
`(workspace_id, updated_at, id)` the lifecycle purge walks. The descriptor then scopes the
table by workspace, so a workspace hold reaches its jobs and the dry-run reports them held.

No foreign key: a job is the record of an operator's action and outlives nothing it names,
like a legal hold. The downgrade drops the column and its index, and keeps every row.

Revision ID: 0018_maintenance_workspace
Revises: 0017_pin_tombstones
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_maintenance_workspace"
down_revision: str | None = "0017_pin_tombstones"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "maintenance_jobs"
INDEX = "ix_maintenance_jobs_workspace_id_updated_at_id"


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


def downgrade() -> None:
    op.drop_index(INDEX, table_name=TABLE)
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("workspace_id")
