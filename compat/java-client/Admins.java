// The Admin client, one per bootstrap, each call waited for with the result's future.

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

final class Admins {
    private final Map<String, Admin> cache = new ConcurrentHashMap<>();

    private Admin admin(JsonNode a) {
        String bootstrap = a.path("bootstrap").asText();
        return cache.computeIfAbsent(bootstrap, b -> {
            Properties p = Records.base(b, "compat-java-admin");
            p.put("default.api.timeout.ms", "30000");
            return Admin.create(p);
        });
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> out = new TreeMap<>();
        object.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }

    private static TopicPartition partition(JsonNode a) {
        return new TopicPartition(a.path("topic").asText(), a.path("partition").asInt());
    }

    /** {topic: partition count}: listTopics() for the names, describeTopics() for the rest. */
    Object listTopics(JsonNode a) throws Exception {
        Admin admin = admin(a);
        Set<String> names = admin.listTopics().names().get();
        Map<String, TopicDescription> described = admin.describeTopics(names).allTopicNames().get();
        Map<String, Integer> out = new TreeMap<>();
        described.forEach((name, d) -> out.put(name, d.partitions().size()));
        return out;
    }

    Object createTopic(JsonNode a) throws Exception {
        NewTopic topic = new NewTopic(
                a.path("name").asText(),
                a.path("partitions").asInt(),
                (short) a.path("replicationFactor").asInt(1));
        topic.configs(strings(a.path("configs")));
        admin(a).createTopics(List.of(topic)).all().get();
        return true;
    }

    Object createPartitions(JsonNode a) throws Exception {
        admin(a).createPartitions(Map.of(a.path("name").asText(),
                NewPartitions.increaseTo(a.path("total").asInt()))).all().get();
        return true;
    }

    private static ConfigResource topicResource(JsonNode a) {
        return new ConfigResource(ConfigResource.Type.TOPIC, a.path("name").asText());
    }

    /** {name: value} of every config of the topic. */
    Object describeConfigs(JsonNode a) throws Exception {
        ConfigResource resource = topicResource(a);
        Map<String, String> out = new TreeMap<>();
        for (ConfigEntry e : admin(a).describeConfigs(List.of(resource)).all().get().get(resource).entries()) {
            out.put(e.name(), e.value());
        }
        return out;
    }

    /** incrementalAlterConfigs with a SET of each config. */
    Object alterConfigs(JsonNode a) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        strings(a.path("configs")).forEach((k, v) ->
                ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin(a).incrementalAlterConfigs(Map.of(topicResource(a), ops)).all().get();
        return true;
    }

    Object deleteTopic(JsonNode a) throws Exception {
        admin(a).deleteTopics(List.of(a.path("name").asText())).all().get();
        return true;
    }

    /** The ids of every consumer group: listGroups() (ListGroups, every broker). */
    Object listGroups(JsonNode a) throws Exception {
        List<String> out = new ArrayList<>();
        for (GroupListing g : admin(a).listGroups().all().get()) {
            out.add(g.groupId());
        }
        return out;
    }

    /** {state, protocolType, members: [{memberId, clientId, assignment: [[topic, p]]}]}. */
    Object describeGroup(JsonNode a) throws Exception {
        String group = a.path("group").asText();
        ConsumerGroupDescription d = admin(a).describeConsumerGroups(List.of(group)).all().get().get(group);
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            List<List<Object>> tps = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                tps.add(List.of(tp.topic(), tp.partition()));
            }
            members.add(Map.of("memberId", m.consumerId(), "clientId", m.clientId(), "assignment", tps));
        }
        Map<String, Object> out = new HashMap<>();
        out.put("state", d.groupState().toString());
        // the Java client reports whether the group is a simple one (no protocol), not its type
        out.put("protocolType", d.isSimpleConsumerGroup() ? "" : "consumer");
        out.put("members", members);
        return out;
    }

    Object deleteGroup(JsonNode a) throws Exception {
        admin(a).deleteConsumerGroups(List.of(a.path("group").asText())).all().get();
        return true;
    }

    /** listOffsets with OffsetSpec.forTimestamp: the offset, -1 when there is none. */
    Object offsetForTime(JsonNode a) throws Exception {
        TopicPartition tp = partition(a);
        ListOffsetsResultInfo info = admin(a)
                .listOffsets(Map.of(tp, OffsetSpec.forTimestamp(a.path("timestamp").asLong())))
                .partitionResult(tp).get();
        return info.offset();
    }

    /** deleteRecords before an offset: the low watermark it reports. */
    Object deleteRecords(JsonNode a) throws Exception {
        TopicPartition tp = partition(a);
        return admin(a)
                .deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(a.path("before").asLong())))
                .lowWatermarks().get(tp).get().lowWatermark();
    }

    void close() {
        for (Admin admin : cache.values()) {
            admin.close(Duration.ofSeconds(5));
        }
        cache.clear();
    }
}
