"""Pure values and enums every layer shares: entries, evidence, workspaces, keys, states."""
