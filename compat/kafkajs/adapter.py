"""kafkajs adapter: drives `node driver.js` (kafkajs 2.2.4) over JSON lines.

One Node process per adapter, driven as `compat.scenarios.jsonlines` says (requests with ids,
answers matched by a reader thread, bytes in base64). The driver's own docstring says how
each operation maps onto kafkajs.

kafkajs quirks the adapter absorbs: fetchTopicOffsetsByTimestamp answers Kafka's "no such
offset" (-1) with the high watermark (mapped back to None here); deleteTopicRecords needs the
topic's metadata loaded first.

Not expressible in kafkajs: a null header value, the timestamp type of a consumed record,
ApiVersions switched off, zstd (no codec installs without a native build), reading a
partition without a consumer group (the driver uses a throwaway group and seek()).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from compat.scenarios.jsonlines import Driver, JsonLinesAdapter

HERE = Path(__file__).resolve().parent


class KafkajsAdapter(JsonLinesAdapter):
    name = "kafkajs"
    version = "2.2.4"
    capabilities = frozenset(
        {"timestamp", "headers", "null_value", "null_key", "binary", "idempotent"}
    )
    codecs = ("gzip", "snappy", "lz4")
    codec_notes = {
        "zstd": "no built-in zstd, and the @kafkajs/zstd codec needs a native build (cppzst)"
    }

    def start_driver(self) -> Driver:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed")
        if not (HERE / "node_modules" / "kafkajs").is_dir():
            raise RuntimeError(f"kafkajs is not installed: run `npm ci` in {HERE}")
        return Driver(
            [node, str(HERE / "driver.js")], label="node driver", cwd=HERE, close_timeout=20
        )

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        """The driver answers kafkajs's offset and the high watermark: an offset at the
        high watermark is kafkajs's "none"."""
        got = self._call("offsetForTime", topic=topic, partition=partition, timestamp=timestamp)
        offset, high = int(got["offset"]), int(got["high"])
        return None if offset < 0 or offset >= high else offset


ADAPTER = KafkajsAdapter
