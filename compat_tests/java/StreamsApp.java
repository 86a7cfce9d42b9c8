import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A Kafka Streams word count for the streams-group scenarios (KIP-1071), driven through the
 * command loop of {@link CompatClient} (one JSON command a line on stdin, one answer a line on
 * stdout), one application instance per JVM so that a scenario can SIGKILL an instance.
 *
 * <p>The topology: the source topic's lines, split into lowercase words, re-keyed by word through
 * the repartition topic {@code <application.id>-words-repartition}, counted in the state store
 * {@code counts} (changelog {@code <application.id>-counts-changelog}), each new count written to
 * the output topic (key the word, value the count as an 8-byte long). Later versions of the
 * application may add a filter (the stop word is no longer counted), a second output (every
 * counted word, {@code output2}), both invisible to the broker's view of the topology (its
 * subtopologies and their topics), and a second count (the words by their length, a subtopology
 * of its own behind {@code <application.id>-lengths-repartition} with the store
 * {@code length-counts}), which changes it. The word count's internal topics keep their names
 * in every version, since they are named explicitly.
 *
 * <p>Commands: {@code start} (the application's settings), {@code events} (every state change and
 * uncaught exception so far; each is also printed to stderr as a JSON line as it happens),
 * {@code tasks} (the instance's active and standby tasks), {@code metadata}
 * (KafkaStreams#metadataForAllStreamsClients: what interactive queries know of every instance),
 * {@code describe_group} (Admin#describeStreamsGroups) and {@code stop} (KafkaStreams#close). Closing stdin closes the
 * application too; a scenario that kills the JVM leaves it no chance to.
 */
public final class StreamsApp {
    private static final int TIMEOUT_MS = 20_000;

    private final List<Map<String, Object>> events = new ArrayList<>();
    private final Map<String, Admin> admins = new LinkedHashMap<>();
    private KafkaStreams streams;

    public static void main(String[] args) throws Exception {
        // Before any logger is made: the log shows when each line happened (rebalance timings).
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        StreamsApp app = new StreamsApp();
        CompatClient.serve(app::handle, app::closeAll);
    }

    private Object handle(Map<String, Object> c) throws Exception {
        String op = (String) c.get("op");
        switch (op) {
            case "start": return start(c);
            case "events":
                synchronized (events) {
                    return new ArrayList<>(events);
                }
            case "tasks": return tasks();
            case "metadata": return metadata();
            case "describe_group": return describe(c);
            case "stop": return stop(c);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private Object start(Map<String, Object> c) {
        if (streams != null) {
            throw new IllegalStateException("the application was started already");
        }
        synchronized (events) {
            events.clear(); // an instance stopped and started again reports its new run only
        }
        for (String logger : CompatClient.strings(c.get("debug_loggers"))) {
            // slf4j-simple reads a logger's level when the logger is made: the clients make theirs
            // when they are created, below.
            System.setProperty("org.slf4j.simpleLogger.log." + logger, "debug");
        }
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, c.get("application_id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, c.get("bootstrap"));
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, c.get("group_protocol"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, c.get("guarantee"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, c.get("state_dir"));
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, CompatClient.num(c.get("standby_replicas")));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, CompatClient.num(c.get("commit_interval_ms")));
        p.put(StreamsConfig.CLIENT_ID_CONFIG, c.get("client_id"));
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.REQUEST_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
        Object server = c.get("application_server");
        if (server != null) {
            p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, server);
        }
        Object session = c.get("classic_session_timeout_ms");
        if (session != null) {
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), CompatClient.num(session));
        }
        streams = new KafkaStreams(topology(c), p);
        streams.setStateListener((now, before) -> record("state", now.name(), "from", before.name()));
        streams.setUncaughtExceptionHandler(e -> {
            record("error", CompatClient.errorText(e), "thread", Thread.currentThread().getName());
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        return null;
    }

    /** The word count, with the additions the command names (see the class comment). */
    private static Topology topology(Map<String, Object> c) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> words = builder
                .stream((String) c.get("source"), Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
                .filter((key, word) -> !word.isEmpty());
        String stopWord = (String) c.get("stop_word");
        if (stopWord != null) {
            words = words.filter((key, word) -> !word.equals(stopWord));
        }
        String output2 = (String) c.get("output2");
        if (output2 != null) {
            words.to(output2, Produced.with(Serdes.String(), Serdes.String()));
        }
        String lengthsOutput = (String) c.get("lengths_output");
        if (lengthsOutput != null) {
            words.groupBy((key, word) -> String.valueOf(word.length()), Grouped.<String, String>as("lengths"))
                    .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("length-counts"))
                    .toStream()
                    .to(lengthsOutput, Produced.with(Serdes.String(), Serdes.Long()));
        }
        words.groupBy((key, word) -> word, Grouped.<String, String>as("words"))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to((String) c.get("output"), Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private void record(String kind, String value, String detailKey, String detail) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put(kind, value);
        event.put(detailKey, detail);
        event.put("at_ms", System.currentTimeMillis());
        synchronized (events) {
            events.add(event);
        }
        System.err.println(CompatClient.Json.write(event));
    }

    /** Task ids ("subtopology_partition") by kind, over the instance's stream threads. */
    private Object tasks() {
        Map<String, Object> result = new LinkedHashMap<>();
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        for (ThreadMetadata thread : running().metadataForLocalThreads()) {
            thread.activeTasks().forEach(t -> active.add(t.taskId().toString()));
            thread.standbyTasks().forEach(t -> standby.add(t.taskId().toString()));
        }
        result.put("active", new ArrayList<>(active));
        result.put("standby", new ArrayList<>(standby));
        return result;
    }

    /** Each instance's application.server ("host", "port") with the topic partitions
     * ("topic-partition", sorted) of its active and standby tasks, as this instance knows them. */
    private Object metadata() {
        List<Object> result = new ArrayList<>();
        for (StreamsMetadata m : running().metadataForAllStreamsClients()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("host", m.host());
            one.put("port", m.port());
            one.put("active", partitionNames(m.topicPartitions()));
            one.put("standby", partitionNames(m.standbyTopicPartitions()));
            result.add(one);
        }
        return result;
    }

    private static List<String> partitionNames(Set<TopicPartition> partitions) {
        TreeSet<String> names = new TreeSet<>();
        partitions.forEach(tp -> names.add(tp.toString()));
        return new ArrayList<>(names);
    }

    private Object describe(Map<String, Object> c) throws Exception {
        Admin admin = CompatClient.admin(admins, c);
        String group = (String) c.get("group");
        StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all().get().get(group);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("state", d.groupState().toString());
        result.put("group_epoch", d.groupEpoch());
        result.put("target_assignment_epoch", d.targetAssignmentEpoch());
        result.put("topology_epoch", d.topologyEpoch());
        List<Object> subtopologies = new ArrayList<>();
        for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("id", s.subtopologyId());
            one.put("source_topics", new ArrayList<>(new TreeSet<>(s.sourceTopics())));
            one.put("repartition_sink_topics", new ArrayList<>(new TreeSet<>(s.repartitionSinkTopics())));
            one.put("state_changelog_topics", new ArrayList<>(new TreeSet<>(s.stateChangelogTopics().keySet())));
            one.put("repartition_source_topics", new ArrayList<>(new TreeSet<>(s.repartitionSourceTopics().keySet())));
            subtopologies.add(one);
        }
        result.put("subtopologies", subtopologies);
        List<Object> members = new ArrayList<>();
        for (StreamsGroupMemberDescription m : d.members()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("member_id", m.memberId());
            one.put("member_epoch", m.memberEpoch());
            one.put("client_id", m.clientId());
            one.put("process_id", m.processId());
            one.put("topology_epoch", m.topologyEpoch());
            one.put("is_classic", m.isClassic());
            one.put("assignment", assignmentJson(m.assignment()));
            one.put("target_assignment", assignmentJson(m.targetAssignment()));
            members.add(one);
        }
        result.put("members", members);
        return result;
    }

    private static Map<String, Object> assignmentJson(StreamsGroupMemberAssignment a) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("active", taskIds(a.activeTasks()));
        result.put("standby", taskIds(a.standbyTasks()));
        result.put("warmup", taskIds(a.warmupTasks()));
        return result;
    }

    /** As the tasks command spells them: "subtopology_partition", sorted. */
    private static List<String> taskIds(Collection<StreamsGroupMemberAssignment.TaskIds> ids) {
        TreeSet<String> result = new TreeSet<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ids) {
            for (int partition : t.partitions()) {
                result.add(new TaskId(Integer.parseInt(t.subtopologyId()), partition).toString());
            }
        }
        return new ArrayList<>(result);
    }

    /** Closes the application; {@code leave} true asks it to leave the group, false to stay in it
     * (Kafka's default for the close is neither: CloseOptions' DEFAULT). Returns whether it closed
     * within the timeout. */
    private Object stop(Map<String, Object> c) {
        Object leave = c.get("leave");
        CloseOptions options = CloseOptions.timeout(Duration.ofMillis(TIMEOUT_MS));
        if (leave != null) {
            options = options.withGroupMembershipOperation(Boolean.TRUE.equals(leave)
                    ? CloseOptions.GroupMembershipOperation.LEAVE_GROUP
                    : CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP);
        }
        boolean closed = running().close(options);
        streams = null;
        return closed;
    }

    private KafkaStreams running() {
        if (streams == null) {
            throw new IllegalStateException("the application is not started");
        }
        return streams;
    }

    private void closeAll() {
        if (streams != null) {
            streams.close(Duration.ofMillis(TIMEOUT_MS));
        }
        admins.values().forEach(Admin::close);
    }
}
