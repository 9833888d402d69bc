"""Lark: normalization and policy (pure), the OpenAPI client, documents and the simulator."""
