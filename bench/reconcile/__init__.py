"""Reconciliation benchmark (python -m bench.reconcile.run)."""
