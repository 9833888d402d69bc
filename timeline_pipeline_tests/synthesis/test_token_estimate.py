# ruff: noqa: RUF001 - Chinese samples keep their own fullwidth punctuation
"""The offline token estimate is an upper bound for every script (docs/design.md §9): chunk
and context budgets are only budgets if the estimate never comes in under the real count."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.token_estimate import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_evidence_tokens,
    estimate_text_tokens,
    max_text_chars_for,
)
from timeline_pipeline_tests.synthesis.builders import evidence

# Real token counts of a byte-level BPE tokenizer: the one the Anthropic Python SDK shipped for
# offline counting (anthropic 0.30.0, `anthropic/tokenizer.json`), recorded once. The current
# models' tokenizer is reachable only through the count_tokens network call; these figures are
# the real-tokenizer reference the estimate is held against, sample by sample.
MEASURED = [
    pytest.param("支付网关超时，欧洲区用户下单失败，已回滚配置。", 22, id="zh"),
    pytest.param("数据库主从延迟超过30秒，暂停批量任务，等待追平后恢复。", 27, id="zh-digits"),
    pytest.param(
        "根因确认：优惠券服务缓存过期策略错误导致重复发放，已热修复并补偿用户。", 35, id="zh-rca"
    ),
    pytest.param("我来负责，大家先别动生产环境。", 14, id="zh-ownership"),
    pytest.param(
        "資料庫主從延遲超過三十秒，暫停批次任務，等待追平後恢復。", 35, id="zh-traditional"
    ),
    pytest.param(
        "EU checkout 超时 p99 2.3s，payments-config #4471 回滚后恢复正常。", 28, id="mixed"
    ),
    pytest.param("決済サービスでタイムアウトが発生しています。ロールバックしました。", 30, id="ja"),
    pytest.param("결제 서비스 장애가 발생했습니다. 롤백 완료했습니다.", 34, id="ko"),
    pytest.param("龘靐齉爩鱻麤", 13, id="rare-ideographs"),
    pytest.param("𠀀𠀁𪚥", 9, id="extension-b"),
    pytest.param("🔥🚨✅ 服务已恢复 👍", 15, id="emoji"),
    pytest.param(
        "Rolled back payments-config #4471; EU checkout p99 is back under 300ms.", 20, id="en"
    ),
    pytest.param("支付网关超时，欧洲区用户下单失败，已回滚配置。" * 20, 440, id="zh-long"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "measured"), MEASURED)
def test_the_estimate_is_never_below_the_measured_count(text: str, measured: int) -> None:
    assert estimate_text_tokens(text) >= measured


@pytest.mark.parametrize(("text", "measured"), MEASURED)
def test_the_estimate_stays_within_three_times_the_measured_count(text: str, measured: int) -> None:
    # An upper bound so loose that every Chinese window is split into many chunks would cost
    # calls for nothing: the headroom stays bounded.
    assert estimate_text_tokens(text) <= 3 * measured


def test_chinese_is_no_longer_estimated_at_a_third_of_its_size() -> None:
    text = "支付网关超时，欧洲区用户下单失败，已回滚配置。"
    assert estimate_text_tokens(text) >= len(text)  # 3.5 characters a token gave 7


_mixed_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
        st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),
        st.characters(min_codepoint=0x00C0, max_codepoint=0x04FF),
        st.characters(min_codepoint=0x1F300, max_codepoint=0x1F64F),
    ),
    max_size=400,
)


def _is_cjk(char: str) -> bool:
    point = ord(char)
    return 0x3040 <= point <= 0x30FF or 0x4E00 <= point <= 0x9FFF or 0xAC00 <= point <= 0xD7A3


@settings(max_examples=300, deadline=None)
@given(text=_mixed_text)
def test_every_cjk_character_counts_at_least_one_token_and_ascii_keeps_its_rate(text: str) -> None:
    estimate = estimate_text_tokens(text)
    assert estimate >= sum(1 for char in text if _is_cjk(char))
    assert estimate >= -(-len(text) * 2 // 7)  # never below the 3.5-characters-a-token rule
    assert (estimate == 0) == (text == "")


@settings(max_examples=300, deadline=None)
@given(text=_mixed_text, head=_mixed_text)
def test_the_estimate_grows_with_the_text(text: str, head: str) -> None:
    assert estimate_text_tokens(head + text) >= estimate_text_tokens(text)


@settings(max_examples=300, deadline=None)
@given(text=_mixed_text.filter(bool), budget=st.integers(min_value=0, max_value=400))
def test_the_longest_prefix_that_fits_is_within_budget_and_longest(text: str, budget: int) -> None:
    item = evidence(1, text)
    limit = max_text_chars_for(item, budget)
    available = budget - MESSAGE_OVERHEAD_TOKENS
    assert 0 <= limit <= len(text)
    if limit:
        assert estimate_text_tokens(text[:limit]) <= available
    if limit < len(text):
        assert estimate_text_tokens(text[: limit + 1]) > max(0, available)


def test_a_message_estimate_counts_its_name_and_overhead() -> None:
    item = evidence(1, "回滚完成").model_copy(update={"actor_display_name": "张三"})
    assert estimate_evidence_tokens(item) == (
        MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens("回滚完成") + estimate_text_tokens("张三")
    )
