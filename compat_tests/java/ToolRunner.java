import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's command-line tools one after another in one JVM, for the compatibility suite.
 *
 * <p>Each tool run as {@code bin/kafka-*.sh} does it pays a JVM start (seconds on a loaded
 * machine) and CI runs about a hundred of them against each broker. Here each request line names
 * a main class and its arguments (each field Base64 of UTF-8, space-separated); the tool's
 * {@code main} runs with its standard output and error captured and Kafka's {@code Exit}
 * procedures turned into an exception, so a tool that "exits" returns its status instead of
 * ending this JVM. A tool may catch that exception and carry on (printing it, exiting again):
 * what counts is what a real exit would have left, the first status and the output up to it.
 * The answer line is the status and the Base64 of both outputs, written to the file named by
 * the one argument (a pipe of its own: whatever a tool prints outside the capture, through a
 * stream it kept from an earlier run or from before, must not mix with the answers).
 */
public final class ToolRunner {
    private static final class Exited extends RuntimeException {
        final int status;

        Exited(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    /** The first exit of the running tool: its status and how much it had printed by then. */
    private static Integer exitStatus;
    private static int outAtExit;
    private static int errAtExit;
    private static ByteArrayOutputStream out;
    private static ByteArrayOutputStream err;

    private static void exit(int status) {
        if (exitStatus == null) {
            exitStatus = status;
            outAtExit = out.size();
            errAtExit = err.size();
        }
        throw new Exited(status);
    }

    public static void main(String[] arguments) throws Exception {
        Exit.setExitProcedure((status, message) -> exit(status));
        Exit.setHaltProcedure((status, message) -> exit(status));
        PrintStream answers = new PrintStream(new FileOutputStream(arguments[0]), false, StandardCharsets.UTF_8);
        Base64.Decoder decoder = Base64.getDecoder();
        Base64.Encoder encoder = Base64.getEncoder();
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.split(" ", -1); // an empty last argument too
            String[] decoded = new String[fields.length];
            for (int i = 0; i < fields.length; i++) {
                decoded[i] = new String(decoder.decode(fields[i]), StandardCharsets.UTF_8);
            }
            out = new ByteArrayOutputStream();
            err = new ByteArrayOutputStream();
            exitStatus = null;
            int status = run(decoded[0], Arrays.copyOfRange(decoded, 1, decoded.length));
            byte[] printed = out.toByteArray();
            byte[] complained = err.toByteArray();
            if (exitStatus != null) {
                status = exitStatus;
                printed = Arrays.copyOf(printed, outAtExit);
                complained = Arrays.copyOf(complained, errAtExit);
            }
            answers.println(status + " " + encoder.encodeToString(printed) + " " + encoder.encodeToString(complained));
            answers.flush();
        }
    }

    private static int run(String mainClass, String[] args) {
        PrintStream stdout = System.out;
        PrintStream stderr = System.err;
        PrintStream capturedErr = new PrintStream(err, true, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(capturedErr);
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exited exited) {
                return exited.status;
            }
            cause.printStackTrace(capturedErr);
            return 1;
        } catch (ReflectiveOperationException e) {
            e.printStackTrace(capturedErr);
            return 1;
        } finally {
            System.out.flush();
            System.err.flush();
            System.setOut(stdout);
            System.setErr(stderr);
        }
    }
}
