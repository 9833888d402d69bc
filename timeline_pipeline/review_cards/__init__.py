"""Draft review in Lark: review cards, their callbacks and the worker (docs/review-cards.md)."""
