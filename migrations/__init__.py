"""The alembic scripts, installed as `timeline_pipeline.migrations` (see setup.py), so that
`timeline-pipeline db upgrade` finds them in a wheel as in the repository (docs/packaging.md)."""
