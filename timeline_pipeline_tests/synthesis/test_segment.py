"""Chinese word segmentation for the rule synthesizer (synthesis/segment.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from timeline_pipeline.synthesis.segment import segmented, words
from timeline_pipeline.synthesis.text import topic_words

ROOT = Path(__file__).resolve().parents[2]


def test_english_is_returned_as_it_was() -> None:
    text = "rolled back checkout-svc to v41, p99 180ms."
    assert segmented(text) is text


def test_chinese_runs_become_words_and_english_stays_as_written() -> None:
    assert segmented("支付网关p99飙到3s") == "支付 网关 p99 飙到 3s"
    assert segmented("已经 scale out 了") == "已经 scale out 了"
    assert segmented("retry关了\n还没恢复") == "retry 关 了\n还没 恢复"


def test_the_incident_dictionary_keeps_domain_words_whole() -> None:
    for word in ("回滚", "扩容", "缩容", "熔断", "降级", "限流", "摘流量", "切主", "工单", "压测"):
        assert words(f"我们先{word}再说").count(word) == 1, word


def test_segmenting_prints_nothing_and_writes_nothing_into_the_repository() -> None:
    """jieba logs its dictionary loading to stderr and caches it in a temporary directory."""
    before = {p for p in ROOT.iterdir()}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from timeline_pipeline.synthesis.segment import segmented;"
            "print(segmented('已经摘流量了'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout.strip() == "已经 摘流量 了"
    assert result.stderr == ""
    assert {p for p in ROOT.iterdir()} == before


def test_chinese_content_words_are_topics_so_two_messages_about_one_action_meet() -> None:
    """Drafts merge on shared topic words (synthesis/rules.py); Chinese ones come from words."""
    announced = topic_words("我去回滚网关配置")
    done = topic_words("网关配置回滚完成")
    assert {"回滚", "网关", "配置"} <= announced & done
    assert "已经" not in topic_words("已经回滚了")
