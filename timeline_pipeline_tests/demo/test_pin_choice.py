"""Which message the demo's commander pins: one that says something, in either language."""

from __future__ import annotations

import pytest

from timeline_pipeline.demo.pin import says_something


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ack", False),
        ("on it, looking now", False),
        ("rollback done, all 16 pgw pods on r811", True),
        ("收到", False),
        ("好的我看一下", False),
        ("p99 到 6 秒了", False),
        # Chinese has no spaces between words: a sentence is one "word" to str.split().
        ("堆 dump 出来了，70% 的内存是 user-coupon-cache 的对象，1200 多万条", True),
        ("剩下的错误全在 3 个 order-service pod 上", True),
    ],
)
def test_a_pin_worthy_message_says_something(text: str, expected: bool) -> None:
    assert says_something(text) is expected
