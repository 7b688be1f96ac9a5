// Per-test JaCoCo coverage in one JVM (coevo: runners/maven.py compiles this file with the JDK
// that runs the tests: into the tool cache on the host, at image build in Docker).
//
// PerTestCoverage is a JUnit Platform listener, found through ServiceLoader: while the property
// coevo.coverage.dir names a folder, it takes the JaCoCo agent's data after each test method (and
// each method container: parameterized and repeated tests, test factories) and resets it, writing
// N.exec and a line "N<TAB>class#method" to index.tsv. What a class's set-up ran goes to its first
// test; what ran after a class's last test (its tear-down) is dropped. coevo turns Jupiter's
// parallel execution off for these runs: tests running at once would share their data. Before
// each test method it appends "class#method" to started.tsv: a test that started and never
// finished hung or ended the JVM, and coevo runs it alone and the rest of the batch again. With
// coevo.coverage.lines=false (a run without the agent) it only notes each test's start and end.
//
// PerTestCoverage.Lines (a main, run in a JVM of its own with JaCoCo's command-line jar) reads
// such a folder and writes, per test, the lines each source file had covered:
// "T<TAB>class#method" once per test, then "<package>/<Source.java><TAB>line,line,..." per file.
package coevo.coverage;

import java.io.File;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

import org.jacoco.agent.rt.IAgent;
import org.jacoco.agent.rt.RT;
import org.jacoco.cli.internal.core.analysis.Analyzer;
import org.jacoco.cli.internal.core.analysis.CoverageBuilder;
import org.jacoco.cli.internal.core.analysis.IClassCoverage;
import org.jacoco.cli.internal.core.data.ExecutionData;
import org.jacoco.cli.internal.core.data.ExecutionDataStore;
import org.jacoco.cli.internal.core.tools.ExecFileLoader;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

public final class PerTestCoverage implements TestExecutionListener {
    private final Path folder;
    private final boolean lines;
    private int taken;

    public PerTestCoverage() {
        String configured = System.getProperty("coevo.coverage.dir");
        folder = configured == null ? null : Paths.get(configured);
        lines = !"false".equals(System.getProperty("coevo.coverage.lines"));
    }

    @Override
    public void executionStarted(TestIdentifier test) {
        if (folder == null) {
            return;
        }
        Optional<TestSource> source = test.getSource();
        if (!source.isPresent() || !(source.get() instanceof MethodSource)) {
            return;
        }
        MethodSource method = (MethodSource) source.get();
        try {
            append("started.tsv", oneLine(method.getClassName() + "#" + method.getMethodName()));
        } catch (IOException e) {
            // Not named: a run that ends in this test has each of its tests run alone.
        }
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        if (folder == null) {
            return;
        }
        Optional<TestSource> source = test.getSource();
        if (!source.isPresent()) {
            return;
        }
        try {
            if (source.get() instanceof MethodSource) {
                MethodSource method = (MethodSource) source.get();
                take(method.getClassName() + "#" + method.getMethodName());
            } else if (source.get() instanceof ClassSource && lines) {
                RT.getAgent().reset();
            }
        } catch (IOException | IllegalStateException e) {
            // No data for this test: coevo runs it again in a JVM of its own.
        }
    }

    private synchronized void take(String key) throws IOException {
        int number = taken++;
        if (lines) {
            IAgent agent = RT.getAgent();
            byte[] data = agent.getExecutionData(true);
            Files.createDirectories(folder);
            Files.write(folder.resolve(number + ".exec"), data);
        }
        append("index.tsv", number + "\t" + oneLine(key));
    }

    private static String oneLine(String key) {
        return key.replace('\t', ' ').replace('\n', ' ');
    }

    private synchronized void append(String file, String line) throws IOException {
        Files.createDirectories(folder);
        Files.write(folder.resolve(file), (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** Arguments: the folder the listener wrote, the output file, then the class folders. */
    public static final class Lines {
        public static void main(String[] args) throws IOException {
            Path folder = Paths.get(args[0]);
            List<File> classDirs = new ArrayList<>();
            for (int i = 2; i < args.length; i++) {
                classDirs.add(new File(args[i]));
            }
            Map<String, ExecFileLoader> byTest = new LinkedHashMap<>();
            for (String line : Files.readAllLines(folder.resolve("index.tsv"), StandardCharsets.UTF_8)) {
                int tab = line.indexOf('\t');
                if (tab < 0) {
                    continue;
                }
                ExecFileLoader loader = byTest.computeIfAbsent(line.substring(tab + 1), k -> new ExecFileLoader());
                loader.load(folder.resolve(line.substring(0, tab) + ".exec").toFile());
            }
            try (Writer out = Files.newBufferedWriter(Paths.get(args[1]), StandardCharsets.UTF_8)) {
                for (Map.Entry<String, ExecFileLoader> test : byTest.entrySet()) {
                    out.write("T\t" + test.getKey() + "\n");
                    for (Map.Entry<String, TreeSet<Integer>> file : covered(test.getValue(), classDirs).entrySet()) {
                        StringBuilder lines = new StringBuilder();
                        for (int number : file.getValue()) {
                            lines.append(lines.length() == 0 ? "" : ",").append(number);
                        }
                        out.write(file.getKey() + "\t" + lines + "\n");
                    }
                }
            }
        }

        /** The covered lines by "package/Source.java" of the classes this data hit, each class
         * analysed from the class folder whose file matches the data (a class name two modules
         * share is read from each, and only the one that ran counts). */
        private static Map<String, TreeSet<Integer>> covered(ExecFileLoader loader, List<File> classDirs)
                throws IOException {
            ExecutionDataStore store = loader.getExecutionDataStore();
            Map<String, TreeSet<Integer>> covered = new TreeMap<>();
            for (ExecutionData data : store.getContents()) {
                if (!data.hasHits() || data.getName().contains("..") || data.getName().startsWith("/")) {
                    continue; // a name the tests' JVM wrote that leads out of the class folders
                }
                for (File dir : classDirs) {
                    File classFile = new File(dir, data.getName() + ".class");
                    if (!classFile.isFile()) {
                        continue;
                    }
                    CoverageBuilder builder = new CoverageBuilder();
                    new Analyzer(store, builder).analyzeAll(classFile);
                    for (IClassCoverage coverage : builder.getClasses()) {
                        if (coverage.isNoMatch() || coverage.getSourceFileName() == null) {
                            continue;
                        }
                        String file = coverage.getPackageName().isEmpty()
                                ? coverage.getSourceFileName()
                                : coverage.getPackageName() + "/" + coverage.getSourceFileName();
                        for (int number = coverage.getFirstLine(); number <= coverage.getLastLine() && number > 0; number++) {
                            if (coverage.getLine(number).getInstructionCounter().getCoveredCount() > 0) {
                                covered.computeIfAbsent(file, k -> new TreeSet<>()).add(number);
                            }
                        }
                    }
                }
            }
            return covered;
        }
    }
}
