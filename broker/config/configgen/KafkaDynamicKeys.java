// Prints, as one JSON object, what Apache Kafka's broker says about its dynamic configs: every key
// DynamicBrokerConfig lets AlterConfigs change, with its type, default, update mode and validator,
// and the sets its checks use. Run by `python -m broker.config.configgen` against Kafka's jars; Odradek
// commits only the Python module generated from this output (broker/config/kafka_dynamic_keys.py).

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.server.DynamicThreadPool;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.QuotaConfig;
import org.apache.kafka.storage.internals.log.LogCleaner;

public final class KafkaDynamicKeys {
    private KafkaDynamicKeys() {}

    public static void main(String[] args) throws Exception {
        Map<String, ConfigDef.ConfigKey> brokerKeys = AbstractKafkaConfig.CONFIG_DEF.configKeys();
        Map<String, ConfigDef.ConfigKey> quotaKeys = QuotaConfig.brokerQuotaConfigs().configKeys();
        List<String> keys = new ArrayList<>();
        for (Map.Entry<String, String> mode : new TreeMap<>(DynamicBrokerConfig.dynamicConfigUpdateModes()).entrySet()) {
            ConfigDef.ConfigKey key = brokerKeys.getOrDefault(mode.getKey(), quotaKeys.get(mode.getKey()));
            if (key == null) {
                throw new IllegalStateException("no definition for dynamic key " + mode.getKey());
            }
            keys.add(keyJson(key, mode.getValue()));
        }
        Set<String> staticKeys = new TreeSet<>(brokerKeys.keySet());
        staticKeys.removeAll(DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS);
        StringBuilder out = new StringBuilder("{");
        out.append("\"kafka_version\": ").append(str(AppInfoParser.getVersion()));
        out.append(",\n\"keys\": [\n").append(String.join(",\n", keys)).append("]");
        out.append(",\n\"static_keys\": ").append(strings(staticKeys));
        out.append(",\n\"listener_only\": ").append(strings(DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS));
        out.append(",\n\"listener_mechanism\": ").append(strings(privateSet(DynamicBrokerConfig.class, "LISTENER_MECHANISM_CONFIGS")));
        out.append(",\n\"cluster_level_listener\": ").append(strings(privateSet(DynamicBrokerConfig.class, "CLUSTER_LEVEL_LISTENER_CONFIGS")));
        out.append(",\n\"thread_pools\": ").append(strings(DynamicThreadPool.RECONFIGURABLE_CONFIGS));
        out.append(",\n\"log_cleaner\": ").append(strings(LogCleaner.RECONFIGURABLE_CONFIGS));
        System.out.println(out.append("}"));
    }

    private static String keyJson(ConfigDef.ConfigKey key, String mode) throws Exception {
        String defaultValue = key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : null;
        return "{\"name\": " + str(key.name) + ", \"type\": " + str(key.type.name()) + ", \"default\": " + str(defaultValue)
                + ", \"per_broker\": " + "per-broker".equals(mode)
                + ", \"validator\": " + validatorJson(key.validator) + "}";
    }

    /** The validators Odradek reproduces, with their parameters; any other is named with its text. */
    private static String validatorJson(ConfigDef.Validator validator) throws Exception {
        if (validator == null) {
            return "null";
        }
        if (validator instanceof ConfigDef.Range) {
            return "{\"kind\": \"range\", \"min\": " + number(field(validator, "min")) + ", \"max\": " + number(field(validator, "max")) + "}";
        }
        if (validator instanceof ConfigDef.ValidString) {
            return "{\"kind\": \"choices\", \"values\": " + strings(listField(validator, "validStrings")) + "}";
        }
        if (validator instanceof ConfigDef.ValidList) {
            Object choices = field(validator, "validString");
            List<String> values = choices == null ? List.of() : listField(choices, "validStrings");
            return "{\"kind\": \"list\", \"values\": " + strings(values) + "}";
        }
        return "{\"kind\": \"other\", \"class\": " + str(validator.getClass().getName()) + ", \"text\": " + str(validator.toString()) + "}";
    }

    private static Object field(Object owner, String name) throws Exception {
        Field field = owner.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return field.get(owner);
    }

    private static List<String> listField(Object owner, String name) throws Exception {
        List<String> values = new ArrayList<>();
        for (Object value : (Collection<?>) field(owner, name)) {
            values.add(String.valueOf(value));
        }
        return values;
    }

    @SuppressWarnings("unchecked")
    private static Set<String> privateSet(Class<?> owner, String name) throws Exception {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return (Set<String>) field.get(null);
    }

    /** A bound as Kafka prints it in "Value must be at least ..." (its Number's toString). */
    private static String number(Object bound) {
        return bound == null ? "null" : str(bound.toString());
    }

    private static String strings(Collection<String> values) {
        List<String> quoted = new ArrayList<>();
        for (String value : values instanceof List ? values : new TreeSet<>(values)) {
            quoted.add(str(value));
        }
        return "[" + String.join(", ", quoted) + "]";
    }

    private static String str(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
