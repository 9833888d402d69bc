"""The Chinese demo chat: `timeline-pipeline demo --chat zh` (docs/i18n.md).

A late-evening incident at an online shop, written as a Chinese SRE team writes in its incident
group: a coupon-service release adds a local cache with no size limit, the JVM heap fills,
Full GC stalls every coupon lookup, and because every order looks up the user's coupons
synchronously, ordering fails for everyone. A downgrade switch and a rollback bring it back, three
order-service pods keep stale connections until they are drained and restarted, and a batch of
coupons stays locked by failed orders until a compensation script frees them.

The same kinds of mess as the English chat: an alert card burst, threads and quote replies, the
chatter real groups carry (收到 / 好的我看一下 / 在看了 / +1 / 辛苦了 / [OK] / emoji), a
guess typed as a question, proposals that are not yet decisions, a screenshot, a file, an edit
and a recall. English appears only where Chinese teams use it: service names, metrics, commands.

The expected timeline was written from the incident commander's point of view as the story was
written, against script labels, before any synthesizer ran on it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from timeline_pipeline.demo_data import CHATS, DemoChat
from tools.demo_chat_script import (
    DEPLOY_BOT,
    INCIDENT_BOT,
    ChatSpec,
    Expected,
    Negative,
    Script,
    code,
    link,
)

__all__ = ["CHINESE", "PEOPLE", "SEED", "START"]

SEED: Final = 20261203
START: Final = datetime(2026, 12, 3, 15, 30, 0, tzinfo=UTC)
"""23:30 in UTC+8: the chat runs past local midnight."""

PEOPLE: Final = {
    "wanglei": "王磊",  # SRE on call, first responder, hands on the controls
    "chenchen": "陈晨",  # engineering manager, incident commander
    "liuyang": "刘洋",  # order-service engineer
    "zhaomin": "赵敏",  # coupon-service engineer, shipped the release
    "sunhao": "孙浩",  # DBA and middleware (MySQL, Redis)
    "linfeng": "林峰",  # platform / Kubernetes and traffic
    "zhouting": "周婷",  # customer service lead
    "heyu": "何宇",  # product manager, announcements and management updates
}

_GRAFANA: Final = "https://grafana.internal.youxuan.cn/d"
_RUNBOOK: Final = "https://wiki.internal.youxuan.cn/sre/runbook"


def _story(s: Script) -> None:
    _detection(s)
    _everyone_joins(s)
    _investigation(s)
    _mitigation(s)
    _stuck_pods(s)
    _recovery(s)
    _cleanup(s)
    _wrap_up(s)


def _detection(s: Script) -> None:
    s.pace(6, 22, typing=0.15)
    s.card(
        "[告警触发] order-service 下单接口 p99 耗时 3.2s > 1s 持续 5m",
        ["级别：P2 · 环境：prod · 机房：上海二区", "接口：POST /api/order/submit"],
        [("处理手册：下单延迟", f"{_RUNBOOK}/order-latency"), ("监控大盘", f"{_GRAFANA}/order")],
        label="ALERT_LATENCY",
        gap=0.4,
    )
    s.say("wanglei", "收到")
    s.say("wanglei", "我看一下")
    s.say(
        "wanglei",
        "下单接口 p99 从平时 200ms 左右涨到 3 秒多了，大概十分钟前开始往上爬，过了 1s 阈值才报出来",
        label="IMPACT_LATENCY",
    )
    s.card(
        "[告警触发] order-service 下单接口错误率 8.5% > 2% 持续 3m",
        ["级别：P1 · 环境：prod · 机房：上海二区", "错误集中在：POST /api/order/submit"],
        [("处理手册：下单失败", f"{_RUNBOOK}/order-errors"), ("监控大盘", f"{_GRAFANA}/order")],
        label="ALERT_ERRORS",
    )
    s.say("wanglei", "错误率也上来了")
    s.say("wanglei", "先按 P1 处理，拉人")
    s.bot(
        INCIDENT_BOT,
        "🚨 事故 INC-3817 已创建\n等级：P1\n创建人：王磊\n摘要：下单接口超时、失败率升高\n"
        "事故群：本群",
        label="DECLARED",
        gap=4,
    )
    s.say(
        "wanglei",
        "@chenchen @liuyang 下单接口大面积超时，失败率 8% 左右，全站用户都有，麻烦进来看下",
        label="PAGE",
    )
    s.say("liuyang", "来了")
    s.image("wanglei", label="SCREENSHOT")
    s.say("wanglei", "↑ 最近 30 分钟下单耗时和错误率")
    s.say("liuyang", "我看下 order-service 日志")
    s.say("chenchen", "在路上，电脑马上打开，两分钟")
    s.say(
        "liuyang",
        "日志里全是调 coupon-service 的超时，Dubbo 报 TimeoutException，超时时间 3000ms",
        label="FINDING_TIMEOUTS",
    )
    s.say("liuyang", "还有一些线程池满的报错")
    s.say(
        "zhouting",
        "大家好，客服这边反馈很多用户下单一直转圈，最后提示「系统繁忙，请稍后再试」",
        label="IMPACT_SUPPORT",
    )
    s.say("wanglei", "收到，已经在处理了")
    s.say(
        "zhouting",
        "十分钟进线 40 多个，平时这个点一小时也就三五个",
        label="IMPACT_SUPPORT_COUNT",
    )


def _everyone_joins(s: Script) -> None:
    """The burst: alerts escalate, everyone piles in at once."""
    s.at("15:35:20")
    s.pace(1.0, 3.5, typing=0.0)
    s.card(
        "[告警触发] order-service 下单接口错误率 15.3% > 10% 持续 2m",
        ["级别：P1 · 环境：prod · 机房：上海二区", "由 8.5% 升级 · 接口：POST /api/order/submit"],
        [("处理手册：下单失败", f"{_RUNBOOK}/order-errors")],
        label="ALERT_ERRORS_ESCALATED",
    )
    s.card(
        "[告警触发] coupon-service Full GC 12 次/分钟 > 3 次/分钟",
        ["级别：P2 · 环境：prod · 老年代使用率 98%"],
        [("JVM 大盘", f"{_GRAFANA}/coupon-jvm")],
        label="ALERT_GC",
    )
    s.say("zhaomin", "来了，看到 coupon-service 的告警了")
    s.say("sunhao", "在")
    s.say("heyu", "来了。用户侧影响大吗？业务大盘上下单量掉得厉害")
    s.say("wanglei", "很大")
    s.say("sunhao", "数据库这边要看啥")
    s.say("wanglei", "帮忙看下订单库和 Redis")
    s.say("sunhao", "好的我看一下")
    s.say(
        "zhaomin",
        "coupon-service 这边 Full GC 很频繁，老年代基本满了",
        label="FINDING_GC",
    )
    s.say("liuyang", "下单链路里查优惠券的请求基本都卡住了", label="FINDING_CHAIN")
    s.say("chenchen", "我到了，我来指挥", label="DECISION_IC")
    s.say(
        "chenchen",
        "@wanglei 负责现场操作，@heyu 负责对外公告和客服口径",
        label="DECISION_ROLES",
    )
    s.say("heyu", "收到")
    s.say("wanglei", "收到")
    s.say("zhouting", "进线 80 多了")
    s.say(
        "zhouting",
        "还有用户说优惠券被扣了，订单却没下成功 😰",
        label="IMPACT_COUPON",
    )
    s.say("heyu", "下单量比上周同期掉了 40% 左右", label="IMPACT_ORDERS")
    s.say("zhaomin", "只有用券的单有问题吗")
    s.say(
        "liuyang",
        "不是，下单都要先调 coupon-service 查可用券，没用券的单也卡",
        label="FINDING_ALL_ORDERS",
    )
    s.say("wanglei", "+1")
    s.say(
        "sunhao",
        "订单库主库 CPU 25%，没有慢查询，主从延迟 0，这边看着正常",
        label="FINDING_DB_OK",
    )
    s.say("chenchen", "好")
    s.say("zhaomin", "嗯……")
    s.say("zhaomin", "我们今晚发了一版 coupon-service")
    s.say("chenchen", "什么时候发的")
    s.say(
        "zhaomin",
        "告警前 15 分钟左右全量完成的，v2.14.0",
        label="FINDING_DEPLOY",
    )
    s.say("linfeng", "是加用户券缓存的那个版本？")
    s.say(
        "zhaomin",
        "对，新加了一个本地缓存，缓存每个用户的可用券列表",
        label="FINDING_DEPLOY_WHAT",
    )
    s.say("chenchen", "这个很可疑，@zhaomin 开个话题把变更内容贴一下")
    s.say("zhaomin", "好")
    s.say("liuyang", "+1")
    s.say("wanglei", "p99 到 6 秒了")
    s.say("heyu", "要不要先挂个公告")
    s.say("chenchen", "挂吧，写正在排查就行，先别提原因")
    s.say("heyu", "好的")


def _investigation(s: Script) -> None:
    s.at("15:38:00")
    s.pace(4, 18, typing=0.12)
    s.post(
        "chenchen",
        "INC-3817 分工",
        [
            "指挥：@chenchen",
            "现场操作：@wanglei",
            "对外公告、管理层同步：@heyu",
            "客服：@zhouting",
            "分话题排查，别刷主群：coupon-service 变更（@zhaomin）、order-service 调用链"
            "（@liuyang）、数据库和 Redis（@sunhao）、容器和流量（@linfeng）",
            "决定统一发在主群。",
        ],
        locale="zh_cn",
        label="ROLES_POST",
    )
    s.say("liuyang", "👍")
    s.say("sunhao", "[OK]")
    change = s.say("zhaomin", "话题：coupon-service v2.14.0 变更内容", label="T_CHANGE")
    s.post(
        "zhaomin",
        "coupon-service v2.14.0（发布单 REL-20931）",
        [
            "新增用户可用券的本地缓存，减少查券库的次数；先灰度 2 台跑了一天，没问题后全量 24 台",
            [
                code(
                    "coupon:\n"
                    "+  user-coupon-cache:\n"
                    "+    enabled: true\n"
                    "+    type: caffeine\n"
                    "+    expire-after-write: 30m\n"
                    "+    # 没有 maximum-size\n"
                    "jvm:\n"
                    "   -Xmx4g",
                    "YAML",
                )
            ],
            [
                {"tag": "text", "text": "MR："},
                link("coupon-service!1842", "https://git.internal.youxuan.cn/coupon/merge/1842"),
            ],
        ],
        reply=change,
        thread=True,
        label="FINDING_DIFF",
    )
    s.say("liuyang", "没设 maximum-size？那缓存不是一直涨", reply=change)
    s.say(
        "zhaomin",
        "对，没设上限，按用户维度缓存，只靠写入 30 分钟后过期",
        reply=change,
        label="FINDING_NO_LIMIT",
    )
    s.say(
        "sunhao",
        "晚高峰半小时能进来几百万活跃用户，30 分钟的过期根本兜不住",
        reply=change,
    )
    s.say("chenchen", "灰度的时候没看内存？", reply=change)
    s.say(
        "zhaomin",
        "看了，灰度 2 台只接了 1% 流量，又是白天低峰，内存涨得很慢，没到告警线",
        reply=change,
        label="FINDING_CANARY",
    )

    gc = s.say("zhaomin", "话题：coupon-service JVM", label="T_GC")
    s.say(
        "zhaomin",
        "24 个 pod 老年代全部 95% 以上，Full GC 每分钟 10 次以上，每次停顿 1 到 2 秒",
        reply=gc,
        thread=True,
        label="FINDING_GC_DETAIL",
    )
    s.say("zhaomin", "在 dump 一个 pod 的堆，稍等", reply=gc)

    db = s.say("sunhao", "话题：数据库 / Redis", label="T_DB")
    s.say(
        "sunhao",
        "订单库、券库都正常，QPS 反而比平时低一点（上游卡住了）；Redis 集群命中率和延迟都正常",
        reply=db,
        thread=True,
        label="FINDING_DB_DETAIL",
    )

    chain = s.say("liuyang", "话题：order-service 调用链", label="T_CHAIN")
    s.say(
        "liuyang",
        "下单接口的错误里 85% 是 coupon-service 超时（3000ms），剩下的是 Dubbo 线程池满了被拒，"
        "RejectedExecutionException",
        reply=chain,
        thread=True,
        label="FINDING_ERROR_MIX",
    )
    s.say(
        "liuyang",
        "查券超时 3 秒还重试 2 次，一个下单请求最长能卡 9 秒，Dubbo 线程池 200/200 全占满了",
        reply=chain,
        label="FINDING_RETRY",
    )
    s.say("wanglei", "所以是 coupon-service 把 order-service 一起拖死了", reply=chain)
    s.say("liuyang", "对", reply=chain, label="AGREE_DRAGGED")

    s.say("zhouting", "客服这边先统一回复：请用户不要反复点下单，后面会统一处理")
    s.say("heyu", "公告挂上了")
    s.post(
        "heyu",
        "公告：正在排查",
        [
            "已在 App 首页公告和状态页发布：",
            "「部分用户下单时出现卡顿或失败，我们正在紧急处理，请稍后再试，给您带来不便深表歉意。"
            "30 分钟内更新进展。」",
            [link("status.youxuan.cn", "https://status.youxuan.cn/incidents/7d3k2q")],
        ],
        label="STATUS_INVESTIGATING",
    )
    s.say("zhouting", "@heyu 收到，链接我放进客服话术里")
    s.say(
        "zhaomin",
        "堆 dump 出来了，70% 的内存是 user-coupon-cache 的对象，1200 多万条",
        reply=gc,
        label="FINDING_HEAP",
    )
    s.file("zhaomin", "coupon-7f9c_heap_histogram.csv", reply=gc, label="HEAP_FILE")
    s.say("sunhao", "果然", reply=gc)
    s.say(
        "linfeng",
        "coupon-service 有 9 个 pod 因为健康检查超时被 k8s 重启过，重启完几分钟又满",
        label="FINDING_RESTARTS",
    )
    s.say("chenchen", "现在能确定就是 v2.14.0 的缓存吗")
    s.say("zhaomin", "八九不离十")
    s.say("heyu", "会不会是今晚运营活动流量太大导致的？", label="GUESS_TRAFFIC")
    s.say(
        "wanglei",
        "流量只比昨天同期高 10% 左右，不像是量的问题",
        label="FINDING_TRAFFIC_NORMAL",
    )
    s.say("linfeng", "网关这边也正常，没看到异常流量")
    s.say("wanglei", "order-service 最近两天没发布，配置中心今天也没改动")
    s.say("chenchen", "好，那基本就是 coupon-service 这次发布")
    s.say("wanglei", "错误率 22% 了，到现在最高的一次")
    s.say("zhouting", "工单 120 多了")
    s.say("zhaomin", "vpn 掉了，马上回来")
    s.say("zhaomin", "回来了")


def _mitigation(s: Script) -> None:
    s.at("15:50:30")
    s.pace(6, 20, typing=0.12)
    s.say("chenchen", "方案？@zhaomin @liuyang")
    s.say(
        "zhaomin",
        "两个办法：一是回滚到 v2.13.2；二是配置中心把缓存开关关掉，不用发版。回滚 24 个 pod 分批，"
        "要 10 分钟左右",
    )
    s.say(
        "liuyang",
        "我这边可以先把 order-service 查券降级，查不到券就按不用券下单，开关在 Apollo 上，秒级生效",
        label="PROPOSAL_DEGRADE",
    )
    s.say("heyu", "降级的话用户就用不了券了吧，会有投诉")
    s.say("chenchen", "先保下单，券的问题后面补偿")
    s.say("sunhao", "关缓存以后查券全打到券库，券库扛得住吗")
    s.say(
        "sunhao",
        "看了下，发布前一直是这么跑的，券库 CPU 平时 35%，没问题",
        label="FINDING_COUPON_DB_OK",
    )
    s.say(
        "chenchen",
        "决定：1. @liuyang 马上把 order-service 查券降级，先保下单；"
        "2. @zhaomin 回滚 coupon-service 到 v2.13.2，缓存开关一起关掉；"
        "3. 事故结束前所有服务发布冻结",
        label="DECISION_ROLLBACK",
    )
    s.say("liuyang", "收到，开降级")
    s.say("zhaomin", "收到，开始回滚")
    s.say("wanglei", "+1")
    s.say(
        "liuyang",
        "降级开关已打开，order-service 不再等查券结果，查券失败直接按原价下单",
        label="MITIGATION_DEGRADE",
    )
    s.at("15:55:00")
    s.bot(
        DEPLOY_BOT,
        "⏪ coupon-service 回滚开始：v2.14.0 → v2.13.2\n集群：prod（24 个 pod）· 操作人：zhaomin",
        label="BOT_ROLLBACK_STARTED",
    )
    s.pace(8, 25, typing=0.1)
    s.say("wanglei", "下单 p99 在往下掉，1.5s")
    s.say("wanglei", "错误率 6%")
    s.say("liuyang", "线程池在恢复")
    question = s.say("zhouting", "客服这边现在怎么跟用户说")
    s.say(
        "chenchen",
        "原因基本找到了，正在修复，暂时不给具体时间",
        reply=question,
    )
    s.say("zhouting", "👍")
    s.say("zhaomin", "12/24")
    s.say(
        "sunhao",
        "券库 QPS 上来了，CPU 41%，稳的",
        reply="T_DB",
    )
    s.say("heyu", "可以跟用户说恢复了吗")
    s.say("chenchen", "还没完全恢复，先别说", label="NOT_RECOVERED")
    s.say("zhaomin", "20/24")
    s.at("16:01:30")
    s.bot(
        DEPLOY_BOT,
        "✅ coupon-service 回滚完成\nprod 已全部为 v2.13.2 · 24/24 个 pod 健康",
        label="BOT_ROLLBACK_DONE",
    )
    s.say(
        "zhaomin",
        "回滚完成，24 个 pod 都是 v2.13.2 了，缓存开关也关了。Full GC 没了，老年代 30%",
        label="MITIGATION_ROLLBACK",
    )
    s.card(
        "[告警恢复] coupon-service Full GC 0 次/分钟 < 3 次/分钟",
        [f"持续 {s.minutes_since('ALERT_GC')} 分钟后恢复 · 环境：prod"],
    )
    s.say("chenchen", "辛苦了")
    s.say(
        "liuyang",
        "降级开关关回去了，查券恢复正常",
        label="MITIGATION_DEGRADE_OFF",
    )


def _stuck_pods(s: Script) -> None:
    s.at("16:03:30")
    s.pace(8, 28, typing=0.1)
    s.say(
        "wanglei",
        "p99 回到 400ms 了，但错误率还剩 3% 左右下不去（最高 22%）",
        label="RECOVERY_PARTIAL",
    )
    s.say("chenchen", "剩下这 3% 是什么")
    s.say("liuyang", "在看了")
    s.say(
        "liuyang",
        "剩下的错误全在 3 个 order-service pod 上，这 3 个 pod 的 Dubbo 线程池还是 200/200，"
        "其他 pod 正常",
        reply="T_CHAIN",
        label="FINDING_STUCK_PODS",
    )
    s.say(
        "liuyang",
        "jstack 看了，线程都卡在 coupon-service 的长连接上，连接还连着被 k8s 重启掉的老 pod IP",
        reply="T_CHAIN",
        label="FINDING_STALE_CONN",
    )
    s.say("linfeng", "那几个老 IP 早就没了，连接一直等到读超时", reply="T_CHAIN")
    s.say("sunhao", "重启这 3 个 pod 最快吧")
    s.say(
        "chenchen",
        "决定：这 3 个 order-service pod 先摘流量再重启，@linfeng 操作，其他 pod 不动",
        label="DECISION_RESTART",
    )
    s.say("linfeng", "收到")
    s.say(
        "linfeng",
        "3 个 pod 已摘流量，开始重启",
        label="MITIGATION_DRAIN",
    )
    s.say("zhouting", "有个用户说券被扣了两次，我把他原话贴一下")
    s.say("zhouting", "（用户原话，带手机号和订单截图）", recalled=40)
    s.say(
        "zhouting",
        "刚撤回了，里面有用户手机号。工单号 #72915，需要的找我",
        label="RECALL_EXPLAINED",
    )
    s.say("liuyang", "好，重启完我看下这个")
    s.say(
        "linfeng",
        "重启完成，3 个 pod 已挂回流量，线程池 20/200，正常了",
        label="MITIGATION_RESTART",
    )


def _recovery(s: Script) -> None:
    s.at("16:10:30")
    s.pace(10, 35, typing=0.1)
    s.card(
        "[告警恢复] order-service 下单接口错误率 0.3% < 2%",
        [f"持续 {s.minutes_since('ALERT_ERRORS')} 分钟后恢复 · 环境：prod"],
        [("监控大盘", f"{_GRAFANA}/order")],
    )
    s.card(
        "[告警恢复] order-service 下单接口 p99 耗时 0.22s < 1s",
        [f"持续 {s.minutes_since('ALERT_LATENCY')} 分钟后恢复 · 环境：prod"],
    )
    s.say(
        "wanglei",
        "错误率 0.3%，p99 220ms，回到正常水平了 🎉",
        label="RECOVERY_METRICS",
    )
    s.say("sunhao", "🎉")
    s.say("zhaomin", "呼")
    s.say(
        "zhouting",
        "最近 10 分钟没有新的下单问题进线了",
        label="RECOVERY_SUPPORT",
    )
    s.say("heyu", "下单量回到上周同期水平了", label="RECOVERY_ORDERS")
    s.say(
        "liuyang",
        "用测试账号下了几单：用券、不用券、拼团、预售都正常，都在 1 秒内完成",
        label="RECOVERY_TEST_ORDERS",
    )
    s.say("chenchen", "好，再观察 15 分钟再宣布恢复")
    s.say("heyu", "公告改成「已修复，持续观察中」了")
    s.say(
        "zhaomin",
        "发布平台上 coupon-service 锁在 v2.13.2 了，缓存开关的配置也锁了",
        label="CONFIG_LOCKED",
    )


def _cleanup(s: Script) -> None:
    s.at("16:16:00")
    s.pace(8, 30, typing=0.12)
    s.say("zhouting", "那些券被扣了但没下成单的用户怎么办，我这边 30 多个工单")
    s.say(
        "liuyang",
        "下单时先锁券，订单超时失败后释放券那一步也调 coupon-service，一起超时了，"
        "所以券一直是锁定中",
        label="FINDING_COUPON_LOCKED",
    )
    s.say(
        "sunhao",
        "查了券库：事故期间状态是锁定中、又没有对应成功订单的券一共 2317 张",
        label="IMPACT_LOCKED_COUPONS",
    )
    s.say("chenchen", "怎么处理")
    s.say("liuyang", "有现成的解锁补偿脚本，按订单状态判断，订单失败的就解锁")
    s.say("heyu", "降级那段时间下的单都没用上券，要不要补")
    s.say(
        "heyu",
        "数据看了，降级期间下单的有 4800 多单，其中 1300 多单本来有可用券",
        label="IMPACT_DEGRADED_ORDERS",
    )
    s.say(
        "chenchen",
        "决定：锁定中的券跑脚本解锁，先 dry-run；降级期间下单、本来能用券的用户，补发一张等额券。"
        "@heyu 拟一下短信文案",
        label="DECISION_COMPENSATE",
    )
    s.say("liuyang", "先跑 dry-run")
    s.say(
        "liuyang",
        "dry-run 结果：2317 张里 2296 张要解锁，另外 21 张对应的订单后来重试成功了，不动",
        label="COMPENSATE_DRY_RUN",
    )
    s.say("chenchen", "没问题，跑吧")
    s.say("liuyang", "正式跑了")
    s.say(
        "wanglei",
        "粗略影响：下单失败约 1.9 万次，持续约 40 分钟，错误率最高 22%，所有用户都受影响，"
        "不只是用券的。复盘前我再核一遍",
        label="IMPACT_ESTIMATE",
        edited=80,
    )
    s.say("heyu", "好，我用这个数先跟管理层同步")
    s.say(
        "liuyang",
        "跑完了，2296 张券已解锁，用户可以重新使用",
        label="MITIGATION_UNLOCK",
    )
    s.say("chenchen", "👍")
    s.say(
        "liuyang",
        "@zhouting 工单 #72915 那个用户的券在这批解锁里，只扣了一次，订单失败那张已经退回去了",
        reply="RECALL_EXPLAINED",
    )
    s.say("zhouting", "太好了，谢谢！这批工单我们统一用「券已退回」的模板回复")
    s.say("zhouting", "工单都打上 INC-3817 的标签了，复盘的时候好统计")
    s.say("chenchen", "辛苦大家，基本稳了")


def _wrap_up(s: Script) -> None:
    s.at("16:28:00")
    s.pace(10, 35, typing=0.1)
    s.post(
        "zhaomin",
        "根因（初稿）",
        [
            "1. coupon-service v2.14.0 新增用户可用券的本地缓存（Caffeine），没设 maximum-size，"
            "只有写入 30 分钟过期",
            "2. 晚高峰活跃用户多，缓存半小时涨到 1200 多万条，4G 堆的老年代被占满，Full GC "
            "每分钟十几次，每次停顿 1 到 2 秒",
            "3. order-service 下单时同步查券，超时 3 秒再重试 2 次，Dubbo 线程池被拖满，"
            "所有下单都失败或超时，不管用不用券",
            "4. 订单失败后释放券的调用也超时，2317 张券卡在锁定中",
            "促成因素：灰度只有 2 台、1% 流量，又在白天低峰，内存涨得慢没暴露；发布检查里没有"
            "堆内存对比；order-service 查券没有默认降级",
        ],
        locale="zh_cn",
        label="ROOT_CAUSE",
    )
    s.say("chenchen", "+1，跟我们看到的都对得上")
    s.say("sunhao", "+1，再补一句：coupon-service 只有 Full GC 次数的告警，没有老年代使用率的")
    s.say("linfeng", "[赞]")
    s.post(
        "chenchen",
        "INC-3817 后续待办",
        [
            "1. @zhaomin 缓存加 maximum-size 和内存上限，压测通过后再发",
            "2. @liuyang order-service 查券超时改成 500ms、不重试，默认降级",
            "3. @linfeng 灰度策略按流量比例分阶段放量，至少经过一个晚高峰",
            "4. @wanglei 加 JVM 老年代使用率告警",
            "5. @sunhao 锁定中的券超时自动释放",
            "6. @heyu 给受影响用户补券，出短信文案和客服口径",
            "7. 我：复盘文档",
        ],
        locale="zh_cn",
        label="NEXT_STEPS",
    )
    s.say(
        "sunhao",
        "5 我今晚就能先加个定时任务兜底，正式方案跟着 @liuyang 的改动走",
        reply="NEXT_STEPS",
    )
    s.say("chenchen", "可以")
    s.say(
        "zhaomin",
        "缓存的修复这周五前提 MR，压测报告一起附上",
        reply="NEXT_STEPS",
        label="NEXT_CACHE_FIX",
    )
    s.say(
        "liuyang",
        "超时和降级的改动明天提，工单 ORD-4521",
        reply="NEXT_STEPS",
        label="NEXT_TIMEOUT_FIX",
    )
    s.say("wanglei", "告警明天配", reply="NEXT_STEPS")
    s.say(
        "chenchen",
        "@zhaomin 缓存修复上线前 coupon-service 保持锁定，要发版先找我审批",
        label="DECISION_LOCK",
    )
    s.say("zhaomin", "好的")
    s.say(
        "heyu",
        "跟管理层同步的口径：下单受影响约 40 分钟，失败约 1.9 万次，锁住的券已全部解锁，"
        "补券方案在做，下周复盘。可以吗",
    )
    s.say("chenchen", "可以")
    s.say("chenchen", "复盘会定下周二下午？")
    s.say("liuyang", "周二下午我请假了")
    s.say("zhaomin", "周三上午可以")
    s.say("wanglei", "周三可以")
    s.say("chenchen", "那就下周三上午十点，我发会议邀请", label="NEXT_POSTMORTEM")
    s.say("heyu", "👍")
    s.say("sunhao", "[OK]")
    s.post(
        "heyu",
        "公告：已恢复",
        [
            "「今晚部分用户下单失败的问题已修复，受影响的订单和优惠券已处理完毕。给您带来不便，"
            "我们深表歉意。」",
            [link("status.youxuan.cn", "https://status.youxuan.cn/incidents/7d3k2q")],
        ],
        label="STATUS_RESOLVED",
    )
    s.at("16:42:30")
    s.pace(5, 25, typing=0.08)
    s.say(
        "chenchen",
        "错误率稳定半小时了，也没有新的进线，INC-3817 宣布恢复。大家辛苦了 🙏",
        label="RECOVERY_RESOLVED",
    )
    s.bot(
        INCIDENT_BOT,
        f"✅ 事故 INC-3817 已恢复，操作人：陈晨\n持续时长：{s.duration_since('DECLARED')}\n"
        "复盘负责人：陈晨",
        gap=3,
    )
    s.say("zhaomin", "这次是我的锅，抱歉大家")
    s.say("chenchen", "没事，复盘就是为了这个")
    s.say("wanglei", "辛苦了")
    s.say("linfeng", "🙏")
    s.say("sunhao", "我先下了，有问题随时电话")
    s.say("zhouting", "谢谢大家！！客服这边终于松口气了")
    s.say("heyu", "复盘文档的时间线我从事故平台导一下")
    s.say("liuyang", "撤了")


# --- the expected timeline -------------------------------------------------------------------

_EXPECTED: Final[tuple[Expected, ...]] = (
    (
        "impact",
        ("IMPACT_LATENCY", "PAGE"),
        "下单接口 p99 从约 200ms 涨到 3 秒以上，失败率约 8%，全站用户受影响",
    ),
    (
        "finding",
        ("FINDING_TIMEOUTS", "FINDING_CHAIN", "FINDING_ALL_ORDERS"),
        "order-service 调 coupon-service 查券大量超时（Dubbo 3000ms），所有下单都要查券，"
        "不用券的单也卡住",
    ),
    (
        "impact",
        ("IMPACT_SUPPORT", "IMPACT_SUPPORT_COUNT"),
        "用户下单转圈后提示「系统繁忙」；客服十分钟进线 40 多个（平时一小时三五个）",
    ),
    (
        "finding",
        ("FINDING_GC", "FINDING_GC_DETAIL"),
        "coupon-service 24 个 pod 老年代 95% 以上，Full GC 每分钟 10 次以上，每次停顿 1 到 2 秒",
    ),
    (
        "decision",
        ("DECISION_IC", "DECISION_ROLES", "ROLES_POST"),
        "陈晨指挥，王磊现场操作，何宇负责对外公告；按变更、调用链、数据库、容器分话题排查",
    ),
    (
        "impact",
        ("IMPACT_COUPON",),
        "有用户反馈优惠券被扣但订单没下成功",
    ),
    ("impact", ("IMPACT_ORDERS",), "下单量比上周同期下降约 40%"),
    (
        "finding",
        ("FINDING_DB_OK", "FINDING_DB_DETAIL"),
        "订单库、券库和 Redis 正常：CPU 25%，无慢查询，主从无延迟",
    ),
    (
        "finding",
        ("FINDING_DEPLOY", "FINDING_DEPLOY_WHAT"),
        "告警前约 15 分钟 coupon-service v2.14.0 全量发布，新增用户可用券本地缓存",
    ),
    (
        "finding",
        ("FINDING_DIFF", "FINDING_NO_LIMIT"),
        "v2.14.0 的用户券缓存（Caffeine）没设 maximum-size，只靠写入 30 分钟过期",
    ),
    (
        "finding",
        ("FINDING_CANARY",),
        "灰度只有 2 台、1% 流量且在白天低峰，内存上涨没有暴露",
    ),
    (
        "finding",
        ("FINDING_ERROR_MIX", "FINDING_RETRY"),
        "下单错误 85% 是查券超时，其余是 Dubbo 线程池满被拒；超时 3 秒重试 2 次，"
        "线程池 200/200 占满",
    ),
    (
        "finding",
        ("FINDING_HEAP", "FINDING_RESTARTS"),
        "堆 dump：70% 内存是 user-coupon-cache，1200 多万条；"
        "9 个 coupon-service pod 被健康检查重启后又打满",
    ),
    (
        "finding",
        ("FINDING_TRAFFIC_NORMAL",),
        "流量只比昨天同期高约 10%，不是流量问题",
    ),
    (
        "decision",
        ("DECISION_ROLLBACK", "FINDING_COUPON_DB_OK"),
        "order-service 查券降级保下单；coupon-service 回滚到 v2.13.2 并关闭缓存开关；发布冻结",
    ),
    (
        "mitigation",
        ("MITIGATION_DEGRADE",),
        "order-service 查券降级开关打开，查券失败按原价下单",
    ),
    (
        "mitigation",
        ("MITIGATION_ROLLBACK", "MITIGATION_DEGRADE_OFF"),
        "coupon-service 24 个 pod 回滚到 v2.13.2、缓存关闭，Full GC 消失；查券降级随后关闭",
    ),
    (
        "recovery",
        ("RECOVERY_PARTIAL",),
        "回滚后 p99 回到 400ms，但错误率仍有约 3%（峰值 22%）",
    ),
    (
        "finding",
        ("FINDING_STUCK_PODS", "FINDING_STALE_CONN"),
        "剩余错误集中在 3 个 order-service pod：线程池 200/200，"
        "卡在连向已销毁 coupon-service pod 的旧连接上",
    ),
    (
        "decision",
        ("DECISION_RESTART",),
        "这 3 个 order-service pod 摘流量后重启，其他 pod 不动",
    ),
    (
        "mitigation",
        ("MITIGATION_DRAIN", "MITIGATION_RESTART"),
        "3 个 order-service pod 摘流量并重启，线程池恢复正常",
    ),
    (
        "recovery",
        (
            "RECOVERY_METRICS",
            "RECOVERY_SUPPORT",
            "RECOVERY_ORDERS",
            "RECOVERY_TEST_ORDERS",
        ),
        "错误率 0.3%、p99 220ms 回到正常；测试下单正常，客服无新进线，下单量恢复",
    ),
    (
        "impact",
        ("IMPACT_LOCKED_COUPONS", "FINDING_COUPON_LOCKED"),
        "2317 张优惠券因订单失败后释放超时卡在锁定中",
    ),
    (
        "impact",
        ("IMPACT_DEGRADED_ORDERS",),
        "降级期间 4800 多单未能用券，其中 1300 多单本有可用券",
    ),
    (
        "decision",
        ("DECISION_COMPENSATE",),
        "锁定中的券跑脚本解锁（先 dry-run）；降级期间本可用券的用户补发等额券",
    ),
    (
        "mitigation",
        ("COMPENSATE_DRY_RUN", "MITIGATION_UNLOCK"),
        "补偿脚本解锁 2296 张券，21 张对应订单已重试成功，未动",
    ),
    (
        "impact",
        ("IMPACT_ESTIMATE",),
        "下单失败约 1.9 万次，持续约 40 分钟，错误率峰值 22%，所有用户受影响",
    ),
    (
        "root_cause",
        ("ROOT_CAUSE",),
        "v2.14.0 的用户券缓存没有容量上限，占满 coupon-service 堆导致频繁 Full GC；"
        "order-service 同步查券且超时重试，线程池被拖满，全部下单失败",
    ),
    (
        "decision",
        ("DECISION_LOCK", "CONFIG_LOCKED"),
        "缓存修复上线前 coupon-service 锁定在 v2.13.2，发版需指挥审批",
    ),
    (
        "next_step",
        ("NEXT_STEPS", "NEXT_CACHE_FIX", "NEXT_TIMEOUT_FIX"),
        "后续：缓存加容量上限并压测、查券超时 500ms 不重试并默认降级、灰度覆盖晚高峰、"
        "老年代告警、锁券自动释放、用户补券、复盘文档（均已指派负责人）",
    ),
    (
        "next_step",
        ("NEXT_POSTMORTEM",),
        "复盘会定在下周三上午十点",
    ),
    (
        "recovery",
        ("RECOVERY_RESOLVED", "STATUS_RESOLVED"),
        "错误率稳定半小时，INC-3817 宣布恢复，公告更新为已恢复",
    ),
)


_NEGATIVE: Final[tuple[Negative, ...]] = (
    (
        "decision",
        "DECISION_IC",
        "A greeting and an acknowledgement: the commander arrives and takes the role, and gives "
        "nobody anything to do. The decision (who commands, who does what) is the roster after it.",
    ),
    (
        "root_cause",
        "GUESS_TRAFFIC",
        "A guess asked as a question (会不会是……导致的？), refuted by the next message: "
        "traffic was only 10% above the day before. Nothing was established.",
    ),
    (
        "decision",
        "AGREE_DRAGGED",
        "A one-character agreement (对) with the reply before it: it has no subject and no "
        "action of its own. Nothing was decided.",
    ),
    (
        "decision",
        "PROPOSAL_DEGRADE",
        "An offer (我这边可以先……), one option among several: the commander decides a few "
        "messages later, and that message is the decision.",
    ),
    (
        "recovery",
        "NOT_RECOVERED",
        "A negation (还没完全恢复): the commander says the incident is not over yet, so it "
        "records no recovery.",
    ),
)
"""Messages that must not be drafted as an entry of the kind on their own (category, label,
why)."""


CHINESE: Final = ChatSpec(
    files=CHATS[DemoChat.ZH],
    seed=SEED,
    start=START,
    people=PEOPLE,
    story=_story,
    expected=_EXPECTED,
    negatives=_NEGATIVE,
)
