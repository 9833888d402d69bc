"""Secrets and their hashes, pure (no I/O): the timeline page's session and link secrets and
its request checks (`credentials`, docs/timeline-page.md), the review cards' callback tokens
(`callback_tokens`, docs/review-cards.md). The stores keep only the hashes these compute."""
