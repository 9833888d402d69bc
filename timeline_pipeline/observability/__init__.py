"""Structured logging and Prometheus metrics shared by the long-running processes."""
