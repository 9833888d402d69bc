"""Synthesis quality against the hand-labelled gold transcripts."""
