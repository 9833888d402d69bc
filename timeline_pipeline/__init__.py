"""Turns incident group chats in Lark into a curated, traceable workspace timeline."""
