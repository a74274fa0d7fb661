"""The web view in headless Chromium: after its script ran, the page shows the topic and the
group this test created (with the consumer's lag), and a screenshot is taken.

WIREBROKER_SCREENSHOT_DIR=docs/img keeps the screenshot as docs/img/web-view.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _broker import BrokerProcess
from admin_listener import admin_url, group_member
from chromium import dump_dom, keep_screenshot, require_chromium, screenshot
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic


@pytest.fixture(autouse=True)
def _chromium() -> None:
    """Skip (or, in CI, fail) before the broker starts when Chromium is missing."""
    require_chromium()


def test_web_view_shows_topic_and_group_in_chromium(
    admin_broker: BrokerProcess, tmp_path: Path
) -> None:
    url = admin_url(admin_broker.stdout_lines)
    bootstrap = admin_broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("orders", 3, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(300):
        producer.send("orders", b"order-%05d" % i, partition=i % 3)
    producer.flush()
    producer.close()
    commit = dict.fromkeys(range(3), 60)
    with group_member(bootstrap, "orders", "billing", "billing-1", expect=300, commit=commit):
        dom = dump_dom(url)
        assert re.search(r'id="status">live, updated ', dom), dom[:2000]  # the script ran
        partitions = dom[dom.index('id="partitions"') : dom.index('id="internal"')]
        assert partitions.count("<td>orders</td>") == 3
        assert "under-replicated" not in partitions
        groups = dom[dom.index('id="groups"') : dom.index('id="lag"')]
        assert "<td>billing</td><td>Stable</td>" in groups
        assert "billing-1" in groups
        lag = dom[dom.index('id="lag"') :]
        assert lag.count('<td class="n">40</td>') == 3  # 100 per partition - 60 committed
        assert "__consumer_offsets (50 partitions)" in dom

        png = screenshot(url, tmp_path / "web-view.png", height=720)
        assert png.stat().st_size > 10_000  # a rendered page, not a blank one
        keep_screenshot(png, "web-view.png")


def test_web_view_shows_failed_authentications_in_chromium() -> None:
    """A SASL_PLAINTEXT OAUTHBEARER broker: logins refused (a token without `sub`; librdkafka
    retries), one accepted; the page's script renders both counts for the listener and
    mechanism, the failures flagged."""
    from confluent_kafka import KafkaException, Producer

    from wirebroker.testing import BrokerHandle

    with BrokerHandle(security="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER") as handle:
        assert handle.admin_url is not None
        bad = handle.client_config | {
            "sasl.oauthbearer.config": "principal=alice principalClaimName=azp"
        }
        with pytest.raises(KafkaException):
            Producer(bad).list_topics(timeout=2)  # refused: it cannot succeed
        Producer(handle.client_config).list_topics(timeout=10)
        dom = dump_dom(handle.admin_url + "/")
    assert re.search(r'id="status">live, updated ', dom), dom[:2000]  # the script ran
    table = dom[dom.index('id="authentications"') :]
    row = re.search(r"<td>SASL_PLAINTEXT</td><td>OAUTHBEARER</td>(.*?)</tr>", table)
    assert row is not None, table[:1000]
    ok, failed = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert int(ok) >= 1
    bad_count = re.fullmatch(r'<span class="bad">(\d+)</span>', failed)  # flagged in red
    assert bad_count is not None and int(bad_count.group(1)) >= 1  # librdkafka retries
