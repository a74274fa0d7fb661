/* tests/oracle/test_regex_vs_kafka.py: each pattern it writes to stdin (JSON: patterns and topic
 * names) compiled with RE2/J, as Kafka 4.4's group coordinator compiles a SubscribedTopicRegex,
 * and matched in full against every name; the answers go back as JSON. */
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import java.util.*;

public class RegexProbe {
    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        Map<String, Object> input = json.readValue(System.in, Map.class);
        List<String> topics = (List<String>) input.get("topics");
        List<Object> out = new ArrayList<>();
        for (String pattern : (List<String>) input.get("patterns")) {
            Map<String, Object> answer = new TreeMap<>();
            try {
                Pattern compiled = Pattern.compile(pattern);
                List<String> matches = new ArrayList<>();
                for (String topic : topics) {
                    if (compiled.matcher(topic).matches()) matches.add(topic);
                }
                answer.put("matches", matches);
            } catch (PatternSyntaxException e) {
                answer.put("error", e.getDescription());
            }
            out.add(answer);
        }
        json.writeValue(System.out, out);
    }
}
