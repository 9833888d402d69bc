"""The `timeline-pipeline` command: one module per command group (docs/cli.md).

Bad input ends with an exit code and one line on stderr, never a traceback; the maintenance
commands reach only the loopback listener (docs/maintenance.md).
"""
