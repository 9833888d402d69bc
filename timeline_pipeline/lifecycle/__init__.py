"""The data lifecycle: retention registry, legal holds, dry-run and purge (docs/lifecycle.md)."""
