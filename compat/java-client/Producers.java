// KafkaProducer as an application uses it: send() every record, then wait for each one's
// RecordMetadata. Producers are kept per (bootstrap, codec, idempotence, delivery timeout);
// a transactional producer lives for one transactionalProduce call.

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class Producers {
    /** Kafka's producer checks delivery.timeout.ms >= linger.ms + request.timeout.ms. */
    private static final int REQUEST_TIMEOUT_MS = 10_000;

    private static final int LINGER_MS = 5;

    private final Map<String, KafkaProducer<byte[], byte[]>> cache = new ConcurrentHashMap<>();

    static KafkaProducer<byte[], byte[]> create(Properties settings) {
        return new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private KafkaProducer<byte[], byte[]> producer(
            String bootstrap, String compression, boolean idempotent, int timeoutMs) {
        String key = String.join("|", bootstrap, compression, Boolean.toString(idempotent),
                Integer.toString(timeoutMs));
        return cache.computeIfAbsent(key, k -> {
            Properties p = Records.base(bootstrap, "compat-java-producer");
            p.put("acks", "all");
            p.put("enable.idempotence", Boolean.toString(idempotent));
            p.put("compression.type", compression);
            p.put("linger.ms", Integer.toString(LINGER_MS));
            p.put("request.timeout.ms", Integer.toString(REQUEST_TIMEOUT_MS));
            p.put("delivery.timeout.ms", Integer.toString(timeoutMs));
            return create(p);
        });
    }

    /** Sends every record and waits for its ack: [{partition, offset}] in the records' order. */
    Object produce(JsonNode a) throws Exception {
        String topic = a.path("topic").asText();
        int timeoutMs = Math.max(a.path("timeoutMs").asInt(30_000), LINGER_MS + REQUEST_TIMEOUT_MS);
        String codec = a.path("compression").isNull() ? "none" : a.path("compression").asText("none");
        KafkaProducer<byte[], byte[]> p = producer(
                a.path("bootstrap").asText(), codec, a.path("idempotent").asBoolean(), timeoutMs);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (JsonNode r : a.path("records")) {
            sent.add(p.send(Records.toProducer(topic, r)));
        }
        return acks(sent, timeoutMs);
    }

    private static List<Map<String, Object>> acks(List<Future<RecordMetadata>> sent, long timeoutMs)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs + 5_000);
        List<Map<String, Object>> out = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            out.add(Map.of("partition", m.partition(), "offset", m.offset()));
        }
        return out;
    }

    /** One transactional producer: initTransactions, then for each {records, commit}:
     * beginTransaction, send, wait for the acks, commitTransaction or abortTransaction. */
    Object transactionalProduce(JsonNode a) throws Exception {
        int timeoutMs = a.path("timeoutMs").asInt(60_000);
        Properties p = Records.base(a.path("bootstrap").asText(), "compat-java-txn");
        p.put("transactional.id", a.path("transactionalId").asText());
        p.put("linger.ms", Integer.toString(LINGER_MS));
        p.put("delivery.timeout.ms", Integer.toString(Math.max(timeoutMs, 40_000)));
        String topic = a.path("topic").asText();
        KafkaProducer<byte[], byte[]> producer = create(p);
        try {
            producer.initTransactions();
            for (JsonNode txn : a.path("transactions")) {
                producer.beginTransaction();
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (JsonNode r : txn.path("records")) {
                    sent.add(producer.send(Records.toProducer(topic, r)));
                }
                acks(sent, timeoutMs);
                if (txn.path("commit").asBoolean()) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
        } finally {
            producer.close(Duration.ofSeconds(10));
        }
        return true;
    }

    void close() {
        for (KafkaProducer<byte[], byte[]> p : cache.values()) {
            p.close(Duration.ofSeconds(5));
        }
        cache.clear();
    }
}
