"""Test doubles shared by the test packages (loopback stand-ins of outside services)."""
