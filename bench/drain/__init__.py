"""Window drain under the real daemon against the same synthesis in-process (docs/scaling.md)."""
