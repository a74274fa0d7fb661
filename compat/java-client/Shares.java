// KafkaShareConsumer (KIP-932 share groups) as an application uses it, with explicit
// acknowledgement (share.acknowledgement.mode=explicit).
//
// shareConsume: one share consumer of `group` subscribed to `topic`; poll() until `count`
// deliveries were handled or the time is up. Each delivered record is acknowledged with the
// type `acks` names for "offset:deliveryCount" (ACCEPT, RELEASE or REJECT; default ACCEPT),
// then commitSync() after each poll. `holdMs` > 0: after the first poll that returned records,
// wait that long before acknowledging them (longer than the acquisition lock: the broker gives
// them to others meanwhile and the late acknowledgement fails). `earliest`: the group's
// share.auto.offset.reset is set to earliest first (Admin, GROUP config resource). Result:
// {"deliveries": [{offset, value, deliveryCount, ack}], "errors": [commit errors by name]}.
// Closing the consumer releases what it still holds.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
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
    private Shares() {}

    static Object shareConsume(JsonNode a) throws Exception {
        String bootstrap = a.path("bootstrap").asText();
        String group = a.path("group").asText();
        if (a.path("earliest").asBoolean()) {
            earliest(bootstrap, group);
        }
        Properties p = Records.base(bootstrap, a.path("clientId").asText("compat-java-share"));
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        int count = a.path("count").asInt();
        long holdMs = a.path("holdMs").asLong(0);
        JsonNode acks = a.path("acks");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(a.path("timeoutMs").asLong());
        ObjectNode out = Driver.JSON.createObjectNode();
        ArrayNode deliveries = out.putArray("deliveries");
        ArrayNode errors = out.putArray("errors");
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(a.path("topic").asText()));
            boolean held = false;
            while (deliveries.size() < count && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                if (got.isEmpty()) {
                    continue;
                }
                if (holdMs > 0 && !held) {
                    held = true;
                    Thread.sleep(holdMs);
                }
                for (ConsumerRecord<byte[], byte[]> rec : got) {
                    int delivery = rec.deliveryCount().map(Short::intValue).orElse(-1);
                    String type = acks.path(rec.offset() + ":" + delivery).asText("ACCEPT");
                    consumer.acknowledge(rec, AcknowledgeType.valueOf(type));
                    ObjectNode d = deliveries.addObject();
                    d.put("offset", rec.offset());
                    d.put("value", Records.base64(rec.value()));
                    d.put("deliveryCount", delivery);
                    d.put("ack", type);
                }
                Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
                for (Optional<KafkaException> e : result.values()) {
                    e.ifPresent(ex -> errors.add(Errors.forException(ex).name()));
                }
            }
        }
        return out;
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
