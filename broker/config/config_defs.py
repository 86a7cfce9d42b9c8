"""Every configuration key Odradek understands, with Kafka's names, types and defaults.

Apache Kafka is the specification: a ``server.properties`` written for Kafka should mean the
same here.  Topic-level keys (``retention.ms``) carry the broker-level key they default from
(``log.retention.ms``), exactly as Kafka's DescribeConfigs reports them as synonyms.
Where a default differs from Kafka's, the reason is written next to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from coordinator.config import CoordinatorConfig, TransactionConfig
from log.config import LONG_MAX, LogConfig
from wire.primitives import INT32_MAX

KAFKA_TOPIC_DEFAULTS = LogConfig().to_properties()
"""Kafka's topic-level defaults as the log engine declares them. A broker key that a topic key
inherits in the same unit (``log.segment.bytes`` -> ``segment.bytes``) takes its default from
here, so each default value is written once."""


def _topic_default(topic_key: str) -> str:
    return KAFKA_TOPIC_DEFAULTS[topic_key]


COORDINATOR_DEFAULTS = CoordinatorConfig().to_properties() | TransactionConfig().to_properties()
"""Kafka's group and transaction coordinator defaults as the coordinator declares them (it
reads the same keys back from the broker's config), so each default value is written once."""


class ConfigType(IntEnum):
    """Kafka's ``ConfigType`` as DescribeConfigs v3+ reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Kafka's ``ConfigSource`` in DescribeConfigs responses."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One key: its type, default (as Kafka prints it; None = no value) and meaning."""

    name: str
    type: ConfigType
    default: str | None
    doc: str
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """A topic-level key and the broker-level key whose value it inherits."""

    name: str
    type: ConfigType
    broker_synonym: str
    doc: str
    validator: tuple[str, ...] = ()  # allowed values for enumerations
    default: str | None = None  # used when the broker synonym has no value either


T = ConfigType


def _coordinator_def(name: str, type_: ConfigType, doc: str) -> ConfigDef:
    """A key the coordinator reads, with the default it declares (``COORDINATOR_DEFAULTS``)."""
    return ConfigDef(name, type_, COORDINATOR_DEFAULTS[name], doc)


BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("node.id", T.INT, "1", "This broker's id. Kafka requires it; a single node defaults to 1."),
        ConfigDef("broker.id", T.INT, "-1", "Legacy alias of node.id."),
        ConfigDef("process.roles", T.LIST, "broker,controller", "Accepted for compatibility."),
        ConfigDef(
            "cluster.id", T.STRING, None, "Cluster id; generated at first start and kept in meta.properties."
        ),
        ConfigDef(
            "listeners",
            T.LIST,
            "PLAINTEXT://localhost:9092",
            "Where to listen. Kafka binds all interfaces by default; Odradek binds localhost "
            "so a fresh start does not expose an unauthenticated broker to the network.",
        ),
        ConfigDef(
            "advertised.listeners", T.STRING, None, "Addresses clients are told to use (default: listeners)."
        ),
        ConfigDef(
            "listener.security.protocol.map",
            T.STRING,
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "Security protocol of each listener name (Kafka's default): PLAINTEXT, SSL, "
            "SASL_PLAINTEXT or SASL_SSL.",
        ),
        ConfigDef(
            "cluster.etcd.endpoints",
            T.STRING,
            None,
            "Odradek's own: etcd://host:port,... of the etcd cluster holding a multi-broker cluster's "
            "metadata (docs/CLUSTER.md). Unset: a single broker, as Kafka's combined mode on one node.",
        ),
        ConfigDef(
            "cluster.etcd.prefix", T.STRING, "/odradek", "Odradek's own: the etcd key prefix of this cluster."
        ),
        ConfigDef(
            "broker.rack",
            T.STRING,
            None,
            "Rack of this broker, for rack-aware replica placement (with num.processes > 1: the "
            "machine's host name unless set).",
        ),
        ConfigDef(
            "num.processes",
            T.STRING,
            "1",
            "Odradek's own: broker processes this machine runs, each a broker with its own node id "
            "(node.id, node.id+1, ...), so that a machine's cores all serve; auto = the usable cores. "
            "docs/PROCESSES.md.",
        ),
        ConfigDef(
            "shared.listeners",
            T.LIST,
            "",
            "Odradek's own, set by num.processes > 1: listeners that every broker process of the "
            "machine binds together (SO_REUSEPORT), each served as the listener of the same name in "
            "listeners, so that clients bootstrap from one address; never advertised.",
        ),
        ConfigDef(
            "broker.machine",
            T.STRING,
            None,
            "Odradek's own, set by num.processes > 1: the machine this broker runs on; two replicas "
            "of a partition are never placed on brokers of one machine. Unset: a machine of its own.",
        ),
        ConfigDef(
            "replica.selector.class",
            T.STRING,
            None,
            "org.apache.kafka.common.replica.RackAwareReplicaSelector lets consumers fetch from the "
            "replica in their rack (client.rack, KIP-392); unset, as in Kafka, they read from leaders.",
        ),
        ConfigDef(
            "broker.session.timeout.ms",
            T.INT,
            "9000",
            "A cluster member whose heartbeats stop for this long is declared dead (its etcd lease expires).",
        ),
        ConfigDef(
            "broker.heartbeat.interval.ms", T.INT, "2000", "Interval of a cluster member's heartbeats."
        ),
        ConfigDef(
            "controlled.shutdown.enable",
            T.BOOLEAN,
            "true",
            "On SIGTERM, have the controller move this broker's leaderships and ISR places first.",
        ),
        ConfigDef(
            "controlled.shutdown.max.retries",
            T.INT,
            "3",
            "Kafka 3.x's bound of a controlled shutdown (Kafka 4 dropped it with ZooKeeper): attempts "
            "before the broker stops anyway.",
        ),
        ConfigDef(
            "controlled.shutdown.retry.backoff.ms",
            T.LONG,
            "5000",
            "How long each controlled shutdown attempt waits for the controller (Kafka 3.x's key).",
        ),
        ConfigDef(
            "auto.leader.rebalance.enable", T.BOOLEAN, "true", "Move leaderships back to preferred replicas."
        ),
        ConfigDef(
            "leader.imbalance.check.interval.seconds", T.LONG, "300", "How often the controller checks that."
        ),
        ConfigDef(
            "leader.imbalance.per.broker.percentage",
            T.INT,
            "10",
            "Share of a broker's preferred partitions led elsewhere that triggers the rebalance.",
        ),
        ConfigDef("security.inter.broker.protocol", T.STRING, "PLAINTEXT", "Accepted for compatibility."),
        ConfigDef(
            "inter.broker.listener.name",
            T.STRING,
            None,
            "The listener other brokers reach this one on (followers fetch there); default the first listener.",
        ),
        ConfigDef(
            "replica.lag.time.max.ms",
            T.LONG,
            "30000",
            "A follower that has not caught up to the leader's log end for this long leaves the ISR.",
        ),
        ConfigDef("replica.fetch.wait.max.ms", T.INT, "500", "How long a follower's fetch waits for data."),
        ConfigDef("replica.fetch.min.bytes", T.INT, "1", "Bytes a follower's fetch waits for."),
        ConfigDef(
            "replica.fetch.max.bytes",
            T.INT,
            "1048576",
            "Bytes a follower fetches per partition (at least one whole batch, KIP-74).",
        ),
        ConfigDef(
            "replica.fetch.response.max.bytes", T.INT, "10485760", "Bytes a follower fetches per request."
        ),
        ConfigDef(
            "replica.socket.timeout.ms",
            T.INT,
            "30000",
            "How long a follower waits for its leader's answer before reconnecting.",
        ),
        ConfigDef(
            "replica.fetch.backoff.ms",
            T.INT,
            "1000",
            "How long a follower waits after a fetch error or a lost connection before retrying.",
        ),
        ConfigDef(
            "sasl.enabled.mechanisms",
            T.LIST,
            "GSSAPI",
            "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. "
            "Kafka's default GSSAPI (Kerberos) is not implemented: a SASL listener left at it is "
            "refused at start-up.",
        ),
        ConfigDef("sasl.mechanism.inter.broker.protocol", T.STRING, "GSSAPI", "Accepted for compatibility."),
        ConfigDef(
            "sasl.server.max.receive.size",
            T.INT,
            "524288",
            "Largest SASL token accepted before authentication.",
        ),
        ConfigDef(
            "connections.max.reauth.ms",
            T.LONG,
            "0",
            "KIP-368 session lifetime: clients re-authenticate before it ends or are disconnected (0: never).",
        ),
        ConfigDef(
            "connection.failed.authentication.delay.ms",
            T.INT,
            "100",
            "Delay before answering a failed authentication (and closing), to slow password guessing.",
        ),
        ConfigDef(
            "authentication.timeout.ms",
            T.INT,
            "10000",
            "Odradek's own: a TLS handshake and SASL exchange must finish within this, or the "
            "connection is closed (Kafka waits for connections.max.idle.ms).",
        ),
        ConfigDef("ssl.keystore.type", T.STRING, "JKS", "Keystore format; Odradek reads PEM (set PEM)."),
        ConfigDef(
            "ssl.keystore.location", T.STRING, None, "PEM file with the private key and certificate chain."
        ),
        ConfigDef("ssl.keystore.password", T.PASSWORD, None, "Unused for PEM keystores.", sensitive=True),
        ConfigDef(
            "ssl.keystore.certificate.chain", T.PASSWORD, None, "PEM certificate chain text.", sensitive=True
        ),
        ConfigDef("ssl.keystore.key", T.PASSWORD, None, "PEM private key text.", sensitive=True),
        ConfigDef(
            "ssl.key.password", T.PASSWORD, None, "Password of an encrypted private key.", sensitive=True
        ),
        ConfigDef("ssl.truststore.type", T.STRING, "JKS", "Truststore format; Odradek reads PEM (set PEM)."),
        ConfigDef(
            "ssl.truststore.location", T.STRING, None, "PEM file of CAs trusted for client certificates."
        ),
        ConfigDef("ssl.truststore.password", T.PASSWORD, None, "Unused for PEM truststores.", sensitive=True),
        ConfigDef(
            "ssl.truststore.certificates", T.PASSWORD, None, "PEM text of trusted CAs.", sensitive=True
        ),
        ConfigDef("ssl.client.auth", T.STRING, "none", "Client certificates: required, requested or none."),
        ConfigDef(
            "ssl.enabled.protocols", T.LIST, "TLSv1.2,TLSv1.3", "TLS versions spoken (1.2 and 1.3 only)."
        ),
        ConfigDef("ssl.protocol", T.STRING, "TLSv1.3", "Accepted for compatibility."),
        ConfigDef("ssl.endpoint.identification.algorithm", T.STRING, "https", "Accepted for compatibility."),
        ConfigDef(
            "ssl.principal.mapping.rules",
            T.STRING,
            "DEFAULT",
            "How a client certificate's subject becomes a principal: DEFAULT or RULE:pattern/replacement/[LU].",
        ),
        ConfigDef(
            "sasl.server.callback.handler.class",
            T.CLASS,
            None,
            "OAuthBearerValidatorCallbackHandler (per listener and mechanism) validates JWTs against a JWKS.",
        ),
        ConfigDef(
            "sasl.oauthbearer.jwks.endpoint.url", T.STRING, None, "JWKS of the token issuer (a file: URL)."
        ),
        ConfigDef("sasl.oauthbearer.expected.audience", T.LIST, None, "Audiences a token must name (any)."),
        ConfigDef("sasl.oauthbearer.expected.issuer", T.STRING, None, "Issuer a token must name."),
        ConfigDef("sasl.oauthbearer.sub.claim.name", T.STRING, "sub", "Claim holding the principal name."),
        ConfigDef(
            "sasl.oauthbearer.scope.claim.name", T.STRING, "scope", "Claim holding the token's scopes."
        ),
        ConfigDef(
            "sasl.oauthbearer.clock.skew.seconds", T.INT, "30", "Tolerated clock difference with the issuer."
        ),
        ConfigDef("log.dirs", T.STRING, None, "Data directories. Falls back to log.dir."),
        ConfigDef(
            "log.dir",
            T.STRING,
            "./odradek-data",
            "Data directory when log.dirs is unset. Kafka uses /tmp/kafka-logs; Odradek keeps its "
            "data in the working directory so that a reboot does not wipe acknowledged records.",
        ),
        ConfigDef(
            "num.partitions", T.INT, "1", "Partitions of auto-created topics and of CreateTopics with -1."
        ),
        ConfigDef("default.replication.factor", T.INT, "1", "Replication factor of auto-created topics."),
        ConfigDef(
            "auto.create.topics.enable", T.BOOLEAN, "true", "Create unknown topics on Metadata requests."
        ),
        ConfigDef(
            "authorizer.class.name",
            T.STRING,
            "",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer switches the built-in "
            "authorizer on (ACLs kept in acls.json in the data directory, or in etcd for a cluster); empty, as in Kafka, "
            "means no authorizer: every request is allowed and the ACL APIs answer SECURITY_DISABLED.",
        ),
        ConfigDef(
            "super.users",
            T.LIST,
            "",
            "Principals (e.g. User:admin) allowed everything whatever the ACLs say, separated by semicolons.",
        ),
        ConfigDef(
            "allow.everyone.if.no.acl.found",
            T.BOOLEAN,
            "false",
            "Whether a resource that no ACL covers is open to everyone (true) or only to super users.",
        ),
        ConfigDef(
            "authorizer.max.acls",
            T.INT,
            "100000",
            "Odradek-specific. Most ACLs the authorizer holds; CreateAcls beyond it is refused "
            "with POLICY_VIOLATION. Kafka has no bound.",
        ),
        ConfigDef(
            "max.request.partition.size.limit",
            T.INT,
            "2000",
            "Most partitions one DescribeTopicPartitions answer lists; clients page through the rest.",
        ),
        ConfigDef(
            "max.partitions.per.request",
            T.INT,
            "10000",
            "Odradek-specific. Most partitions one CreateTopics or CreatePartitions request (or an "
            "auto-creation) may add; more is refused with POLICY_VIOLATION before anything is "
            "created. Kafka's controller hard-codes the same bound of 10,000; here it can be set.",
        ),
        ConfigDef(
            "max.partitions.per.broker",
            T.INT,
            "100000",
            "Odradek-specific. Most partitions all topics together may have; a request that would "
            "pass it is refused with POLICY_VIOLATION. Every partition costs files and start-up "
            "time, so an unbounded total lets clients exhaust descriptors and disk. Kafka has no "
            "such key; 100,000 leaves room for the largest clusters a single node serves.",
        ),
        ConfigDef("delete.topic.enable", T.BOOLEAN, "true", "Allow DeleteTopics."),
        ConfigDef(
            "telemetry.max.bytes",
            T.INT,
            "1048576",
            "Largest client metrics payload (KIP-714) one PushTelemetry may carry, compressed as "
            "sent and decompressed alike; GetTelemetrySubscriptions tells clients this bound.",
        ),
        ConfigDef("socket.request.max.bytes", T.INT, "104857600", "Largest request frame accepted."),
        ConfigDef(
            "queued.max.request.bytes",
            T.LONG,
            "268435456",
            "Bytes of requests being received or handled at once, broker-wide; a connection whose "
            "next frame does not fit waits (backpressure), and a frame larger than the whole budget "
            "closes its connection. Kafka's default is -1 (unbounded), which lets clients choose the "
            "broker's memory use; Odradek defaults to 256 MiB, above socket.request.max.bytes so that "
            "every accepted frame fits. -1 or 0 means unbounded.",
        ),
        ConfigDef(
            "socket.request.read.timeout.ms",
            T.LONG,
            "30000",
            "Odradek-specific (Kafka has no such key). Once a request's size prefix has arrived and "
            "its memory is reserved, the whole request must arrive within this time or the "
            "connection is closed, so slow senders cannot hold memory budget and descriptors. "
            "30 s matches the clients' default request.timeout.ms, after which they give up anyway.",
        ),
        ConfigDef(
            "max.connections",
            T.INT,
            "-1",
            "Most concurrent client connections; more are accepted and closed at once. Kafka's "
            "default is 2147483647. Odradek's -1 means derived from the descriptor limit: the soft "
            "RLIMIT_NOFILE minus log.open.files.max (default half the limit) minus 64 kept aside, "
            "so that a connection flood is refused instead of exhausting descriptors.",
        ),
        ConfigDef(
            "max.connections.per.ip",
            T.INT,
            str(INT32_MAX),
            "Most concurrent connections from one address (Kafka's default, so in effect bounded "
            "by max.connections; lower it where clients come from many addresses).",
        ),
        ConfigDef("connections.max.idle.ms", T.LONG, "600000", "Idle connections are closed after this."),
        ConfigDef(
            "queued.max.requests",
            T.INT,
            "500",
            "Accepted for compatibility (one request at a time per connection).",
        ),
        ConfigDef(
            "num.network.threads", T.INT, "3", "Accepted for compatibility; Odradek is single-threaded."
        ),
        ConfigDef("num.io.threads", T.INT, "8", "Accepted for compatibility; Odradek is single-threaded."),
        ConfigDef("fetch.max.bytes", T.INT, "57671680", "Cap on the bytes one Fetch response carries."),
        ConfigDef("quota.window.num", T.INT, "11", "Samples a client quota's rate is measured over."),
        ConfigDef("quota.window.size.seconds", T.INT, "1", "The time span of each client quota sample."),
        ConfigDef("log.retention.hours", T.INT, "168", "Retention time in hours (lowest precedence)."),
        ConfigDef("log.retention.minutes", T.INT, None, "Retention time in minutes (overrides hours)."),
        ConfigDef("log.retention.ms", T.LONG, None, "Retention time in ms (overrides minutes and hours)."),
        ConfigDef(
            "log.retention.bytes",
            T.LONG,
            _topic_default("retention.bytes"),
            "Per-partition size limit; -1 = none.",
        ),
        ConfigDef("log.retention.check.interval.ms", T.LONG, "300000", "How often retention runs."),
        ConfigDef("log.roll.hours", T.INT, "168", "Roll a segment after this many hours."),
        ConfigDef("log.roll.ms", T.LONG, None, "Roll a segment after this many ms (overrides hours)."),
        ConfigDef("log.roll.jitter.hours", T.INT, "0", "Random jitter subtracted from roll time."),
        ConfigDef("log.roll.jitter.ms", T.LONG, None, "Jitter in ms (overrides hours)."),
        ConfigDef("log.segment.bytes", T.INT, _topic_default("segment.bytes"), "Segment size."),
        ConfigDef(
            "log.segment.delete.delay.ms",
            T.LONG,
            _topic_default("file.delete.delay.ms"),
            "Delay before a deleted segment's files go.",
        ),
        ConfigDef(
            "log.index.interval.bytes",
            T.INT,
            _topic_default("index.interval.bytes"),
            "Bytes between offset-index entries.",
        ),
        ConfigDef(
            "log.index.size.max.bytes",
            T.INT,
            _topic_default("segment.index.bytes"),
            "Largest index file; a full index rolls.",
        ),
        ConfigDef(
            "log.flush.interval.messages",
            T.LONG,
            _topic_default("flush.messages"),
            "Fsync after this many messages.",
        ),
        ConfigDef("log.flush.interval.ms", T.LONG, None, "Fsync data older than this (default: no fsync)."),
        ConfigDef("log.flush.scheduler.interval.ms", T.LONG, str(LONG_MAX), "Flush check interval."),
        ConfigDef(
            "log.flush.offset.checkpoint.interval.ms",
            T.INT,
            "60000",
            "How often recovery points are persisted.",
        ),
        ConfigDef(
            "log.open.files.max",
            T.INT,
            "-1",
            "Odradek-specific (Kafka keeps every segment file open and needs ulimit -n raised "
            "with the partition count). Most segment file descriptors held at once: files are "
            "opened on use and the least recently used ones closed again, so any number of "
            "partitions starts and serves within the descriptor limit. -1 (the default) means "
            "half the soft RLIMIT_NOFILE at start-up, at least 64; the other half is left for "
            "connections.",
        ),
        ConfigDef(
            "log.offline.retry.ms",
            T.LONG,
            "10000",
            "Odradek-specific (Kafka has no such key: there a partition taken offline by a disk error "
            "stays offline until the broker restarts). How often an offline partition checks that its "
            "disk takes writes again (a full disk that was freed) and, if so, recovers its files as at "
            "start-up and comes back online. Values below 100 are read as 100.",
        ),
        ConfigDef(
            "log.cleanup.policy", T.LIST, _topic_default("cleanup.policy"), "delete, compact, or both."
        ),
        ConfigDef("log.cleaner.enable", T.BOOLEAN, "true", "Run the log cleaner for compacted topics."),
        ConfigDef("log.cleaner.threads", T.INT, "1", "Accepted for compatibility."),
        ConfigDef("log.cleaner.backoff.ms", T.LONG, "15000", "Cleaner sleep when nothing is cleanable."),
        ConfigDef(
            "log.cleaner.delete.retention.ms",
            T.LONG,
            _topic_default("delete.retention.ms"),
            "Tombstone retention.",
        ),
        ConfigDef(
            "log.cleaner.min.cleanable.ratio",
            T.DOUBLE,
            _topic_default("min.cleanable.dirty.ratio"),
            "Dirty ratio that triggers cleaning.",
        ),
        ConfigDef(
            "log.cleaner.min.compaction.lag.ms",
            T.LONG,
            _topic_default("min.compaction.lag.ms"),
            "Minimum age before compaction.",
        ),
        ConfigDef(
            "log.cleaner.max.compaction.lag.ms",
            T.LONG,
            _topic_default("max.compaction.lag.ms"),
            "Maximum age before compaction.",
        ),
        ConfigDef(
            "log.message.timestamp.type",
            T.STRING,
            _topic_default("message.timestamp.type"),
            "CreateTime or LogAppendTime.",
        ),
        ConfigDef(
            "log.message.timestamp.before.max.ms",
            T.LONG,
            _topic_default("message.timestamp.before.max.ms"),
            "Oldest accepted CreateTime.",
        ),
        ConfigDef(
            "log.message.timestamp.after.max.ms",
            T.LONG,
            _topic_default("message.timestamp.after.max.ms"),
            "Furthest future CreateTime (Kafka 4).",
        ),
        ConfigDef("log.preallocate", T.BOOLEAN, "false", "Preallocate segment files."),
        ConfigDef(
            "message.max.bytes", T.INT, _topic_default("max.message.bytes"), "Largest record batch accepted."
        ),
        ConfigDef(
            "compression.type",
            T.STRING,
            _topic_default("compression.type"),
            "Broker-side compression (producer = keep).",
        ),
        ConfigDef(
            "min.insync.replicas",
            T.INT,
            _topic_default("min.insync.replicas"),
            "Replicas that must ack acks=all.",
        ),
        ConfigDef(
            "unclean.leader.election.enable",
            T.BOOLEAN,
            "false",
            "Let an out-of-sync replica lead when no in-sync one is alive (may lose acknowledged records).",
        ),
        _coordinator_def("offsets.topic.num.partitions", T.INT, "Partitions of __consumer_offsets."),
        ConfigDef(
            "offsets.commit.timeout.ms",
            T.INT,
            "5000",
            "How long a cluster's offset commit waits for the in-sync replicas of __consumer_offsets.",
        ),
        ConfigDef(
            "offsets.topic.replication.factor",
            T.SHORT,
            "1",
            "Replication of __consumer_offsets. Kafka defaults to 3, which a single node cannot meet.",
        ),
        ConfigDef("offsets.topic.segment.bytes", T.INT, "104857600", "Segment size of __consumer_offsets."),
        _coordinator_def(
            "offsets.retention.minutes", T.INT, "Committed offsets of empty groups expire after this."
        ),
        _coordinator_def("offsets.retention.check.interval.ms", T.LONG, "How often offsets expire."),
        ConfigDef("offsets.load.buffer.size", T.INT, "5242880", "Accepted for compatibility."),
        _coordinator_def("group.initial.rebalance.delay.ms", T.INT, "Wait for more members of a new group."),
        _coordinator_def(
            "group.min.session.timeout.ms", T.INT, "Smallest session timeout a member may ask for."
        ),
        _coordinator_def(
            "group.max.session.timeout.ms", T.INT, "Largest session timeout a member may ask for."
        ),
        _coordinator_def("group.max.size", T.INT, "Most members in a classic group."),
        _coordinator_def("group.coordinator.rebalance.protocols", T.LIST, "Group protocols enabled."),
        _coordinator_def("group.consumer.session.timeout.ms", T.INT, "KIP-848 member session timeout."),
        _coordinator_def("group.consumer.heartbeat.interval.ms", T.INT, "KIP-848 heartbeat interval."),
        _coordinator_def("group.consumer.max.size", T.INT, "Most members in a consumer group."),
        ConfigDef(
            "group.consumer.min.session.timeout.ms",
            T.INT,
            "45000",
            "Lowest consumer.session.timeout.ms of a group.",
        ),
        ConfigDef(
            "group.consumer.max.session.timeout.ms",
            T.INT,
            "60000",
            "Highest consumer.session.timeout.ms of a group.",
        ),
        ConfigDef(
            "group.consumer.min.heartbeat.interval.ms",
            T.INT,
            "5000",
            "Lowest consumer.heartbeat.interval.ms of a group.",
        ),
        ConfigDef(
            "group.consumer.max.heartbeat.interval.ms",
            T.INT,
            "15000",
            "Highest consumer.heartbeat.interval.ms of a group.",
        ),
        _coordinator_def("group.consumer.assignors", T.LIST, "KIP-848 server-side assignors."),
        _coordinator_def("group.share.session.timeout.ms", T.INT, "Share group member session timeout."),
        _coordinator_def("group.share.heartbeat.interval.ms", T.INT, "Share group heartbeat interval."),
        _coordinator_def("group.share.max.size", T.INT, "Most members in a share group."),
        *(
            ConfigDef(key, T.INT, default, doc)
            for key, default, doc in (
                (
                    "group.share.min.session.timeout.ms",
                    "45000",
                    "Lowest share.session.timeout.ms of a group.",
                ),
                (
                    "group.share.max.session.timeout.ms",
                    "60000",
                    "Highest share.session.timeout.ms of a group.",
                ),
                (
                    "group.share.min.heartbeat.interval.ms",
                    "5000",
                    "Lowest share.heartbeat.interval.ms of a group.",
                ),
                (
                    "group.share.max.heartbeat.interval.ms",
                    "15000",
                    "Highest share.heartbeat.interval.ms of a group.",
                ),
                (
                    "group.share.record.lock.duration.ms",
                    "30000",
                    "How long a share consumer holds acquired records.",
                ),
                ("group.share.min.record.lock.duration.ms", "15000", "Lowest share.record.lock.duration.ms."),
                (
                    "group.share.max.record.lock.duration.ms",
                    "60000",
                    "Highest share.record.lock.duration.ms.",
                ),
                ("group.share.delivery.count.limit", "5", "Deliveries of a record before it is archived."),
                ("group.share.min.delivery.count.limit", "2", "Lowest share.delivery.count.limit."),
                ("group.share.max.delivery.count.limit", "10", "Highest share.delivery.count.limit."),
                ("group.share.partition.max.record.locks", "2000", "Records in flight per share-partition."),
                (
                    "group.share.min.partition.max.record.locks",
                    "100",
                    "Lowest share.partition.max.record.locks.",
                ),
                (
                    "group.share.max.partition.max.record.locks",
                    "10000",
                    "Highest share.partition.max.record.locks.",
                ),
                ("group.share.max.share.sessions", "2000", "Share sessions a broker holds at once."),
                ("share.coordinator.state.topic.num.partitions", "50", "Partitions of __share_group_state."),
                ("share.coordinator.state.topic.min.isr", "2", "min.insync.replicas of __share_group_state."),
                (
                    "share.coordinator.state.topic.segment.bytes",
                    "104857600",
                    "Segment size of __share_group_state.",
                ),
            )
        ),
        ConfigDef("group.share.assignors", T.LIST, "simple", "Share group server-side assignors."),
        _coordinator_def("group.streams.session.timeout.ms", T.INT, "Streams group member session timeout."),
        _coordinator_def("group.streams.heartbeat.interval.ms", T.INT, "Streams group heartbeat interval."),
        _coordinator_def("group.streams.max.size", T.INT, "Most members in a streams group."),
        _coordinator_def("group.streams.num.standby.replicas", T.INT, "Standby tasks per active task."),
        _coordinator_def(
            "group.streams.initial.rebalance.delay.ms",
            T.INT,
            "How long a new streams group waits for more members before its first assignment.",
        ),
        _coordinator_def(
            "group.streams.assignment.interval.ms",
            T.INT,
            "Least time between two target assignments of a streams group.",
        ),
        *(
            ConfigDef(key, T.INT, default, doc)
            for key, default, doc in (
                (
                    "group.streams.min.session.timeout.ms",
                    "45000",
                    "Lowest streams.session.timeout.ms of a group.",
                ),
                (
                    "group.streams.max.session.timeout.ms",
                    "60000",
                    "Highest streams.session.timeout.ms of a group.",
                ),
                (
                    "group.streams.min.heartbeat.interval.ms",
                    "5000",
                    "Lowest streams.heartbeat.interval.ms of a group.",
                ),
                (
                    "group.streams.max.heartbeat.interval.ms",
                    "15000",
                    "Highest streams.heartbeat.interval.ms of a group.",
                ),
                (
                    "group.streams.max.standby.replicas",
                    "2",
                    "Highest streams.num.standby.replicas of a group.",
                ),
                (
                    "group.streams.min.assignment.interval.ms",
                    "0",
                    "Lowest streams.assignment.interval.ms of a group.",
                ),
                (
                    "group.streams.max.assignment.interval.ms",
                    "15000",
                    "Highest streams.assignment.interval.ms of a group.",
                ),
            )
        ),
        ConfigDef(
            "share.coordinator.state.topic.replication.factor",
            T.SHORT,
            "1",
            "Replication of __share_group_state (1 as the other internal topics here: a single node).",
        ),
        _coordinator_def("transaction.state.log.num.partitions", T.INT, "Partitions of __transaction_state."),
        ConfigDef(
            "transaction.state.log.replication.factor", T.SHORT, "1", "Replication of __transaction_state."
        ),
        ConfigDef(
            "transaction.state.log.min.isr",
            T.INT,
            "2",
            "min.insync.replicas of __transaction_state in a cluster.",
        ),
        _coordinator_def("transactional.id.expiration.ms", T.INT, "Idle transactional id expiry."),
        ConfigDef(
            "transaction.state.log.segment.bytes", T.INT, "104857600", "Segment size of __transaction_state."
        ),
        _coordinator_def(
            "transaction.max.timeout.ms", T.INT, "Longest transaction timeout a producer may ask."
        ),
        _coordinator_def(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            T.INT,
            "How often idle transactional ids expire.",
        ),
        ConfigDef(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            T.INT,
            "10000",
            "Accepted for compatibility: Odradek aborts each transaction at its own deadline.",
        ),
        ConfigDef("producer.id.expiration.ms", T.INT, "86400000", "Idle idempotent producer state expiry."),
        # No default, as in Kafka (unset means unthrottled), so no DEFAULT_CONFIG synonym.
        *(
            ConfigDef(key, T.LONG, None, doc)
            for key, doc in (
                (
                    "leader.replication.throttled.rate",
                    "Bytes/s a leader serves throttled replicas (reassignments).",
                ),
                ("follower.replication.throttled.rate", "Bytes/s a follower fetches for throttled replicas."),
                (
                    "replica.alter.log.dirs.io.max.bytes.per.second",
                    "Accepted for compatibility: no JBOD moves.",
                ),
            )
        ),
        ConfigDef(
            "max.incremental.fetch.session.cache.slots",
            T.INT,
            "1000",
            "The most incremental fetch sessions (KIP-227) the broker keeps; 0 declines every "
            "session, so clients send full fetches.",
        ),
        ConfigDef(
            "max.incremental.fetch.session.cache.partitions",
            T.INT,
            "200000",
            "Odradek-specific. The most partitions all fetch sessions together may hold. Each "
            "session is memory a client makes the broker keep (about 350 bytes a partition, and "
            "a session may name partitions that do not exist), which Kafka bounds only by the "
            "slots; a session past this is declined or closed, and its client sends full "
            "fetches. 200,000 holds two consumers of every partition max.partitions.per.broker "
            "allows (about 70 MB at most).",
        ),
        ConfigDef(
            "metrics.listener",
            T.STRING,
            "",
            "Odradek-specific: where to serve Prometheus metrics, http://host:port (e.g. "
            "http://:9404, an empty host meaning every interface). Empty (the default): no endpoint, "
            "as Kafka exposes nothing until a JMX port or exporter is set up, and an extra open "
            "port that tells anyone the topic and group names is the operator's choice.",
        ),
        ConfigDef(
            "metrics.partition.series.max",
            T.INT,
            "10000",
            "Odradek-specific: most partitions (and group/partition pairs) whose log and lag gauges "
            "one scrape exports; a scrape runs on the event loop, so this bounds its cost. "
            "odradek_metrics_series_truncated says when it cut.",
        ),
        ConfigDef(
            "log.requests.enable",
            T.BOOLEAN,
            "false",
            "Odradek-specific (Kafka: the kafka.request.logger log level): log every request at INFO "
            "on the odradek.requests logger, one JSON line with client id, address, API, version, "
            "correlation id and latency.",
        ),
        ConfigDef(
            "log.slow.request.ms",
            T.LONG,
            "10000",
            "Odradek-specific: log a request whose answer took longer than this at WARNING (the "
            "request log's line), not counting a Fetch's max.wait.ms or a JoinGroup's rebalance "
            "timeout. -1 turns it off. 10 s is a third of the clients' request.timeout.ms: such a "
            "request is on its way to a client timeout.",
        ),
    )
}


TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef(
            "cleanup.policy", T.LIST, "log.cleanup.policy", "delete and/or compact.", ("delete", "compact")
        ),
        TopicConfigDef(
            "compression.type",
            T.STRING,
            "compression.type",
            "Compression on the broker.",
            ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        TopicConfigDef(
            "delete.retention.ms", T.LONG, "log.cleaner.delete.retention.ms", "Tombstone retention."
        ),
        TopicConfigDef(
            "file.delete.delay.ms", T.LONG, "log.segment.delete.delay.ms", "Segment delete delay."
        ),
        TopicConfigDef("flush.messages", T.LONG, "log.flush.interval.messages", "Fsync every N messages."),
        TopicConfigDef(
            "flush.ms", T.LONG, "log.flush.interval.ms", "Fsync interval.", default=_topic_default("flush.ms")
        ),
        TopicConfigDef("index.interval.bytes", T.INT, "log.index.interval.bytes", "Offset index density."),
        TopicConfigDef(
            "max.compaction.lag.ms", T.LONG, "log.cleaner.max.compaction.lag.ms", "Compaction lag cap."
        ),
        TopicConfigDef("max.message.bytes", T.INT, "message.max.bytes", "Largest record batch."),
        TopicConfigDef(
            "message.timestamp.type",
            T.STRING,
            "log.message.timestamp.type",
            "Timestamp type.",
            ("CreateTime", "LogAppendTime"),
        ),
        TopicConfigDef(
            "message.timestamp.before.max.ms",
            T.LONG,
            "log.message.timestamp.before.max.ms",
            "Oldest accepted CreateTime.",
        ),
        TopicConfigDef(
            "message.timestamp.after.max.ms",
            T.LONG,
            "log.message.timestamp.after.max.ms",
            "Furthest future CreateTime.",
        ),
        TopicConfigDef(
            "min.cleanable.dirty.ratio", T.DOUBLE, "log.cleaner.min.cleanable.ratio", "Dirty ratio."
        ),
        TopicConfigDef(
            "min.compaction.lag.ms", T.LONG, "log.cleaner.min.compaction.lag.ms", "Compaction lag."
        ),
        TopicConfigDef("min.insync.replicas", T.INT, "min.insync.replicas", "Replicas for acks=all."),
        TopicConfigDef("preallocate", T.BOOLEAN, "log.preallocate", "Preallocate segments."),
        TopicConfigDef("retention.bytes", T.LONG, "log.retention.bytes", "Partition size limit."),
        TopicConfigDef("retention.ms", T.LONG, "log.retention.ms", "Retention time."),
        TopicConfigDef("segment.bytes", T.INT, "log.segment.bytes", "Segment size."),
        TopicConfigDef("segment.index.bytes", T.INT, "log.index.size.max.bytes", "Index size."),
        TopicConfigDef("segment.jitter.ms", T.LONG, "log.roll.jitter.ms", "Roll jitter."),
        TopicConfigDef("segment.ms", T.LONG, "log.roll.ms", "Roll time."),
        TopicConfigDef(
            "unclean.leader.election.enable",
            T.BOOLEAN,
            "unclean.leader.election.enable",
            "Accepted for compatibility.",
        ),
        # Kafka's throttled-replica lists have no broker-level key: each is its own synonym.
        *(
            TopicConfigDef(
                key,
                T.LIST,
                key,
                "Replicas (partition:broker, or *) the replication throttle rates apply to.",
                default="",
            )
            for key in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
        ),
    )
}

# Broker keys whose value, when unset, comes from a coarser-grained key (Kafka's precedence:
# ms over minutes over hours).
DERIVED_MS_KEYS: dict[str, tuple[tuple[str, int], ...]] = {
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.roll.ms": (("log.roll.hours", 3_600_000),),
    "log.roll.jitter.ms": (("log.roll.jitter.hours", 3_600_000),),
}

LIVE_BROKER_KEYS: frozenset[str] = frozenset(
    {d.broker_synonym for d in TOPIC_CONFIGS.values() if d.broker_synonym in BROKER_CONFIGS}
    | {
        "log.cleaner.backoff.ms",  # the cleaner reads it before each sleep
        "producer.id.expiration.ms",  # the checkpoint loop reads it each round
        "leader.replication.throttled.rate",  # reassignment throttles (kafka-reassign-partitions
        "follower.replication.throttled.rate",  # --throttle), read at every check
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)
"""The dynamic broker keys that take effect at once here (cluster default or per node): the
broker-level synonyms of topic keys (open logs are reconfigured at once) and keys read where
they are used. AlterConfigs accepts every key Kafka lets change at runtime
(``broker.config.kafka_dynamic_keys``, whose docstring lists what the others do not do here); only
these reach the broker's effective config (:meth:`broker.config.config.BrokerConfig.get`)."""
