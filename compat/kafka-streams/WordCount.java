// A Kafka Streams word count, exactly-once v2, for wirebroker's compatibility matrix
// (compat/kafka-streams/README.md). Compiled at run time against Apache Kafka 4.4.0's jars by
// compat/kafka-streams/runner.py; nothing compiled is committed.
//
//   java -cp CLASSES:LIBS/* WordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
//
// input (String lines) -> words -> groupBy(word) [repartition topic APP-words-repartition]
// -> count() in the persistent (RocksDB) store "counts" [changelog APP-counts-changelog]
// -> output (String word, Long count). Prints one line per state change ("STATE RUNNING")
// and per replaced stream thread ("THREAD-ERROR ..."); SIGTERM closes it cleanly.

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // No purging of the repartition topic (deleting records up to the committed offsets):
        // the check counts every word that went through it.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> System.out.println("STATE " + now));
        streams.setUncaughtExceptionHandler(error -> {
            System.out.println("THREAD-ERROR " + error);
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
