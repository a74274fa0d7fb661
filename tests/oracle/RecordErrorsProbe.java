// Sends the records "a", null and "c" (keys; value "v") in one batch to partition 0 of a
// topic and prints, per record, its key and "OK offset" or the exception it failed with.
// Used by tests/oracle/test_produce_errors.py with Apache Kafka 4.4's client jars.
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class RecordErrorsProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("linger.ms", "1000");
        String[] keys = {"a", null, "c"};
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (String key : keys) {
                byte[] k = key == null ? null : key.getBytes();
                sent.add(producer.send(new ProducerRecord<>(args[1], 0, k, "v".getBytes())));
            }
            for (int i = 0; i < keys.length; i++) {
                try {
                    System.out.println(keys[i] + " OK " + sent.get(i).get().offset());
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    System.out.println(
                        keys[i] + " " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
                }
            }
        }
    }
}
