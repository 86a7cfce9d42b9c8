import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The share-group side of {@code python -m bench share-consumers}: N {@link KafkaShareConsumer}s
 * of one group, one thread each in this JVM, read a topic that was filled before they start.
 *
 * <p>Arguments: bootstrap, group, topic, consumers, records (how many the topic holds), then in
 * milliseconds the warm-up bound, the window's length and the overall bound. The group's
 * {@code share.auto.offset.reset} is set to {@code earliest} first (a share group otherwise starts
 * at the end of the log and would never see the records); the consumers keep the client's
 * defaults otherwise: implicit acknowledgement (each poll accepts what the previous one returned),
 * {@code batch_optimized} acquisition, {@code max.poll.records} 500.
 *
 * <p>Members join one by one and learn their assignment from heartbeats, so the timed window
 * starts when every consumer has received a record (or when the warm-up bound has passed since the
 * first record: then fewer were active, and the result says how many), and ends when its length has
 * passed or every record of the topic has been delivered once, whichever comes first. Lines on stdout, flushed at once so the harness can read
 * the processes' CPU at the window's edges: {@code window} when it opens, {@code done} when the
 * last record arrives, then {@code result {json}} after the consumers closed.
 */
public final class ShareThroughput {
    private final int consumers;
    private final long records;
    private final Map<Integer, BitSet> seen = new HashMap<>();
    private final AtomicLong distinct = new AtomicLong();
    private final AtomicLong deliveries = new AtomicLong();
    private final AtomicLong[] perConsumer;
    private final long[] perConsumerAtWindow;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private ShareThroughput(int consumers, long records) {
        this.consumers = consumers;
        this.records = records;
        this.perConsumer = new AtomicLong[consumers];
        for (int i = 0; i < consumers; i++) {
            perConsumer[i] = new AtomicLong();
        }
        this.perConsumerAtWindow = new long[consumers];
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        ShareThroughput run = new ShareThroughput(Integer.parseInt(args[3]), Long.parseLong(args[4]));
        long warmupMs = Long.parseLong(args[5]);
        long windowMs = Long.parseLong(args[6]);
        long timeoutMs = Long.parseLong(args[7]);
        startAtEarliest(bootstrap, group);
        System.exit(run.consume(bootstrap, group, topic, warmupMs, windowMs, timeoutMs));
    }

    /** incrementalAlterConfigs SET share.auto.offset.reset=earliest on the group, before it exists. */
    private static void startAtEarliest(String bootstrap, String group) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
        }
    }

    private int consume(String bootstrap, String group, String topic, long warmupMs, long windowMs,
            long timeoutMs) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            int index = i;
            Thread thread = new Thread(() -> member(bootstrap, group, topic, index), "share-" + i);
            thread.start();
            threads.add(thread);
        }
        long started = System.nanoTime();
        long firstAny = 0;
        long windowStart = 0;
        long distinctAtWindow = 0;
        long deliveriesAtWindow = 0;
        long end = 0;
        while (failure.get() == null && System.nanoTime() - started < timeoutMs * 1_000_000L) {
            long now = System.nanoTime();
            if (windowStart == 0) {
                int active = 0;
                for (int i = 0; i < consumers; i++) {
                    if (perConsumer[i].get() > 0) {
                        active++;
                    }
                }
                if (firstAny == 0 && active > 0) {
                    firstAny = now;
                }
                if (active == consumers || (firstAny != 0 && now - firstAny > warmupMs * 1_000_000L)) {
                    windowStart = now;
                    distinctAtWindow = distinct.get();
                    deliveriesAtWindow = deliveries.get();
                    for (int i = 0; i < consumers; i++) {
                        perConsumerAtWindow[i] = perConsumer[i].get();
                    }
                    System.out.println("window");
                    System.out.flush();
                }
            }
            if (distinct.get() >= records || (windowStart != 0 && now - windowStart >= windowMs * 1_000_000L)) {
                end = System.nanoTime();
                if (windowStart == 0) {
                    windowStart = end; // every record arrived before all members did: an empty window
                    distinctAtWindow = records;
                    deliveriesAtWindow = deliveries.get();
                    System.out.println("window");
                }
                System.out.println("done");
                System.out.flush();
                break;
            }
            Thread.sleep(5);
        }
        long distinctAtEnd = distinct.get();
        long deliveriesAtEnd = deliveries.get();
        long[] windowPerConsumer = new long[consumers];
        for (int i = 0; i < consumers; i++) {
            windowPerConsumer[i] = perConsumer[i].get() - perConsumerAtWindow[i];
        }
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30_000);
        }
        StringBuilder json = new StringBuilder("{");
        json.append("\"complete\": ").append(end != 0);
        json.append(", \"error\": ").append(quoted(failure.get()));
        json.append(", \"records\": ").append(distinctAtEnd);
        json.append(", \"deliveries\": ").append(deliveriesAtEnd);
        json.append(", \"warmup_seconds\": ").append(firstAny == 0 || windowStart == 0 ? 0 : (windowStart - firstAny) / 1e9);
        json.append(", \"window_seconds\": ").append(end == 0 || windowStart == 0 ? 0 : (end - windowStart) / 1e9);
        json.append(", \"window_records\": ").append(distinctAtEnd - distinctAtWindow);
        json.append(", \"window_deliveries\": ").append(deliveriesAtEnd - deliveriesAtWindow);
        json.append(", \"window_per_consumer\": [");
        for (int i = 0; i < consumers; i++) {
            json.append(i == 0 ? "" : ", ").append(windowPerConsumer[i]);
        }
        json.append("]}");
        System.out.println("result " + json);
        System.out.flush();
        return end != 0 && failure.get() == null ? 0 : 1;
    }

    /** One member: poll until told to stop; close() acknowledges what the last poll returned. */
    private void member(String bootstrap, String group, String topic, int index) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-bench-" + index);
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                if (polled.isEmpty()) {
                    continue;
                }
                int fresh = 0;
                synchronized (seen) {
                    for (ConsumerRecord<byte[], byte[]> r : polled) {
                        BitSet offsets = seen.computeIfAbsent(r.partition(), k -> new BitSet());
                        if (!offsets.get((int) r.offset())) {
                            offsets.set((int) r.offset());
                            fresh++;
                        }
                    }
                }
                distinct.addAndGet(fresh);
                deliveries.addAndGet(polled.count());
                perConsumer[index].addAndGet(polled.count());
            }
        } catch (Throwable t) {
            failure.compareAndSet(null, t);
        }
    }

    private static String quoted(Throwable t) {
        if (t == null) {
            return "null";
        }
        String text = (t.getClass().getSimpleName() + ": " + t.getMessage());
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }
}
