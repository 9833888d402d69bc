"""The Lark event receiver: verified callbacks in, evidence rows committed, then the ack.

The HTTP layer (`app`) is thin; verification, handling, group commit and
the caches each live in their own module so that each can be read and tested on its own.
"""
