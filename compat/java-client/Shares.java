// KafkaShareConsumer (KIP-932 share groups) as an application uses it, with explicit
// acknowledgement (share.acknowledgement.mode=explicit).
//
// shareConsume: one share consumer of `group` subscribed to `topic`; poll() until `count`
// deliveries were handled or the time is up. Each delivered record is acknowledged with the
// type `acks` names for "offset:deliveryCount" (ACCEPT, RELEASE or REJECT; default ACCEPT),
// then commitSync() after each poll. `holdMs` > 0: after the first poll that returned records,
// wait that long before acknowledging them (longer than the acquisition lock: the broker gives
// them to others meanwhile and the late acknowledgement fails). `settleMs` > 0: once `count`
// deliveries came, poll that much longer (anything more is handled and listed too: a test that
// expects exactly `count` sees an extra one). `earliest`: the group's
// share.auto.offset.reset is set to earliest first (Admin, GROUP config resource). Result:
// {"deliveries": [{offset, value, deliveryCount, ack}], "errors": [commit errors by name]}.
// Closing the consumer releases what it still holds.
//
// shareHold: the same consumer, but it keeps records in flight: poll() until a poll returns
// records, acknowledge only those `acks` names (the others stay acquired and unacknowledged,
// "ack": null), commitSync(), and keep the consumer open (no further poll) under a handle:
// {"handle", "deliveries", "errors"}. shareClose {handle, timeoutMs} closes it (a broker that
// is down by then never hears of the records it held): {"error": name or null}.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class Shares {
    private static final Map<Integer, KafkaShareConsumer<byte[], byte[]>> HELD = new ConcurrentHashMap<>();
    private static final AtomicInteger SEQ = new AtomicInteger();

    private Shares() {}

    /** A share consumer of the request's group, subscribed to its topic. */
    private static KafkaShareConsumer<byte[], byte[]> open(JsonNode a) throws Exception {
        String bootstrap = a.path("bootstrap").asText();
        String group = a.path("group").asText();
        if (a.path("earliest").asBoolean()) {
            earliest(bootstrap, group);
        }
        Properties p = Records.base(bootstrap, a.path("clientId").asText("compat-java-share"));
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(List.of(a.path("topic").asText()));
        return consumer;
    }

    private static long deadline(JsonNode a) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(a.path("timeoutMs").asLong());
    }

    /** Acknowledges `rec` with the type `acks` names for it (`fallback` when none; null: leave
     * it unacknowledged) and adds the delivery to `deliveries`. */
    private static void handle(
            KafkaShareConsumer<byte[], byte[]> consumer, ConsumerRecord<byte[], byte[]> rec,
            JsonNode acks, String fallback, ArrayNode deliveries) {
        int delivery = rec.deliveryCount().map(Short::intValue).orElse(-1);
        JsonNode named = acks.get(rec.offset() + ":" + delivery);
        String type = named == null ? fallback : named.asText();
        if (type != null) {
            consumer.acknowledge(rec, AcknowledgeType.valueOf(type));
        }
        ObjectNode d = deliveries.addObject();
        d.put("offset", rec.offset());
        d.put("value", Records.base64(rec.value()));
        d.put("deliveryCount", delivery);
        d.put("ack", type);
    }

    private static void commit(KafkaShareConsumer<byte[], byte[]> consumer, ArrayNode errors) {
        Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
        for (Optional<KafkaException> e : result.values()) {
            e.ifPresent(ex -> errors.add(Errors.forException(ex).name()));
        }
    }

    static Object shareConsume(JsonNode a) throws Exception {
        int count = a.path("count").asInt();
        long holdMs = a.path("holdMs").asLong(0);
        long settleNanos = TimeUnit.MILLISECONDS.toNanos(a.path("settleMs").asLong(0));
        long deadline = deadline(a);
        ObjectNode out = Driver.JSON.createObjectNode();
        ArrayNode deliveries = out.putArray("deliveries");
        ArrayNode errors = out.putArray("errors");
        try (KafkaShareConsumer<byte[], byte[]> consumer = open(a)) {
            boolean held = false;
            long settled = Long.MAX_VALUE;
            while (System.nanoTime() < deadline && System.nanoTime() < settled) {
                if (deliveries.size() >= count && settled == Long.MAX_VALUE) {
                    settled = System.nanoTime() + settleNanos;
                    continue;
                }
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                if (got.isEmpty()) {
                    continue;
                }
                if (holdMs > 0 && !held) {
                    held = true;
                    Thread.sleep(holdMs);
                }
                for (ConsumerRecord<byte[], byte[]> rec : got) {
                    handle(consumer, rec, a.path("acks"), "ACCEPT", deliveries);
                }
                commit(consumer, errors);
            }
        }
        return out;
    }

    static Object shareHold(JsonNode a) throws Exception {
        long deadline = deadline(a);
        ObjectNode out = Driver.JSON.createObjectNode();
        ArrayNode deliveries = out.putArray("deliveries");
        ArrayNode errors = out.putArray("errors");
        KafkaShareConsumer<byte[], byte[]> consumer = open(a);
        int handle = SEQ.incrementAndGet();
        HELD.put(handle, consumer);
        out.put("handle", handle);
        while (deliveries.isEmpty() && System.nanoTime() < deadline) {
            for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                handle(consumer, rec, a.path("acks"), null, deliveries);
            }
        }
        commit(consumer, errors);
        return out;
    }

    static Object shareClose(JsonNode a) {
        KafkaShareConsumer<byte[], byte[]> consumer = HELD.remove(a.path("handle").asInt());
        if (consumer == null) {
            throw new IllegalArgumentException("no held share consumer " + a.path("handle"));
        }
        ObjectNode out = Driver.JSON.createObjectNode();
        try {
            consumer.close(Duration.ofMillis(a.path("timeoutMs").asLong(5000)));
            out.putNull("error");
        } catch (KafkaException e) {
            out.put("error", Driver.error(e).path("code").asText());
        }
        return out;
    }

    /** Closes every held share consumer (the driver's end). */
    static void close() {
        for (Integer handle : List.copyOf(HELD.keySet())) {
            KafkaShareConsumer<byte[], byte[]> consumer = HELD.remove(handle);
            if (consumer != null) {
                try {
                    consumer.close(Duration.ofSeconds(1));
                } catch (KafkaException e) {
                    System.err.println("closing a share consumer: " + e);
                }
            }
        }
    }

    private static void earliest(String bootstrap, String group) throws Exception {
        Properties p = Records.base(bootstrap, "compat-java-share-admin");
        try (Admin admin = Admin.create(p)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all().get(30, TimeUnit.SECONDS);
        }
    }
}
