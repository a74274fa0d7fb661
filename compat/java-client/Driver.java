// The Java client's driver for wirebroker's compatibility matrix (compat/java-client).
//
// Protocol: one JSON object per line on stdin, {"id": n, "op": "...", "args": {...}}; one JSON
// line per answer on stdout, {"id": n, "ok": result} or {"id": n, "error": {"code", "message"}}.
// Requests run concurrently on a thread pool, except a group member's, which run in order on
// that member's own thread (a KafkaConsumer belongs to one thread); answers carry the id.
// Bytes travel as base64 strings, null stays null. The clients log to stderr at WARN (stdout
// is the protocol channel). End of stdin closes every client and exits.
//
// Ops (Producers.java, Consumers.java, Admins.java): produce, transactionalProduce, consume,
// memberStart, memberPoll, memberClose, listTopics, createTopic, createPartitions,
// describeConfigs, alterConfigs, deleteTopic, listGroups, describeGroup, deleteGroup,
// offsetForTime, deleteRecords, close; shareConsume, shareHold, shareClose (Shares.java,
// KIP-932); configure
// (Records.java: extra client settings for one bootstrap, such as security.protocol and
// sasl.jaas.config, used by tests/integration).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.protocol.Errors;

public final class Driver {
    static final ObjectMapper JSON = new ObjectMapper();

    /** One operation: the request's args in, a JSON-able result out. */
    interface Op {
        Object run(JsonNode args) throws Exception;
    }

    private final PrintStream out;
    private final ExecutorService pool = Executors.newCachedThreadPool(daemon("op"));
    private final Producers producers = new Producers();
    private final Consumers consumers = new Consumers();
    private final Admins admins = new Admins();
    private final Map<String, Op> ops;

    Driver(PrintStream out) {
        this.out = out;
        this.ops = Map.ofEntries(
                Map.entry("produce", producers::produce),
                Map.entry("transactionalProduce", producers::transactionalProduce),
                Map.entry("consume", consumers::consume),
                Map.entry("memberStart", consumers::memberStart),
                Map.entry("memberPoll", consumers::memberPoll),
                Map.entry("memberClose", consumers::memberClose),
                Map.entry("listTopics", admins::listTopics),
                Map.entry("createTopic", admins::createTopic),
                Map.entry("createPartitions", admins::createPartitions),
                Map.entry("describeConfigs", admins::describeConfigs),
                Map.entry("alterConfigs", admins::alterConfigs),
                Map.entry("deleteTopic", admins::deleteTopic),
                Map.entry("listGroups", admins::listGroups),
                Map.entry("describeGroup", admins::describeGroup),
                Map.entry("deleteGroup", admins::deleteGroup),
                Map.entry("offsetForTime", admins::offsetForTime),
                Map.entry("deleteRecords", admins::deleteRecords),
                Map.entry("shareConsume", Shares::shareConsume),
                Map.entry("shareHold", Shares::shareHold),
                Map.entry("shareClose", Shares::shareClose),
                Map.entry("configure", Records::configure),
                Map.entry("close", args -> closeAll()));
    }

    static java.util.concurrent.ThreadFactory daemon(String name) {
        return task -> {
            Thread t = new Thread(task, name);
            t.setDaemon(true);
            return t;
        };
    }

    private Object closeAll() {
        producers.close();
        consumers.close();
        admins.close();
        Shares.close();
        return true;
    }

    void handle(String line) {
        JsonNode req;
        try {
            req = JSON.readTree(line);
        } catch (Exception e) {
            System.err.println("bad request line: " + line);
            return;
        }
        long id = req.path("id").asLong();
        String name = req.path("op").asText();
        JsonNode args = req.path("args");
        Op op = ops.get(name);
        Callable<Void> task = () -> {
            answer(id, op, name, args);
            return null;
        };
        // a member's requests run in order on its own thread; everything else on the pool
        boolean ownThread = name.startsWith("member") && !name.equals("memberStart")
                && consumers.submit(args.path("member").asInt(), task);
        if (!ownThread) {
            pool.submit(task);
        }
    }

    private void answer(long id, Op op, String name, JsonNode args) {
        ObjectNode reply = JSON.createObjectNode().put("id", id);
        try {
            if (op == null) {
                throw new IllegalArgumentException("unknown op " + name);
            }
            reply.set("ok", JSON.valueToTree(op.run(args)));
        } catch (Throwable t) {
            reply.set("error", error(t));
        }
        String text = reply.toString();
        synchronized (out) {
            out.println(text);
            out.flush();
        }
    }

    /** Kafka's error name for what the client threw (the Errors enum maps the client's
     * exception classes back to protocol errors), else the exception's class name. */
    static ObjectNode error(Throwable t) {
        Throwable cause = t;
        while (cause.getCause() != null
                && (cause instanceof java.util.concurrent.ExecutionException
                        || cause instanceof java.util.concurrent.CompletionException)) {
            cause = cause.getCause();
        }
        Errors err = Errors.forException(cause);
        String code = err == Errors.UNKNOWN_SERVER_ERROR && !(cause instanceof UnknownServerException)
                ? cause.getClass().getSimpleName()
                : err.name();
        StringBuilder message = new StringBuilder(cause.getClass().getName() + ": " + cause.getMessage());
        for (Throwable c = cause.getCause(); c != null; c = c.getCause()) {
            message.append(" (caused by ").append(c.getClass().getSimpleName()).append(": ")
                    .append(c.getMessage()).append(')');
        }
        return JSON.createObjectNode().put("code", code).put("message", message.toString());
    }

    public static void main(String[] argv) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err); // nothing but answers on the protocol channel
        Driver driver = new Driver(out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("{\"ready\": true}");
        out.flush();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            driver.handle(line);
        }
        driver.pool.shutdown();
        driver.pool.awaitTermination(20, TimeUnit.SECONDS);
        driver.closeAll();
        System.exit(0);
    }
}
