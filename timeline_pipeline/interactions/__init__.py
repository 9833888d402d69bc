"""Draft review in Lark: review cards, their callbacks and the worker (README, "Review cards")."""
