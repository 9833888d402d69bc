"""A workspace's language and time zone (docs/i18n.md): how a person reads its summary, cards,
replies, page and export. Both NULL on every existing row, which follows the `locale` and
`timeZone` settings (defaults `auto` and `UTC`): a workspace made before this revision reads as
it did unless its chat is mostly Chinese.

Revision ID: 0016_workspace_language
Revises: 0015_review_card_outbox
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_workspace_language"
down_revision: str | None = "0015_review_card_outbox"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "workspaces"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column("locale", sa.String(8), nullable=True))
        batch.add_column(sa.Column("time_zone", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("time_zone")
        batch.drop_column("locale")
