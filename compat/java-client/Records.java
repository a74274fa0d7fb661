// Records between JSON and the client: base64 bytes (null stays null), headers as [name, value]
// pairs in order (repeated names and null values kept), timestamps in ms.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;

final class Records {
    private Records() {}

    static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    static String base64(byte[] data) {
        return data == null ? null : Base64.getEncoder().encodeToString(data);
    }

    static Integer intOrNull(JsonNode node) {
        return node == null || node.isNull() ? null : node.asInt();
    }

    static Long longOrNull(JsonNode node) {
        return node == null || node.isNull() ? null : node.asLong();
    }

    /** A ProducerRecord from {key, value, headers, timestamp, partition} (each may be null). */
    static ProducerRecord<byte[], byte[]> toProducer(String topic, JsonNode r) {
        List<Header> headers = new ArrayList<>();
        for (JsonNode h : r.path("headers")) {
            headers.add(new RecordHeader(h.get(0).asText(), bytes(h.get(1))));
        }
        return new ProducerRecord<>(
                topic,
                intOrNull(r.get("partition")),
                longOrNull(r.get("timestamp")),
                bytes(r.get("key")),
                bytes(r.get("value")),
                headers);
    }

    /** {partition, offset, timestamp, timestampType (0 CreateTime, 1 LogAppendTime), key,
     * value, headers} of a consumed record. */
    static ObjectNode toJson(ConsumerRecord<byte[], byte[]> rec) {
        ObjectNode out = Driver.JSON.createObjectNode();
        out.put("partition", rec.partition());
        out.put("offset", rec.offset());
        out.put("timestamp", rec.timestamp());
        TimestampType type = rec.timestampType();
        if (type == TimestampType.CREATE_TIME) {
            out.put("timestampType", 0);
        } else if (type == TimestampType.LOG_APPEND_TIME) {
            out.put("timestampType", 1);
        } else {
            out.putNull("timestampType");
        }
        out.put("key", base64(rec.key()));
        out.put("value", base64(rec.value()));
        ArrayNode headers = out.putArray("headers");
        for (Header h : rec.headers()) {
            headers.addArray().add(h.key()).add(base64(h.value()));
        }
        return out;
    }

    /** Extra client settings per bootstrap string (security: `configure`), for every client
     * made for that bootstrap afterwards. A bootstrap may end in `#label` (not sent to Kafka),
     * so one broker can be reached with several settings (users, mechanisms) in one driver. */
    private static final Map<String, Map<String, String>> EXTRA = new ConcurrentHashMap<>();

    /** `configure` {bootstrap, settings}: every later client of `bootstrap` gets `settings`
     * (security.protocol, sasl.*, ssl.*, ...), as an application's properties file would. */
    static Object configure(JsonNode a) {
        Map<String, String> settings = new HashMap<>();
        for (Map.Entry<String, JsonNode> e : a.path("settings").properties()) {
            settings.put(e.getKey(), e.getValue().asText());
        }
        EXTRA.put(a.path("bootstrap").asText(), Map.copyOf(settings));
        return true;
    }

    /** The settings every client of the driver shares. */
    static Properties base(String bootstrap, String clientId) {
        Properties p = new Properties();
        int label = bootstrap.indexOf('#');
        p.put("bootstrap.servers", label < 0 ? bootstrap : bootstrap.substring(0, label));
        p.put("client.id", clientId);
        p.putAll(EXTRA.getOrDefault(bootstrap, Map.of()));
        return p;
    }
}
