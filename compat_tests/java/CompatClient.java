import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client of the compatibility suite: a command loop driving kafka-clients.
 *
 * <p>Why a loop and not one JVM per scenario: JVM start-up and class loading cost about a
 * second, which across a hundred scenario steps would dominate the suite. So the Python driver
 * starts this program once per kafka-clients version and sends one JSON object per line on
 * stdin; each answer is one JSON line on stdout, {"ok": true, "result": ...} or
 * {"ok": false, "error": "ExceptionClass: message"}. Bytes travel as base64. Consumers and
 * transactional producers live between commands as named handles, so a scenario can interleave
 * two group members, or a producer and the newer instance that fences it.
 *
 * <p>It compiles against kafka-clients 3.9 and 4.x alike, so it only uses APIs present in both.
 */
public final class CompatClient {
    private static final int TIMEOUT_MS = 20_000;
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();

    private final Map<String, KafkaConsumer<byte[], byte[]>> consumers = new HashMap<>();
    private final Map<String, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
    private final Map<String, Deque<ConsumerRecord<byte[], byte[]>>> buffers = new HashMap<>();
    private final Map<String, Admin> admins = new HashMap<>();

    public static void main(String[] args) throws Exception {
        CompatClient client = new CompatClient();
        serve(client::handle, client::closeAll);
    }

    /** Answers one command; the command loop of {@link #serve} reports what it throws. */
    interface Handler {
        Object handle(Map<String, Object> command) throws Exception;
    }

    /**
     * The command loop: "ready", then one answer line per command line until stdin closes, then
     * {@code closeAll}. Other programs of the suite built on this class (ShareClient) serve
     * their own commands through it.
     */
    static void serve(Handler handler, Runnable closeAll) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err); // keep library chatter off the answer channel
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println(Json.write(Map.of("ok", true, "result", "ready")));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> answer = new LinkedHashMap<>();
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> command = (Map<String, Object>) Json.parse(line);
                answer.put("result", handler.handle(command));
                answer.put("ok", true);
            } catch (Throwable t) {
                answer.put("ok", false);
                answer.put("error", errorText(t));
            }
            out.println(Json.write(answer));
        }
        closeAll.run();
    }

    /** "ExceptionClass: message" of what a call threw, unwrapped from its Future's wrapper. */
    static String errorText(Throwable t) {
        Throwable cause = unwrap(t);
        return cause.getClass().getName() + ": " + cause.getMessage();
    }

    private static Throwable unwrap(Throwable t) {
        while (t.getCause() != null
                && (t instanceof java.util.concurrent.ExecutionException || t.getClass() == RuntimeException.class)) {
            t = t.getCause();
        }
        return t;
    }

    private Object handle(Map<String, Object> c) throws Exception {
        String op = (String) c.get("op");
        switch (op) {
            case "produce": return produce(c);
            case "consumer_open": return consumerOpen(c);
            case "consumer_assign": return consumerAssign(c);
            case "consumer_subscribe":
                consumer(c).subscribe(strings(c.get("topics")));
                return null;
            case "consumer_poll": return consumerPoll(c);
            case "consumer_assignment": return partitionsJson(consumer(c).assignment());
            case "consumer_commit": return consumerCommit(c);
            case "consumer_close":
                consumer(c).close();
                consumers.remove(handleName(c));
                buffers.remove(handleName(c));
                return null;
            case "list_offsets": return listOffsets(c);
            case "list_topics": return new ArrayList<>(admin(c).listTopics().names().get());
            case "partition_count": return partitionCount(c);
            case "create_topic": return createTopic(c);
            case "delete_topic":
                admin(c).deleteTopics(List.of((String) c.get("topic"))).all().get();
                return null;
            case "create_partitions":
                admin(c).createPartitions(Map.of((String) c.get("topic"),
                        NewPartitions.increaseTo(num(c.get("total"))))).all().get();
                return null;
            case "delete_records":
                admin(c).deleteRecords(Map.of(new TopicPartition((String) c.get("topic"), num(c.get("partition"))),
                        RecordsToDelete.beforeOffset(((Number) c.get("offset")).longValue()))).all().get();
                return null;
            case "describe_configs": return describeConfigs(c);
            case "alter_configs": return alterConfigs(c);
            case "describe_group": return describeGroup(c);
            case "group_offsets": return groupOffsets(c);
            case "txn_open": return txnOpen(c);
            case "txn_begin":
                producer(c).beginTransaction();
                return null;
            case "txn_send": return sendAll(producer(c), (String) c.get("topic"), (List<?>) c.get("messages"));
            case "txn_send_offsets":
                producer(c).sendOffsetsToTransaction(offsetsArg(c.get("offsets")),
                        new ConsumerGroupMetadata((String) c.get("group")));
                return null;
            case "txn_commit":
                producer(c).commitTransaction();
                return null;
            case "txn_abort":
                producer(c).abortTransaction();
                return null;
            case "telemetry_open": return telemetryOpen(c);
            case "txn_close":
            case "producer_close":
                producer(c).close(Duration.ofSeconds(5));
                producers.remove(handleName(c));
                return null;
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private Object produce(Map<String, Object> c) throws Exception {
        @SuppressWarnings("unchecked")
        Map<String, Object> s = (Map<String, Object>) c.get("settings");
        Properties p = producerProperties(c);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, s.get("compression"));
        p.put(ProducerConfig.ACKS_CONFIG, s.get("acks"));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(num(s.get("timeout_ms"))));
        putIfSet(p, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, s.get("idempotence"));
        putIfSet(p, ProducerConfig.MAX_REQUEST_SIZE_CONFIG, s.get("max_request_size"));
        putIfSet(p, ProducerConfig.RETRIES_CONFIG, s.get("retries"));
        putClientConfig(p, c);
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            return sendAll(producer, (String) c.get("topic"), (List<?>) c.get("messages"));
        }
    }

    /** What every producer here shares: the bootstrap, a short linger, and the suite's time bounds. */
    private static Properties producerProperties(Map<String, Object> c) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, c.get("bootstrap"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS + 5_000));
        return p;
    }

    /** Sends the messages in order, flushes, and answers their offsets (-1 where acks=0 gives none). */
    private static List<Object> sendAll(KafkaProducer<byte[], byte[]> producer, String topic, List<?> messages)
            throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (Object o : messages) {
            @SuppressWarnings("unchecked")
            Map<String, Object> m = (Map<String, Object>) o;
            sent.add(producer.send(record(topic, m)));
        }
        producer.flush();
        List<Object> offsets = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata md = f.get();
            offsets.add(md.hasOffset() ? md.offset() : -1L);
        }
        return offsets;
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, Map<String, Object> m) {
        List<Header> headers = new ArrayList<>();
        for (Object h : (List<?>) m.get("headers")) {
            List<?> pair = (List<?>) h;
            headers.add(new RecordHeader((String) pair.get(0), bytes(pair.get(1))));
        }
        Integer partition = m.get("partition") == null ? null : num(m.get("partition"));
        Long timestamp = m.get("timestamp") == null ? null : ((Number) m.get("timestamp")).longValue();
        return new ProducerRecord<>(topic, partition, timestamp, bytes(m.get("key")), bytes(m.get("value")), headers);
    }

    /**
     * Opens a transactional producer under the handle and runs initTransactions, which fences
     * older producers with the same transactional.id before this command answers. max.block.ms
     * bounds initTransactions, commitTransaction and abortTransaction alike.
     */
    private Object txnOpen(Map<String, Object> c) {
        Properties p = producerProperties(c);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, c.get("transactional_id"));
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, String.valueOf(num(c.get("timeout_ms"))));
        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            producer.close(Duration.ZERO);
            throw e;
        }
        producers.put(handleName(c), producer);
        return null;
    }

    /**
     * Opens a producer under the handle that pushes its metrics (KIP-714: enable.metrics.push,
     * the default, set explicitly), sends one record so it has metrics to push, and answers the
     * client instance id the broker gave it. It keeps pushing until producer_close.
     */
    private Object telemetryOpen(Map<String, Object> c) throws Exception {
        Properties p = producerProperties(c);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, c.get("client_id"));
        p.put(ProducerConfig.ENABLE_METRICS_PUSH_CONFIG, "true");
        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        producers.put(handleName(c), producer);
        producer.send(new ProducerRecord<>((String) c.get("topic"), "metered".getBytes(StandardCharsets.UTF_8))).get();
        return producer.clientInstanceId(Duration.ofMillis(TIMEOUT_MS)).toString();
    }

    private Object consumerOpen(Map<String, Object> c) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, c.get("bootstrap"));
        putIfSet(p, ConsumerConfig.GROUP_ID_CONFIG, c.get("group"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, c.get("reset"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, c.get("isolation"));
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        String protocol = (String) c.get("group_protocol");
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if ("classic".equals(protocol)) {
            // With group.protocol=consumer the broker owns both (group.consumer.*), and 4.x
            // rejects a consumer config that sets them.
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        putClientConfig(p, c);
        consumers.put(handleName(c),
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
        buffers.put(handleName(c), new ArrayDeque<>());
        return null;
    }

    private Object consumerAssign(Map<String, Object> c) {
        KafkaConsumer<byte[], byte[]> consumer = consumer(c);
        List<TopicPartition> tps = new ArrayList<>();
        Map<TopicPartition, Long> seeks = new HashMap<>();
        for (Object o : (List<?>) c.get("positions")) {
            List<?> pos = (List<?>) o;
            TopicPartition tp = new TopicPartition((String) pos.get(0), num(pos.get(1)));
            tps.add(tp);
            if (pos.get(2) != null) {
                seeks.put(tp, ((Number) pos.get(2)).longValue());
            }
        }
        consumer.assign(tps);
        seeks.forEach(consumer::seek);
        return null;
    }

    /** Buffers what one poll returned beyond max, so "up to max records" means the same as in Python clients. */
    private Object consumerPoll(Map<String, Object> c) {
        Deque<ConsumerRecord<byte[], byte[]>> buffer = buffers.get(handleName(c));
        if (buffer.isEmpty()) {
            consumer(c).poll(Duration.ofMillis(((Number) c.get("timeout_ms")).longValue())).forEach(buffer::add);
        }
        List<Object> records = new ArrayList<>();
        int max = num(c.get("max"));
        while (!buffer.isEmpty() && records.size() < max) {
            ConsumerRecord<byte[], byte[]> r = buffer.poll();
            List<Object> headers = new ArrayList<>();
            for (Header h : r.headers()) {
                headers.add(Arrays.asList(h.key(), b64(h.value()))); // a null value stays null
            }
            Map<String, Object> rec = new LinkedHashMap<>();
            rec.put("topic", r.topic());
            rec.put("partition", r.partition());
            rec.put("offset", r.offset());
            rec.put("key", b64(r.key()));
            rec.put("value", b64(r.value()));
            rec.put("headers", headers);
            rec.put("timestamp", r.timestamp());
            records.add(rec);
        }
        return records;
    }

    private Object consumerCommit(Map<String, Object> c) {
        consumer(c).commitSync(offsetsArg(c.get("offsets")));
        return null;
    }

    /** Offsets to commit, sent as [[topic, partition, offset], ...]. */
    private static Map<TopicPartition, OffsetAndMetadata> offsetsArg(Object json) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (Object o : (List<?>) json) {
            List<?> e = (List<?>) o;
            offsets.put(new TopicPartition((String) e.get(0), num(e.get(1))),
                    new OffsetAndMetadata(((Number) e.get(2)).longValue()));
        }
        return offsets;
    }

    private Object listOffsets(Map<String, Object> c) throws Exception {
        Object spec = c.get("spec");
        OffsetSpec offsetSpec = "earliest".equals(spec) ? OffsetSpec.earliest()
                : "latest".equals(spec) ? OffsetSpec.latest()
                : OffsetSpec.forTimestamp(((Number) spec).longValue());
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (Object p : (List<?>) c.get("partitions")) {
            request.put(new TopicPartition((String) c.get("topic"), num(p)), offsetSpec);
        }
        List<Object> result = new ArrayList<>();
        for (Map.Entry<TopicPartition, ListOffsetsResultInfo> e : admin(c).listOffsets(request).all().get().entrySet()) {
            result.add(List.of(e.getKey().partition(), e.getValue().offset()));
        }
        return result;
    }

    private Object partitionCount(Map<String, Object> c) throws Exception {
        String topic = (String) c.get("topic");
        TopicDescription d = admin(c).describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        return d.partitions().size();
    }

    private Object createTopic(Map<String, Object> c) throws Exception {
        NewTopic topic = new NewTopic((String) c.get("topic"), num(c.get("partitions")), (short) 1);
        Map<String, String> configs = new HashMap<>();
        @SuppressWarnings("unchecked")
        Map<String, Object> given = (Map<String, Object>) c.get("configs");
        given.forEach((k, v) -> configs.put(k, (String) v));
        admin(c).createTopics(List.of(topic.configs(configs))).all().get();
        return null;
    }

    private Object describeConfigs(Map<String, Object> c) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, (String) c.get("topic"));
        Config config = admin(c).describeConfigs(List.of(resource)).all().get().get(resource);
        Map<String, Object> result = new LinkedHashMap<>();
        for (ConfigEntry e : config.entries()) {
            result.put(e.name(), e.value());
        }
        return result;
    }

    private Object alterConfigs(Map<String, Object> c) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, (String) c.get("topic"));
        List<AlterConfigOp> ops = new ArrayList<>();
        @SuppressWarnings("unchecked")
        Map<String, Object> configs = (Map<String, Object>) c.get("configs");
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, (String) v), AlterConfigOp.OpType.SET)));
        Map<ConfigResource, Collection<AlterConfigOp>> request = Map.of(resource, ops);
        admin(c).incrementalAlterConfigs(request).all().get();
        return null;
    }

    @SuppressWarnings({"deprecation", "removal"}) // state() is deprecated in 4.x; 3.9 has nothing else
    private Object describeGroup(Map<String, Object> c) throws Exception {
        String group = (String) c.get("group");
        ConsumerGroupDescription d = admin(c).describeConsumerGroups(List.of(group)).all().get().get(group);
        List<Object> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            members.add(partitionsJson(m.assignment().topicPartitions()));
        }
        return Map.of("state", d.state().toString(), "members", members);
    }

    private Object groupOffsets(Map<String, Object> c) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets =
                admin(c).listConsumerGroupOffsets((String) c.get("group")).partitionsToOffsetAndMetadata().get();
        List<Object> result = new ArrayList<>();
        offsets.forEach((tp, om) -> {
            if (om != null) {
                result.add(List.of(tp.topic(), tp.partition(), om.offset()));
            }
        });
        return result;
    }

    private Admin admin(Map<String, Object> c) {
        return admin(admins, c);
    }

    /** The admin client for the command's bootstrap and client config, created on first use. */
    static Admin admin(Map<String, Admin> admins, Map<String, Object> c) {
        String key = c.get("bootstrap") + " " + c.get("client_config");
        return admins.computeIfAbsent(key, k -> {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, c.get("bootstrap"));
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
            putClientConfig(p, c);
            return Admin.create(p);
        });
    }

    /** Extra client properties (security.protocol, sasl.*, ssl.*) a command carries, if any. */
    static void putClientConfig(Properties p, Map<String, Object> c) {
        Object extra = c.get("client_config");
        if (extra != null) {
            ((Map<?, ?>) extra).forEach((k, v) -> p.put(String.valueOf(k), String.valueOf(v)));
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> c) {
        return held(consumers, c, "consumer");
    }

    private KafkaProducer<byte[], byte[]> producer(Map<String, Object> c) {
        return held(producers, c, "producer");
    }

    /** The client the command's handle names, or an error naming the handle. */
    static <T> T held(Map<String, T> clients, Map<String, Object> c, String kind) {
        T client = clients.get(handleName(c));
        if (client == null) {
            throw new IllegalArgumentException("no " + kind + " handle " + handleName(c));
        }
        return client;
    }

    private void closeAll() {
        consumers.values().forEach(KafkaConsumer::close);
        producers.values().forEach(KafkaProducer::close);
        admins.values().forEach(Admin::close);
    }

    static String handleName(Map<String, Object> c) {
        return (String) c.get("handle");
    }

    private static List<Object> partitionsJson(Collection<TopicPartition> tps) {
        List<Object> result = new ArrayList<>();
        for (TopicPartition tp : tps) {
            result.add(List.of(tp.topic(), tp.partition()));
        }
        return result;
    }

    private static void putIfSet(Properties p, String key, Object value) {
        if (value != null) {
            p.put(key, String.valueOf(value));
        }
    }

    static List<String> strings(Object o) {
        List<String> result = new ArrayList<>();
        for (Object s : (List<?>) o) {
            result.add((String) s);
        }
        return result;
    }

    static int num(Object o) {
        return ((Number) o).intValue();
    }

    private static byte[] bytes(Object o) {
        return o == null ? null : UNB64.decode((String) o);
    }

    static String b64(byte[] b) {
        return b == null ? null : B64.encodeToString(b);
    }

    /** Just enough JSON for the command channel: objects, arrays, strings, numbers, booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json j = new Json(text);
            Object value = j.value();
            j.skipSpace();
            if (j.i != text.length()) {
                throw new IllegalArgumentException("trailing JSON at " + j.i);
            }
            return value;
        }

        private void skipSpace() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        /** Step past an opening bracket; false when {@code close} follows (an empty container). */
        private boolean opens(char close) {
            i++;
            skipSpace();
            if (s.charAt(i) == close) {
                i++;
                return false;
            }
            return true;
        }

        /** Step past what follows an element: a comma (true, another element) or {@code close}. */
        private boolean continues(char close) {
            skipSpace();
            return s.charAt(i++) != close;
        }

        private Object value() {
            skipSpace();
            char ch = s.charAt(i);
            if (ch == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                for (boolean more = opens('}'); more; more = continues('}')) {
                    skipSpace();
                    String key = string();
                    skipSpace();
                    expect(':');
                    map.put(key, value());
                }
                return map;
            }
            if (ch == '[') {
                List<Object> list = new ArrayList<>();
                for (boolean more = opens(']'); more; more = continues(']')) {
                    list.add(value());
                }
                return list;
            }
            if (ch == '"') {
                return string();
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String number = s.substring(start, i);
            if (number.contains(".") || number.contains("e") || number.contains("E")) {
                return Double.parseDouble(number);
            }
            return Long.parseLong(number);
        }

        private void expect(char ch) {
            if (s.charAt(i++) != ch) {
                throw new IllegalArgumentException("expected " + ch + " at " + (i - 1));
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char ch = s.charAt(i++);
                if (ch == '"') {
                    return b.toString();
                }
                if (ch != '\\') {
                    b.append(ch);
                    continue;
                }
                char esc = s.charAt(i++);
                switch (esc) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: b.append(esc);
                }
            }
        }

        static String write(Object o) {
            StringBuilder b = new StringBuilder();
            write(b, o);
            return b.toString();
        }

        private static void write(StringBuilder b, Object o) {
            if (o == null) {
                b.append("null");
            } else if (o instanceof String) {
                b.append('"');
                for (char ch : ((String) o).toCharArray()) {
                    if (ch == '"' || ch == '\\') {
                        b.append('\\').append(ch);
                    } else if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
                b.append('"');
            } else if (o instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (o instanceof Collection) {
                b.append('[');
                boolean first = true;
                for (Object item : (Collection<?>) o) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, item);
                }
                b.append(']');
            } else {
                b.append(o);
            }
        }
    }
}
