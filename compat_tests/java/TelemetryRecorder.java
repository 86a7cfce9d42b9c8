import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;

/**
 * A client telemetry exporter for the Apache Kafka broker of the compatibility suite.
 *
 * <p>Why it exists: Kafka advertises GetTelemetrySubscriptions and PushTelemetry only while a
 * metrics reporter that exports client telemetry is configured (KIP-714), so without one the
 * stock broker cannot be compared with Odradek at all. Named in {@code metric.reporters}, it
 * writes one line per pushed payload to the broker's standard output (its log in the suite),
 * in the same words Odradek logs a push with, so a scenario can find the pushes of a client
 * instance on either broker.
 */
public final class TelemetryRecorder implements MetricsReporter, ClientTelemetryExporterProvider {
    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return TelemetryRecorder::record;
    }

    private static void record(ClientTelemetryContext context, ClientTelemetryPayload payload) {
        String line = String.format("client telemetry pushed by client instance %s: %d bytes%n",
            payload.clientInstanceId(), payload.data().remaining());
        System.out.write(line.getBytes(StandardCharsets.UTF_8), 0, line.length());
        System.out.flush();
    }
}
