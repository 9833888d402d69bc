"""Operator-driven maintenance jobs: processors, the job service, the loopback listener and
the driver (docs/maintenance.md)."""
