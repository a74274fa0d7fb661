/* tests/oracle/test_assignors_vs_kafka.py: Kafka 4.4's server-side assignors (uniform, range) run on
 * the cases it writes to stdin as JSON; the assignments go back as JSON, member by member. */
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/** Reads cases (JSON) on stdin, runs Kafka's server-side assignor on each, writes the results. */
public class AssignorProbe {
    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<Map<String, Object>> cases = json.readValue(System.in, List.class);
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> c : cases) {
            Map<String, Object> topicsIn = (Map<String, Object>) c.get("topics");
            Map<Uuid, Integer> topics = new HashMap<>();
            topicsIn.forEach((k, v) -> topics.put(Uuid.fromString(k), (Integer) v));
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid t) { return topics.getOrDefault(t, -1); }
                public Set<String> racksForPartition(Uuid t, int p) { return Set.of(); }
            };
            Map<String, MemberSubscriptionAndAssignmentImpl> members = new TreeMap<>();
            Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
            Set<Set<Uuid>> distinct = new HashSet<>();
            Map<String, Object> membersIn = (Map<String, Object>) c.get("members");
            for (Map.Entry<String, Object> e : membersIn.entrySet()) {
                Map<String, Object> m = (Map<String, Object>) e.getValue();
                Set<Uuid> subscribed = new HashSet<>();
                for (Object t : (List<Object>) m.get("subscribed")) subscribed.add(Uuid.fromString((String) t));
                distinct.add(subscribed);
                Map<Uuid, Set<Integer>> assigned = new HashMap<>();
                ((Map<String, Object>) m.get("assigned")).forEach((t, ps) -> {
                    Uuid id = Uuid.fromString(t);
                    Set<Integer> set = new HashSet<>((List<Integer>) ps);
                    assigned.put(id, Collections.unmodifiableSet(set));
                    for (Integer p : set) inverted.computeIfAbsent(id, x -> new HashMap<>()).put(p, e.getKey());
                });
                Optional<String> instance = Optional.ofNullable((String) m.get("instance"));
                members.put(e.getKey(), new MemberSubscriptionAndAssignmentImpl(
                    Optional.empty(), instance, subscribed, new Assignment(Collections.unmodifiableMap(assigned))));
            }
            SubscriptionType type = distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            ConsumerGroupPartitionAssignor assignor =
                "range".equals(c.get("assignor")) ? new RangeAssignor() : new UniformAssignor();
            Map<String, Object> result = new TreeMap<>();
            try {
                GroupAssignment ga = assignor.assign(new GroupSpecImpl(members, type, inverted), describer);
                for (String id : members.keySet()) {
                    Map<String, Object> mine = new TreeMap<>();
                    MemberAssignment ma = ga.members().get(id);
                    if (ma != null) ma.partitions().forEach((t, ps) -> {
                        if (!ps.isEmpty()) mine.put(t.toString(), new TreeSet<>(ps));
                    });
                    result.put(id, mine);
                }
            } catch (PartitionAssignorException ex) {
                result.put("error", ex.getMessage());
            }
            out.add(result);
        }
        json.writeValue(System.out, out);
    }
}
