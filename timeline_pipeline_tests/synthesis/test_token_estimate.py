# ruff: noqa: RUF001, E501 - samples keep their own scripts, punctuation and length
"""The offline token estimate is an upper bound for every script a chat carries (docs/design.md
§9, "Token estimates"): chunk and context budgets are only budgets if the estimate never comes in
under the real count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.contract import ConversationGroup, EvidenceItem, SynthesisChunk
from timeline_pipeline.synthesis.prompt import render_chunk
from timeline_pipeline.synthesis.token_estimate import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_evidence_tokens,
    estimate_text_tokens,
    max_text_chars_for,
)
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence

# Real token counts of a byte-level BPE tokenizer: the one the Anthropic Python SDK shipped for
# offline counting (anthropic 0.30.0, `anthropic/tokenizer.json`, NFKC-normalizing), recorded
# once. The current models' tokenizer is reachable only through the count_tokens network call;
# these figures are the real-tokenizer reference the estimate is held against, sample by sample,
# one table row per kind of text a chat carries.
MEASURED = [
    pytest.param('Rolled back payments-config #4471; EU checkout p99 is back under 300ms.', 20, id='en'),
    pytest.param("Customers in Europe can't complete checkout; roughly twelve percent of orders are failing.", 17, id='en-prose'),
    pytest.param("gw 403 ratio 0.4% -> 6.1% from 14:04. ~94% of the 403s are from kestrelby's 3 egress ips, rest scattered", 38, id='en-chat'),
    pytest.param('[capacity] evt-kafka-b used 83.1/96.0 TB (86.6%), 24h delta +8.4 TB', 30, id='en-bot'),
    pytest.param('kubectl -n payments rollout undo deploy/checkout-api --to-revision=41', 20, id='code-shell'),
    pytest.param("SELECT count(*) FROM orders WHERE status = 'failed' AND created_at > now() - interval '1 hour';", 24, id='code-sql'),
    pytest.param('Traceback (most recent call last):\n  File "/srv/app/handlers.py", line 88, in charge\n    raise GatewayTimeout(resp.status_code)\nGatewayTimeout: 504', 39, id='code-trace'),
    pytest.param('{"level":"error","ts":1733344515.123,"caller":"grpc/server.go:412","msg":"deadline exceeded"}', 30, id='code-json'),
    pytest.param('payments_config.reload_timeout_ms = getConfigValue("EU") ERR_CONNECTION_RESET', 21, id='code-identifiers'),
    pytest.param('trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7 parent=5fb397be34d26b51', 49, id='hex-trace-ids'),
    pytest.param('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 38, id='hex-sha'),
    pytest.param('commit 9fceb02d0ae598e95dc970b74767f19372d61af8 0xDEADBEEF', 30, id='hex-commit'),
    pytest.param('request 123e4567-e89b-12d3-a456-426614174000 failed; retry 9b2c3f1e-7d4a-4b8e-a1c2-0f9e8d7c6b5a', 60, id='uuid'),
    pytest.param('CFAC634B-2E99-4280-B72C-EBD10EE8EDF2', 24, id='uuid-upper'),
    pytest.param('om_dc13264520392913993dd051dba21dcf oc_a0553eda9014c201e6969b478895c230', 36, id='lark-ids'),
    pytest.param('eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0', 43, id='base64'),
    pytest.param('AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 30, id='key'),
    pytest.param('+86 138 0013 8000, order 20261204203515000123, 4945443732332493516', 27, id='digits'),
    pytest.param('7 3 9 1 0 4 6 2 8 5 11 93 57 04 86', 15, id='digits-spaced'),
    pytest.param('3.14159 2026-12-04T20:35:15Z 10.0.12.254:8443 p99 2.3s 5xx 12.7%', 39, id='digits-times'),
    pytest.param('!@#$%^&*()_+{}|:<>?~`', 15, id='punct'),
    pytest.param('=> -> :: ... ?? !! --- === !== <=> ||| && `ERROR` [WARN] <nil> ~/.ssh/', 26, id='punct-code'),
    pytest.param('——……「」『』【】《》、。，！？：；（）', 21, id='punct-cjk'),
    pytest.param('\t\t\t\n\n\n    \n', 3, id='whitespace'),
    pytest.param('支付网关超时，欧洲区用户下单失败，已回滚配置。', 22, id='zh'),
    pytest.param('数据库主从延迟超过30秒，暂停批量任务，等待追平后恢复。', 27, id='zh-digits'),
    pytest.param('根因确认：优惠券服务缓存过期策略错误导致重复发放，已热修复并补偿用户。', 35, id='zh-rca'),
    pytest.param('我来负责，大家先别动生产环境。', 14, id='zh-ownership'),
    pytest.param('資料庫主從延遲超過三十秒，暫停批次任務，等待追平後恢復。', 35, id='zh-traditional'),
    pytest.param('婷琳蕾浩敏晨，鑫淼焱垚。', 24, id='zh-names'),
    pytest.param('EU checkout 超时 p99 2.3s，payments-config #4471 回滚后恢复正常。', 28, id='mixed'),
    pytest.param('HPA 暂时 disable，陈晨 approve 了，已经 scale out 了', 21, id='mixed-chat'),
    pytest.param('龘靐齉爩鱻麤', 13, id='rare-ideographs'),
    pytest.param('𠀀𠀁𪚥', 9, id='extension-b'),
    pytest.param('決済サービスでタイムアウトが発生しています。ロールバックしました。', 30, id='ja'),
    pytest.param('データベースのレプリケーション遅延が30秒を超えたため、バッチ処理を一時停止しました。', 41, id='ja-kana'),
    pytest.param('ﾛｰﾙﾊﾞｯｸ完了ｼﾏｼﾀ。ｴﾗｰ率ﾊ0.1%ﾆ戻ﾘﾏｼﾀ', 31, id='halfwidth-kana'),
    pytest.param('ｱｲｳｴｵｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾅﾆﾇﾈﾉﾊﾋﾌﾍﾎﾏﾐﾑﾒﾓﾔﾕﾖﾗﾘﾙﾚﾛﾜｦﾝ', 66, id='halfwidth-kana-all'),
    pytest.param('결제 서비스 장애가 발생했습니다. 롤백 완료했습니다.', 34, id='ko'),
    pytest.param('원인은 쿠폰 서비스의 캐시 만료 정책 오류로 확인되었고, 핫픽스 배포 후 사용자 보상을 진행합니다.', 59, id='ko-long'),
    pytest.param('유럽 지역 결제 실패율이 12%까지 올라갔고 고객 문의가 300건 넘게 들어왔어요.', 50, id='ko-impact'),
    pytest.param('뷁 똠 쀍 햏 믜 꿻', 18, id='ko-rare'),
    pytest.param('Платёжный шлюз отвечает с задержкой, откатили конфигурацию payments-config.', 35, id='ru'),
    pytest.param('Відновлення завершено, перевіряємо журнали ще раз.', 28, id='uk'),
    pytest.param('Η υπηρεσία πληρωμών επανήλθε, συνεχίζουμε την παρακολούθηση.', 73, id='el'),
    pytest.param('ŠKODA ČEZ ŘEŘICHA ŽLUŤOUČKÝ KŮŇ ÚPĚL ĎÁBELSKÉ ÓDY; Łódź, Ærøskøbing', 62, id='latin-accents'),
    pytest.param('Cổng thanh toán bị lỗi, chúng tôi đã khôi phục cấu hình trước đó.', 45, id='vi'),
    pytest.param('بوابة الدفع لا تستجيب، قمنا بالتراجع عن آخر تغيير في الإعدادات.', 60, id='ar'),
    pytest.param('שער התשלומים לא מגיב, ביצענו החזרה לגרסה הקודמת.', 43, id='he'),
    pytest.param('ระบบชำระเงินล่ม ลูกค้าไม่สามารถสั่งซื้อได้ กำลังย้อนกลับการตั้งค่า', 113, id='th'),
    pytest.param('भुगतान सेवा में रुकावट है, हमने पिछला बदलाव वापस ले लिया है।', 69, id='hi'),
    pytest.param('→ ← ⇒ ∞ ≈ ≠ ≤ ≥ ± × ÷ √ ° µ € £ ¥ ₩ © ™ • … ┌──┐ │ok│ ■□▲△●○★☆', 58, id='symbols'),
    pytest.param('①②③④⑤ ⅠⅡⅢⅣ ㈱ ㎏ ㎞ ㍻ ﷺ ﬁ ﬂ', 32, id='compatibility'),
    pytest.param('🔥🚨✅ 服务已恢复 👍', 15, id='emoji'),
    pytest.param('👨\u200d👩\u200d👧\u200d👦👩\u200d💻🧑🏽\u200d🚀🏳️\u200d🌈🏴\u200d☠️', 46, id='emoji-zwj'),
    pytest.param('🇨🇳🇺🇸🇯🇵🇰🇷🇩🇪🇬🇧🇫🇷', 42, id='emoji-flags'),
    pytest.param('👍🏽👍🏻👍🏿🙏🏼💪🏾 ❤️✔️⚠️☑️✈️☎️', 46, id='emoji-skin-tones'),
    pytest.param('🥲🫠🫡🫶🪲🧯🛟 [OK] +1 👌 收到 🙏', 36, id='emoji-new'),
    pytest.param("支付网关超时，欧洲区用户下单失败，已回滚配置。" * 20, 440, id="zh-long"),
]  # fmt: skip
SAMPLES = [(param.values[0], param.values[1]) for param in MEASURED]


@pytest.mark.parametrize(("text", "measured"), MEASURED)
def test_the_estimate_is_never_below_the_measured_count(text: str, measured: int) -> None:
    assert estimate_text_tokens(text) >= measured


@pytest.mark.parametrize(("text", "measured"), MEASURED)
def test_the_estimate_stays_within_three_times_the_measured_count(text: str, measured: int) -> None:
    # An upper bound so loose that every Chinese window is split into many chunks would cost
    # calls for nothing: the headroom stays bounded.
    assert estimate_text_tokens(text) <= 3 * measured


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=12))
def test_mixed_script_text_is_bounded_by_its_measured_parts(parts: list[tuple[str, int]]) -> None:
    # The reference tokenizer never merges across a newline, so lines joined by newlines cost the
    # sum of their measured counts plus at most one token per newline: that sum is a real count
    # (checked against the tokenizer when the samples were recorded) the estimate must not undercut.
    text = "\n".join(sample for sample, _ in parts)
    assert estimate_text_tokens(text) >= sum(measured for _, measured in parts) + len(parts) - 1


def test_chinese_is_no_longer_estimated_at_a_third_of_its_size() -> None:
    text = "支付网关超时，欧洲区用户下单失败，已回滚配置。"
    assert estimate_text_tokens(text) >= len(text)  # 3.5 characters a token gave 7


def test_halfwidth_kana_cost_what_their_fullwidth_forms_cost() -> None:
    # The tokenizer folds them (NFKC) before it counts; U+FF61-FF9F are not cheaper ASCII.
    assert estimate_text_tokens("ﾛｰﾙﾊﾞｯｸｼﾏｼﾀ") >= estimate_text_tokens("ロールバックシマシタ")
    assert estimate_text_tokens("ｶﾀｶﾅ") == estimate_text_tokens("カタカナ")


@pytest.mark.parametrize(
    "text",
    [
        "rollback done and error rate back under one percent",
        "short status line",
        "x" * 35,
        "",
    ],
)
def test_lowercase_prose_keeps_three_and_a_half_characters_a_token(text: str) -> None:
    # English chunk sizes do not move for plain prose: ids, digits and other scripts pay more.
    assert estimate_text_tokens(text) == -(-len(text) * 2 // 7)


def test_a_hex_id_costs_more_than_prose_of_its_length() -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"  # 21 tokens measured
    assert estimate_text_tokens(trace) >= 21 > estimate_text_tokens("x" * len(trace))


# Lines as the prompt renders them (synthesis/prompt.py), with the reference's count of each line
# and its newline: the per-message estimate, framing and actor included, is their upper bound.
RENDERED = [
    pytest.param(1234567, "支付网关超时，欧洲区用户下单失败，已回滚配置。", "陈晨", True, 52, id="zh-named-grouped"),
    pytest.param(42, "lgtm", None, False, 44, id="actor-id-only"),
    pytest.param(987654321, 'rollback done\n"pods": 42/42 on v4.17.2\ttrace 4bf92f3577b34da6a3ce929d0e0e4736', "Tomasz Wrobel", True, 75, id="escapes-and-ids"),
    pytest.param(7, "결제 서비스 장애가 발생했습니다. 롤백 완료했습니다.", "김민수", False, 59, id="ko"),
]  # fmt: skip


@pytest.mark.parametrize(("seconds", "text", "name", "grouped", "measured"), RENDERED)
def test_a_message_estimate_bounds_its_rendered_prompt_line(
    seconds: int, text: str, name: str | None, grouped: bool, measured: int
) -> None:
    item = EvidenceItem(
        id=seconds,
        occurred_at=WINDOW_START + timedelta(seconds=seconds),
        actor_id="ou_7d8a6e6df7621556ce0d21922b676706",
        actor_display_name=name,
        text=text,
        content_hash="h",
        message_id=f"om_{seconds}",
        chat_id="oc_chat",
    )
    chunk = SynthesisChunk(
        window_start=WINDOW_START,
        window_end=WINDOW_END,
        index=0,
        evidence=[item],
        groups=[ConversationGroup(key="k", evidence=[item])] if grouped else [],
    )
    line = render_chunk(chunk).splitlines()[-1]
    assert line.startswith(f'{{"id":{seconds},')  # the line that was measured
    assert estimate_evidence_tokens(item) >= measured


def test_a_message_without_a_display_name_pays_for_the_actor_id_the_prompt_shows() -> None:
    item = evidence(1, "ok", actor="ou_7d8a6e6df7621556ce0d21922b676706")
    assert estimate_evidence_tokens(item) == (
        MESSAGE_OVERHEAD_TOKENS
        + estimate_text_tokens("ok")
        + estimate_text_tokens("ou_7d8a6e6df7621556ce0d21922b676706")
    )


_mixed_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
        st.characters(min_codepoint=0xFF01, max_codepoint=0xFF9F),
        st.characters(min_codepoint=0x00C0, max_codepoint=0x06FF),
        st.characters(min_codepoint=0x0E00, max_codepoint=0x0E7F),
        st.characters(min_codepoint=0x1F1E6, max_codepoint=0x1FAFF),
        st.sampled_from(["\u200d", "\ufe0f", "\n", "\t"]),
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
    assert estimate_text_tokens(head + text) >= estimate_text_tokens(head)


@settings(max_examples=300, deadline=None)
@given(text=_mixed_text.filter(bool), budget=st.integers(min_value=0, max_value=400))
def test_the_longest_prefix_that_fits_is_within_budget_and_longest(text: str, budget: int) -> None:
    item = evidence(1, text)
    limit = max_text_chars_for(item, budget)
    available = budget - MESSAGE_OVERHEAD_TOKENS - estimate_text_tokens("ou_alice")
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
