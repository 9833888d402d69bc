"""Chinese and mixed Chinese-English sentences the rule synthesizer reads (docs/design.md §7).

Every sentence is written for this file, in the words of no particular chat: how Chinese states
that work is done or under way (around Chinese and English verbs alike), what comes next, what
users suffer, what was seen and why, and what is no fact at all (questions with or without their
mark, guesses, hedges, denials). The cues are the table `synthesis/lexicon_zh.toml`, read on the
segmented sentence.
"""

from __future__ import annotations

import pytest

from timeline_pipeline.synthesis.classify import MessageKind, impact_aspect, read_message
from timeline_pipeline.synthesis.contract import Category
from timeline_pipeline.synthesis.segment import segmented
from timeline_pipeline_tests.synthesis.builders import evidence


def _reading(text: str) -> tuple[MessageKind, Category | None]:
    reading = read_message(evidence(1, text))
    return reading.kind, reading.category


MITIGATION = [
    # completion and aspect around a Chinese verb
    "订单服务已经全部暂停了",
    "网关节点已经摘流量了",
    "把灰度流量切回老版本了",
    "库存服务重启好了",
    "正在回滚 payment-svc",
    "开关已经打开，配置推到全部实例了",
    # around an English verb: the tense is carried by the Chinese particles
    "已经 scale out 了",
    "retry 关了",
    "rollback 已经开始了",
    "consumer 已经 restart 完了",
    "search-api 在 rollback 中",
    "bgp session 已经 shutdown，流量走另一条线",
    "配置推完了，所有实例都拿到了",
    "已经 failover 到备库",
    "回滚完了，错误率还没下来",
    "已经把 v2.3 的镜像换回 v2.2",
    "限流规则上了，单机 500 qps",
    "主库切到 db-2 了",
    "重启了 4 台 worker",
    "熔断打开了",
    "把这台机器从负载均衡摘掉了",
    "热点 key 做了本地缓存",
    "v3.2 回滚到 v3.1 了",
    "流量已经全部切到上海机房",
    "把 batch job 停了",
    "临时把超时从 1s 调到 3s",
    "扩了 10 个 pod",
    "kill 掉了那个长事务",
    "DNS TTL 改成 60s 了",
    "已经加了 IP 黑名单",
]

NEXT_STEP = [
    "后续要给慢查询加告警",
    "待办：连接池参数统一走配置中心",
    "本周五前补一份变更评审流程",
    "临时加的机器先留着，下周再缩",
    "需要补充 redis 的容量水位监控",
    "复盘的时候再看阈值的设置",
    "跟进：压测脚本加上回调超时的场景",
    "下周之前把降级开关做成配置",
    "后面要把这个告警阈值调低",
    "复盘会定在周四",
    "下周出一个改进方案",
    "action：加 canary 自动回滚，owner 王磊",
    "补一个容量规划，月底前",
    "复盘文档我周五前写完",
]

IMPACT = [
    "接口超时，用户一直收不到验证码",
    "半小时已经 300 多个工单了",
    "下单成功率掉到 82%",
    "收银台页面打不开，一直转圈",
    "首页白屏，买家都进不去",
    "商品详情页打不开了！",
    "直播间的购买按钮报错，买家下不了单",
    "支付宝渠道返回大量 504",
    "退款接口全部 500",
    "客服这边接到 50 多个电话",
    "影响了大约 2 万笔订单",
    "华东区的用户基本都访问不了",
    "支付成功率从 99% 掉到 60%",
    "约 15% 的请求失败",
    "退款到账延迟，客诉 40 多个",
    "部分商家后台登不上",
]

FINDING = [
    "binlog 同步延迟涨到 40s",
    "排查发现 order-db 有 200 多个慢查询",
    "连接数一直在涨，十分钟涨了 800",
    "缓存 key 20:00 一起过期了，TTL 都是 3600",
    "昨晚 22:10 发布了新的网关配置",
    "时间刚好对上，就是那次变更",
    "不是 DNS 的问题，解析都正常",
    "连接数到了 1800，连接池上限是 2000",
    "订单库主从延迟到了 90 秒",
    "刚看了下，redis 内存用了 95%",
    "k8s 有 3 个 node NotReady",
    "磁盘写满了，日志写不进去",
    "消息积压 120 万条",
    "下游 inventory-svc 响应变慢，平均 800ms",
    "这台机器的 load 到了 60",
    "错误日志里全是 Connection refused",
    "gateway 的 5xx 集中在 az-c",
    "所有报错都来自 v3.2 的 pod",
    "证书昨天 23:59 过期",
    "只有走 CDN 的请求有问题，直连正常",
    "GC 停顿最长 4s",
    "新版本的 sdk 默认开了重试",
    "app 首页加载要 10 秒以上",
]

ROOT_CAUSE = [
    "罪魁祸首是那个没加索引的慢查询",
    "问题出在证书续期脚本没有 reload nginx",
    "原因找到了：批处理任务和主库抢 IO",
    "是配置中心那次推送的锅",
    "问题是 3.2 版本引入的一个 bug",
    "是新加的索引把写入拖慢了",
]

DECISION = [
    "就这么定了，先切主",
    "那就先把 canary 停掉",
    "好，那就先降级推荐模块",
    "这次我牵头，@小王 查日志",
    "先不扩容，看十分钟再说",
    "老板 approve 了，切到备用线路",
    "先切一半流量，观察五分钟再全切",
    "ok 扩到 20 台，go ahead",
    "不回滚，先把开关关掉",
    "先回滚",
    "方案定了：降级推荐，保核心交易",
    "今天不发版了，全部冻结",
    "小李负责对外沟通，我盯数据库",
    "大家先别动生产环境",
    "那就这么办，先降级再排查",
    "同意回滚",
    "这次由张伟负责协调",
    "暂停所有发布",
]

RECOVERY = [
    "报错基本没了",
    "用户那边现在能正常登录了",
    "积压已经追平",
    "告警都消失了，监控全绿",
    "用户那边现在能正常下单了",
    "验证了几单，结果都没问题",
    "现在一切正常",
    "积压消化完了",
    "用户反馈可以正常支付了",
    "用户可以正常下单了",
]

FAMILIES = [
    *((Category.MITIGATION, text) for text in MITIGATION),
    *((Category.NEXT_STEP, text) for text in NEXT_STEP),
    *((Category.IMPACT, text) for text in IMPACT),
    *((Category.FINDING, text) for text in FINDING),
    *((Category.ROOT_CAUSE, text) for text in ROOT_CAUSE),
    *((Category.DECISION, text) for text in DECISION),
    *((Category.RECOVERY, text) for text in RECOVERY),
]


@pytest.mark.parametrize(("category", "text"), FAMILIES)
def test_chinese_and_mixed_facts_get_their_kind(category: Category, text: str) -> None:
    assert _reading(text) == (MessageKind.FACT, category)


QUESTIONS = [
    # each of these carries a cue the rules act on: the question is what keeps it out
    "是不是 DNS 导致的？",
    "会不会是昨晚那次发布导致的",
    "回滚完成了没",
    "要不要把这次导致超时的配置先回滚",
    "现在恢复了没有？",
    "谁知道是什么原因导致的",
    "需要补偿吗 还是等自动恢复",
]

GUESSES_AND_HEDGES = [
    "感觉是缓存过期造成的",
    "好像是证书过期导致的",
    "可能是那次配置变更导致的",
    "估计是缓存雪崩导致的",
    "如果回滚完成了还不行，就切流",
    "建议等迁移完成后再切主",
    "重启完成后会自动切回主库",
]


@pytest.mark.parametrize("text", [*QUESTIONS, *GUESSES_AND_HEDGES])
def test_questions_guesses_and_hedges_are_no_facts(text: str) -> None:
    assert _reading(text)[0] is not MessageKind.FACT


@pytest.mark.parametrize(
    ("text", "not_this"),
    [
        ("root cause 还没找到", Category.ROOT_CAUSE),
        ("还没恢复，错误率还是 5%", Category.RECOVERY),
        ("根因还不清楚", Category.ROOT_CAUSE),
        ("不是这次发布导致的", Category.ROOT_CAUSE),
    ],
)
def test_a_denied_cause_action_or_recovery_is_not_that_kind(text: str, not_this: Category) -> None:
    assert _reading(text)[1] is not not_this


ACKNOWLEDGEMENTS = [
    # chatter that mentions a cue word: looking, thanks, a meeting
    "好的我看一下恢复情况",
    "辛苦了，恢复得很快",
    "拉个会吧，根因得一起看",
    "收到，我先看一下是不是发布导致的",
]


@pytest.mark.parametrize("text", ACKNOWLEDGEMENTS)
def test_acknowledgements_and_coordination_are_no_facts(text: str) -> None:
    assert _reading(text)[0] is not MessageKind.FACT


def test_a_spike_is_not_read_as_the_fall_it_shares_a_character_with() -> None:
    """`飙到` (spiked to) and `降到` (fell to) share `到`; read in words they stay apart."""
    assert _reading("订单接口 p99 飙到 3s") == (MessageKind.FACT, Category.FINDING)


def test_a_chinese_sentence_ends_at_its_full_width_question_mark() -> None:
    """The question is dropped, the statement after it is read."""
    assert _reading("是 DNS 吗？刚确认了，gateway 配置已经 rollback 了") == (
        MessageKind.FACT,
        Category.MITIGATION,
    )


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("半小时已经 300 多个工单了", "reports"),
        ("下单量比平时少了 30%", "business"),
    ],
)
def test_a_chinese_impact_is_seen_through_reports_business_numbers_or_the_service(
    text: str, aspect: str
) -> None:
    """Two impacts are one picture only when seen in the same place (`impact_aspect`)."""
    assert impact_aspect(segmented(text)) == aspect
