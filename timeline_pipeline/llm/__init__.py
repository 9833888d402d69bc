"""Calls to the Anthropic Messages API, shared by every Claude caller of the product."""
