// KafkaConsumer as an application uses it: group.protocol=classic, or for group members the
// protocol the request names (groupProtocol "consumer": KIP-848, the broker assigns and its
// group.consumer.* settings give the session and heartbeat timing; the client refuses
// session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy with it).
//
// consume: no group; assign() one partition, seek() to the start offset, poll() until the
// records asked for came or the time is up, with the isolation level asked for.
// Group members: subscribe() with enable.auto.commit=false; each memberPoll is one poll(),
// followed by a synchronous commitSync() when it returned records; memberClose is close()
// (LeaveGroup). A member's requests all run on that member's own thread, in order.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class Consumers {
    private record Member(KafkaConsumer<byte[], byte[]> consumer, ExecutorService thread) {}

    private final Map<Integer, Member> members = new ConcurrentHashMap<>();
    private final AtomicInteger seq = new AtomicInteger();

    private static KafkaConsumer<byte[], byte[]> create(Properties p) {
        p.putIfAbsent("group.protocol", "classic");
        p.put("enable.auto.commit", "false");
        p.put("fetch.max.wait.ms", "100");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Up to `count` records of one partition from offset `start`. */
    Object consume(JsonNode a) throws Exception {
        Properties p = Records.base(a.path("bootstrap").asText(), "compat-java-reader");
        p.put("isolation.level", a.path("readCommitted").asBoolean() ? "read_committed" : "read_uncommitted");
        TopicPartition tp = new TopicPartition(a.path("topic").asText(), a.path("partition").asInt());
        int count = a.path("count").asInt();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(a.path("timeoutMs").asLong());
        List<ObjectNode> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = create(p)) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, a.path("start").asLong());
            while (out.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                    if (out.size() < count) {
                        out.add(Records.toJson(rec));
                    }
                }
            }
        }
        return out;
    }

    /** Runs `task` on the member's thread; false when there is no such member. */
    boolean submit(int handle, Callable<Void> task) {
        Member m = members.get(handle);
        if (m == null) {
            return false;
        }
        m.thread.submit(task);
        return true;
    }

    /** A new group member subscribed to `topics`: its handle. */
    Object memberStart(JsonNode a) throws Exception {
        Properties p = Records.base(a.path("bootstrap").asText(), a.path("clientId").asText());
        p.put("group.id", a.path("group").asText());
        p.put("auto.offset.reset", "earliest");
        String protocol = a.path("groupProtocol").asText("classic");
        p.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "500");
        }
        List<String> topics = new ArrayList<>();
        a.path("topics").forEach(t -> topics.add(t.asText()));
        ExecutorService thread = Executors.newSingleThreadExecutor(Driver.daemon("member"));
        KafkaConsumer<byte[], byte[]> consumer = thread.submit(() -> {
            KafkaConsumer<byte[], byte[]> c = create(p);
            c.subscribe(topics);
            return c;
        }).get(30, TimeUnit.SECONDS);
        int handle = seq.incrementAndGet();
        members.put(handle, new Member(consumer, thread));
        return handle;
    }

    private Member member(JsonNode a) {
        Member m = members.get(a.path("member").asInt());
        if (m == null) {
            throw new IllegalArgumentException("no member " + a.path("member"));
        }
        return m;
    }

    /** One poll(): {records, assignment}; the records are committed when this returns. */
    Object memberPoll(JsonNode a) {
        KafkaConsumer<byte[], byte[]> c = member(a).consumer;
        ConsumerRecords<byte[], byte[]> got = c.poll(Duration.ofMillis(a.path("timeoutMs").asLong()));
        ObjectNode out = Driver.JSON.createObjectNode();
        ArrayNode records = out.putArray("records");
        for (ConsumerRecord<byte[], byte[]> rec : got) {
            records.add(Records.toJson(rec));
        }
        if (!got.isEmpty()) {
            c.commitSync();
        }
        ArrayNode assignment = out.putArray("assignment");
        for (TopicPartition tp : c.assignment()) {
            assignment.addArray().add(tp.topic()).add(tp.partition());
        }
        return out;
    }

    Object memberClose(JsonNode a) {
        Member m = members.remove(a.path("member").asInt());
        if (m == null) {
            throw new IllegalArgumentException("no member " + a.path("member"));
        }
        try {
            m.consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        } finally {
            m.thread.shutdown();
        }
        return true;
    }

    /** Wakes every member up and closes it on its own thread. */
    void close() {
        for (Integer handle : List.copyOf(members.keySet())) {
            Member m = members.remove(handle);
            if (m == null) {
                continue;
            }
            m.consumer.wakeup();
            try {
                m.thread.submit(() -> m.consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)))).get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("closing a member: " + e);
            }
            m.thread.shutdown();
        }
    }
}
