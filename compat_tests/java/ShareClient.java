import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The share-group client of the compatibility suite (KIP-932): kafka-clients 4.x's
 * {@link KafkaShareConsumer} and the share-group admin calls, behind the command loop of
 * {@link CompatClient} (one JSON command a line on stdin, one answer a line on stdout).
 *
 * <p>Consumers live between commands under names, so a scenario interleaves several members
 * of one group: each poll is one command, and in explicit acknowledgement mode the scenario
 * names the records of the last poll to acknowledge and how. A member's heartbeats run on its
 * own background thread, so a member the scenario leaves alone stays in the group (and keeps
 * what it acquired until its locks expire). Compiled only against kafka-clients 4.x, which
 * has the share consumer; CompatClient's classes are on its classpath.
 */
public final class ShareClient {
    private static final int TIMEOUT_MS = 20_000;

    private final Map<String, KafkaShareConsumer<byte[], byte[]>> consumers = new HashMap<>();
    /** Each consumer's records not acknowledged yet, by "topic partition offset" (explicit mode). */
    private final Map<String, Map<String, ConsumerRecord<byte[], byte[]>>> delivered = new HashMap<>();
    private final Map<String, Admin> admins = new HashMap<>();

    public static void main(String[] args) throws Exception {
        ShareClient client = new ShareClient();
        CompatClient.serve(client::handle, client::closeAll);
    }

    private Object handle(Map<String, Object> c) throws Exception {
        String op = (String) c.get("op");
        switch (op) {
            case "share_open": return open(c);
            case "share_poll": return poll(c);
            case "share_acknowledge": return acknowledge(c);
            case "share_commit": return commit(c);
            case "share_lock_timeout": return consumer(c).acquisitionLockTimeoutMs().orElse(null);
            case "share_close":
                try {
                    consumer(c).close(Duration.ofMillis(TIMEOUT_MS));
                } finally {
                    consumers.remove(CompatClient.handleName(c));
                    delivered.remove(CompatClient.handleName(c));
                }
                return null;
            case "set_group_configs": return setGroupConfigs(c);
            case "describe_share_group": return describeShareGroup(c);
            case "list_groups": return listGroups(c);
            case "share_group_offsets": return shareGroupOffsets(c);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /**
     * A share consumer subscribed to the topics. {@code share.acquire.mode=record_limit} makes
     * the broker acquire at most {@code max.poll.records} records per fetch, so a poll returns
     * at most that many and a member holds no more than it was given.
     */
    private Object open(Map<String, Object> c) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, c.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, c.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, c.get("client_id"));
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, c.get("acknowledgement_mode"));
        p.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(CompatClient.num(c.get("max_records"))));
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        CompatClient.putClientConfig(p, c);
        KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(CompatClient.strings(c.get("topics")));
        consumers.put(CompatClient.handleName(c), consumer);
        if ("explicit".equals(c.get("acknowledgement_mode"))) {
            delivered.put(CompatClient.handleName(c), new HashMap<>());
        }
        return null;
    }

    /** One poll: its records in order, each with the delivery count the broker gave it. */
    private Object poll(Map<String, Object> c) {
        Map<String, ConsumerRecord<byte[], byte[]>> last = delivered.get(CompatClient.handleName(c));
        List<Object> records = new ArrayList<>();
        Duration timeout = Duration.ofMillis(((Number) c.get("timeout_ms")).longValue());
        for (ConsumerRecord<byte[], byte[]> r : consumer(c).poll(timeout)) {
            if (last != null) {
                last.put(key(r.topic(), r.partition(), r.offset()), r);
            }
            Map<String, Object> rec = new LinkedHashMap<>();
            rec.put("topic", r.topic());
            rec.put("partition", r.partition());
            rec.put("offset", r.offset());
            rec.put("key", CompatClient.b64(r.key()));
            rec.put("value", CompatClient.b64(r.value()));
            rec.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(null));
            records.add(rec);
        }
        return records;
    }

    /**
     * Acknowledges records the consumer was given and has not acknowledged yet, by their
     * coordinates: [[topic, partition, offset, "ACCEPT" | "RELEASE" | "REJECT" | "RENEW"], ...].
     */
    private Object acknowledge(Map<String, Object> c) {
        Map<String, ConsumerRecord<byte[], byte[]>> last = delivered.getOrDefault(CompatClient.handleName(c), Map.of());
        for (Object o : (List<?>) c.get("acknowledgements")) {
            List<?> a = (List<?>) o;
            String name = key((String) a.get(0), CompatClient.num(a.get(1)), ((Number) a.get(2)).longValue());
            ConsumerRecord<byte[], byte[]> record = last.get(name);
            if (record == null) {
                throw new IllegalArgumentException("no delivered record " + name);
            }
            AcknowledgeType type = AcknowledgeType.valueOf((String) a.get(3));
            consumer(c).acknowledge(record, type);
            if (type != AcknowledgeType.RENEW) { // a renewed record stays acquired, to acknowledge later
                last.remove(name);
            }
        }
        return null;
    }

    /**
     * commitSync: the acknowledgements so far reach the broker. Answers each partition's
     * outcome, [[topic, partition, null or "ExceptionClass: message"], ...].
     */
    private Object commit(Map<String, Object> c) {
        List<Object> result = new ArrayList<>();
        Map<TopicIdPartition, Optional<KafkaException>> outcome = consumer(c).commitSync(Duration.ofMillis(TIMEOUT_MS));
        outcome.forEach((tip, error) -> result.add(Arrays.asList(
                tip.topic(), tip.partition(), error.map(CompatClient::errorText).orElse(null))));
        return result;
    }

    /** incrementalAlterConfigs SET on the GROUP resource: share.record.lock.duration.ms and the like. */
    private Object setGroupConfigs(Map<String, Object> c) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, (String) c.get("group"));
        List<AlterConfigOp> ops = new ArrayList<>();
        ((Map<?, ?>) c.get("configs")).forEach((k, v) -> ops.add(
                new AlterConfigOp(new ConfigEntry((String) k, (String) v), AlterConfigOp.OpType.SET)));
        Map<ConfigResource, Collection<AlterConfigOp>> request = Map.of(resource, ops);
        admin(c).incrementalAlterConfigs(request).all().get();
        return null;
    }

    private Object describeShareGroup(Map<String, Object> c) throws Exception {
        String group = (String) c.get("group");
        ShareGroupDescription d = admin(c).describeShareGroups(List.of(group)).all().get().get(group);
        List<Object> members = new ArrayList<>();
        for (ShareMemberDescription m : d.members()) {
            Map<String, Object> member = new LinkedHashMap<>();
            member.put("member_id", m.consumerId());
            member.put("client_id", m.clientId());
            member.put("host", m.host());
            member.put("member_epoch", m.memberEpoch());
            List<Object> assigned = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                assigned.add(List.of(tp.topic(), tp.partition()));
            }
            member.put("assignment", assigned);
            members.add(member);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("group_id", d.groupId());
        result.put("state", d.groupState().toString());
        result.put("coordinator", d.coordinator() == null ? null : d.coordinator().id());
        result.put("group_epoch", d.groupEpoch());
        result.put("assignment_epoch", d.targetAssignmentEpoch());
        result.put("members", members);
        return result;
    }

    /** listGroups, with types ("SHARE", "CONSUMER", ...) as a filter when given: [[id, type, state], ...]. */
    private Object listGroups(Map<String, Object> c) throws Exception {
        ListGroupsOptions options = new ListGroupsOptions();
        if (c.get("types") != null) {
            Set<GroupType> types = new HashSet<>();
            for (String t : CompatClient.strings(c.get("types"))) {
                types.add(GroupType.valueOf(t));
            }
            options.withTypes(types);
        }
        List<Object> result = new ArrayList<>();
        for (GroupListing g : admin(c).listGroups(options).all().get()) {
            result.add(Arrays.asList(g.groupId(), g.type().map(GroupType::toString).orElse(null),
                    g.groupState().map(Object::toString).orElse(null)));
        }
        return result;
    }

    /** listShareGroupOffsets: [[topic, partition, start offset, lag or null], ...]. */
    private Object shareGroupOffsets(Map<String, Object> c) throws Exception {
        String group = (String) c.get("group");
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin(c)
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get();
        List<Object> result = new ArrayList<>();
        offsets.forEach((tp, info) -> {
            if (info != null) {
                result.add(Arrays.asList(tp.topic(), tp.partition(), info.startOffset(),
                        info.lag().orElse(null)));
            }
        });
        return result;
    }

    private Admin admin(Map<String, Object> c) {
        return CompatClient.admin(admins, c);
    }

    private KafkaShareConsumer<byte[], byte[]> consumer(Map<String, Object> c) {
        return CompatClient.held(consumers, c, "share consumer");
    }

    private void closeAll() {
        consumers.values().forEach(consumer -> consumer.close(Duration.ofSeconds(5)));
        admins.values().forEach(Admin::close);
    }

    private static String key(String topic, int partition, long offset) {
        return topic + " " + partition + " " + offset;
    }
}
