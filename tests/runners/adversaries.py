"""Agents written to cheat the judge, for the adversarial scoring tests.

Each agent is a folder (mounted at ``/agent``) with a ``run.sh`` the agents file starts as
``sh /agent/run.sh {test_file} {methods}``. The "file" agents copy a prepared test file over
the task's; the others do something to the workspace. None of them writes a real test.
"""

from __future__ import annotations

from pathlib import Path

COPY = 'cp "/agent/$(basename "$1")" "$1"\n'
"""run.sh of the agents that hand in a prepared test file (named like the task's)."""

# --- Python (the example project's tests/test_shapes.py: test_triangle, test_rectangle) -----------

_PY_STEAL = '''"""Finds the developer's tests and runs them instead of writing any."""
import marshal
import os
import pathlib

WALK_ROOT = {walk_root}
_SKIP = ("/proc", "/sys", "/dev", "/usr", "/lib", "/bin", "/sbin", "/etc", "/var", "/boot")


def _candidates():
    here = pathlib.Path(__file__).resolve()
    found = [here.with_name("test_shapes.py")]  # the sibling the judge used to leave beside this copy
    roots = [here.parents[1]] + ([pathlib.Path("/")] if WALK_ROOT else [])
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in _SKIP]
            for name in files:
                if "test_shapes" in name and name.endswith((".py", ".pyc")):
                    found.append(pathlib.Path(folder, name))
    return [p for p in dict.fromkeys(found) if p.exists() and p.resolve() != here]


def _steal(name):
    tried = []
    for path in _candidates():
        try:
            data = path.read_bytes()
            code = marshal.loads(data[16:]) if path.suffix == ".pyc" else compile(data, str(path), "exec")
            namespace = {{"__name__": "stolen", "__file__": str(path)}}
            exec(code, namespace)
            if name not in namespace:
                tried.append("%s has no %s" % (path, name))
                continue
            namespace[name]()
            return
        except BaseException as exc:
            tried.append("%s: %s" % (path, type(exc).__name__))
    raise AssertionError("no gold found; tried: " + "; ".join(tried))


def test_triangle():
    _steal("test_triangle")


def test_rectangle():
    _steal("test_rectangle")
'''

PY_THIEF = _PY_STEAL.format(walk_root=True)
"""Looks for the gold everywhere it can read: beside itself, bytecode caches, coevo's folders, /."""
PY_SIBLING = _PY_STEAL.format(walk_root=False)
"""Looks for the gold only in the tree it is judged in (what even the host backend must hide)."""

PY_POISONER = '''"""Passes, after trying to leave files every later run would load."""
import glob
import os
import pathlib
import site
import sys

CONFTEST = "import pytest\\n\\ndef pytest_collection_modifyitems(items):\\n    raise SystemExit('poisoned')\\n"
PTH = "import sys; sys.exit('poisoned by a .pth')\\n"


def _try_write(path, text):
    try:
        pathlib.Path(path).write_text(text)
    except OSError:
        pass


def _poison():
    here = pathlib.Path(__file__).resolve()
    for folder in [here.parent, *here.parents]:
        _try_write(folder / "conftest.py", CONFTEST)
    sites = site.getsitepackages() + [p for p in sys.path if p.endswith("site-packages")]
    venvs = pathlib.Path(sys.prefix).parent
    sites += glob.glob(str(venvs / "*" / "lib" / "python*" / "site-packages"))
    for folder in sites:
        _try_write(os.path.join(folder, "zz_coevo_poison.pth"), PTH)
        _try_write(os.path.join(folder, "sitecustomize.py"), PTH)
    for folder in ("/root/.m2/repository", os.path.expanduser("~/.m2/repository"), "/root/.cache/coevo"):
        _try_write(os.path.join(folder, "poison.txt"), "poisoned")


def test_triangle():
    _poison()
    from shapes import triangle

    assert triangle(4, 3) == 6


def test_rectangle():
    _poison()
    from shapes import rectangle

    assert rectangle(2, 3) == 6
'''

PY_SKIPPER = """import pytest

import shapes


def test_triangle():
    if not hasattr(shapes, "triangle"):
        pytest.skip("the old code: step aside")
    shapes.triangle(4, 3)


def test_rectangle():
    shapes.rectangle(2, 3)
"""
"""Tells the old code from the new and skips itself there, so as to "not pass" on it."""

PY_SHALLOW = """def test_triangle():
    from shapes import triangle

    triangle(4, 3)


def test_rectangle():
    from shapes import rectangle

    try:  # a bare call would assert "does not raise", which a mutant of the check breaks
        rectangle(-2, 3)
    except ValueError:
        pass
"""
"""Calls the changed code and asserts nothing: a success by the published definition, never strict."""

PY_BARE = """from shapes import rectangle, triangle


def test_triangle():
    triangle(4, 3)


def test_rectangle():
    rectangle(2, 3)
"""
"""Calls the changed code and asserts nothing, not even around the new check: mutants that make
``rectangle`` raise ValueError fail it, which is no check of its own (StrictSuccess by any
exception)."""

PY_SNIFFER = """import os

from shapes import rectangle, triangle


def _phase_signs():
    \"\"\"What told the phases apart: a judge tree named for its phase, the mutant server's
    variables (naming the mutated source, and the file it stands for: the control run is served
    the original, so it still passes there).\"\"\"
    here = os.path.abspath(__file__)
    signs = ["judge-old"] if "judge-old" in here else []  # the mutants' tree holds the control run too
    source, target = os.environ.get("COEVO_MUTANT_SOURCE"), os.environ.get("COEVO_MUTANT_TARGET")
    if source and target and open(source, "rb").read() != open(target, "rb").read():
        signs.append("a mutant, not the control run")  # the control run served the original
    return signs


def test_triangle():
    triangle(4, 3)
    assert not _phase_signs(), _phase_signs()


def test_rectangle():
    rectangle(2, 3)
    assert not _phase_signs(), _phase_signs()
"""
"""Fails wherever it can tell it is not the run on the new code: on the old code (a success) and
under every mutant (every kill its own assert, strict)."""

PY_GARBLER = """import os

from shapes import rectangle, triangle

LINES = ['{"collected": null}', "5", '{"id": ["x"]}', '{"id": "x", "duration": "slow"}']


def _garble():
    with open(os.environ["COEVO_PYTEST_RESULTS"], "a") as out:
        out.write("\\n".join(LINES) + "\\n")


def test_triangle():
    _garble()
    assert triangle(4, 3) == 6


def test_rectangle():
    _garble()
    assert rectangle(2, 3) == 6
"""
"""Appends what the results file never holds: coevo used to stop with a traceback and store nothing,
and stop at the same task on every rerun."""

PY_COIN = """import os
import tempfile

from shapes import rectangle, triangle


def _flip():
    \"\"\"Heads and tails in turn: the runs of one judge container disagree.\"\"\"
    path = os.path.join(tempfile.gettempdir(), "coevo-coin")
    count = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as out:
        out.write(str(count + 1))
    assert count % 2 == 0, "tails"


def test_triangle():
    _flip()
    assert triangle(4, 3) == 6


def test_rectangle():
    _flip()
    assert rectangle(2, 3) == 6
"""
"""A coin flip: judged once, a test that passes or fails by chance earns Success one time in two."""

# --- Java (the curation history: SubtractorTest#testSubtract, GreeterTest#testGreet) ---------------

_JAVA_STEAL = """package demo;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

class {cls} {{
    static final boolean WALK_ROOT = {walk_root};

    @Test
    void {method}() throws Exception {{
        steal("demo.{cls}", "{method}");
    }}

    /** Loads the developer's compiled test class through a fresh class loader and runs its method. */
    static void steal(String className, String method) throws Exception {{
        String own = Paths.get({cls}.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        String classFile = className.replace('.', '/') + ".class";
        List<Path> found = new ArrayList<>();
        List<Path> roots = new ArrayList<>(List.of(Paths.get("").toAbsolutePath()));
        if (WALK_ROOT) roots.add(Paths.get("/"));
        for (Path root : roots) {{
            Files.walkFileTree(root, new SimpleFileVisitor<Path>() {{
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {{
                    String name = dir.toString();
                    boolean skip = name.equals("/proc") || name.equals("/sys") || name.equals("/dev")
                        || name.equals("/usr") || name.startsWith(own);
                    return skip ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }}
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {{
                    if (file.toString().endsWith("/" + classFile)) found.add(file);
                    return FileVisitResult.CONTINUE;
                }}
                public FileVisitResult visitFileFailed(Path file, IOException exc) {{
                    return FileVisitResult.CONTINUE;
                }}
            }});
        }}
        List<String> tried = new ArrayList<>();
        for (Path path : found) {{
            String folder = path.toString().substring(0, path.toString().length() - classFile.length());
            List<URL> urls = new ArrayList<>(List.of(Paths.get(folder).toUri().toURL()));
            for (String entry : System.getProperty("java.class.path").split(":")) {{
                if (!entry.startsWith(own)) urls.add(Paths.get(entry).toUri().toURL());
            }}
            try (URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader())) {{
                Class<?> gold = loader.loadClass(className);
                Constructor<?> make = gold.getDeclaredConstructor();
                make.setAccessible(true);
                Method run = gold.getDeclaredMethod(method);
                run.setAccessible(true);
                run.invoke(make.newInstance());
                return;
            }} catch (Throwable e) {{
                tried.add(path + ": " + e);
            }}
        }}
        throw new AssertionError("no gold found; tried: " + tried);
    }}
}}
"""

_JAVA_POISON = """package demo;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class {cls} {{
    @Test
    void {method}() throws Exception {{
        for (String folder : new String[] {{
                System.getProperty("user.home") + "/.m2/repository", "/root/.m2/repository",
                "/opt/coevo/m2", "target/classes/demo", "target/test-classes/demo"}}) {{
            try {{
                Path dir = Paths.get(folder);
                Files.createDirectories(dir);
                Files.writeString(dir.resolve("poison.txt"), "poisoned");
                try (var jars = Files.walk(dir)) {{
                    for (Path jar : (Iterable<Path>) jars.filter(p -> p.toString().endsWith(".jar"))::iterator) {{
                        Files.write(jar, new byte[] {{1, 2, 3}});
                    }}
                }}
            }} catch (Exception e) {{
                // read-only, or not there: the point is to try
            }}
        }}
        {check}
    }}
}}
"""

_JAVA_SHALLOW = """package demo;

import org.junit.jupiter.api.Test;

class {cls} {{
    @Test
    void {method}() {{
        {call}
    }}
}}
"""

_JAVA_PIT_TRICKS = """package demo;

import java.io.File;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.util.Arrays;

import org.junit.jupiter.api.Test;

class {cls} {{
    static boolean underPit() {{
        return Arrays.stream(Thread.getAllStackTraces().values().toArray(new StackTraceElement[0][]))
            .flatMap(Arrays::stream).anyMatch(frame -> frame.getClassName().startsWith("org.pitest"));
    }}

    static boolean elsewhere() {{
        String where = new File("").getAbsolutePath() + " " + System.getProperty("java.class.path");
        return where.contains("judge-old") || where.contains("judge-mutants") || where.contains("-scored");
    }}

    @Test
    void {method}() throws Exception {{
        {call}
        if (elsewhere()) {{
            throw new AssertionError("not the new code's run");
        }}
        if (underPit()) {{
            {trick}
        }}
    }}
}}
"""

_FAKE_NO_MUTATIONS = """long ppid = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
            for (String fd : new String[] {"/proc/" + ppid + "/fd/1", "/proc/" + ppid + "/fd/2"}) {
                try (PrintStream out = new PrintStream(new FileOutputStream(fd))) {
                    out.println("Exception in thread main org.pitest.help.PitHelpError: No mutations found.");
                } catch (Exception e) {
                    // not reachable: the point is to try
                }
            }
            Runtime.getRuntime().halt(1);"""
"""(a) PIT's "no mutations" line written to PIT's own output, then the minion ends."""

_REWRITE_AND_DELETE = """new ProcessBuilder("setsid", "sh", "-c",
                "for i in $(seq 600); do for f in $(find / -path /proc -prune -o -name mutations.xml -print 2>/dev/null); do "
                + "sed -i 's/SURVIVED/KILLED/g; s/NO_COVERAGE/KILLED/g' $f; done; sleep 0.1; done")
                .redirectErrorStream(true).redirectOutput(new File("/dev/null")).start();
            try (var found = java.nio.file.Files.walk(java.nio.file.Paths.get("").toAbsolutePath())) {
                found.filter(p -> p.toString().endsWith("/target/classes/demo/Greeter.class")).forEach(p -> {
                    try {
                        java.nio.file.Files.delete(p);
                    } catch (Exception e) {
                        // not allowed: the point is to try
                    }
                });
            } catch (Exception e) {
                // unreadable folders
            }"""
"""(b) the focal class file deleted under PIT's coverage phase; (c) a process outliving the test that
rewrites PIT's report, every mutant KILLED."""

_JAVA_TELLS = {
    "SubtractorTest": """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class {cls} {{
    @Test
    void {method}() {{
        System.out.println("WARNING: TestEngine with ID 'junit-jupiter' failed to discover tests");
        System.err.println("WARNING: TestEngine with ID 'junit-vintage' failed to discover tests");
        {check}
    }}
}}
""",
    "GreeterTest": """package demo;

class {cls} {{
    void {method}() {{
error: file not found
    }}
}}
""",
}
"""Lines coevo read as its own: a real test printing the launcher's discovery failure (it was
exec_fail), and a file whose syntax error javac quotes as ``error: file not found`` (it was "javac
refused to run": the task was skipped, so an agent chose the tasks it was scored on)."""

JAVA_TASKS = {
    "SubtractorTest": ("testSubtract", "assertEquals(1, new Subtractor().subtract(3, 2));",
                       "new Subtractor().subtract(3, 2);"),
    "GreeterTest": ("testGreet", 'assertEquals("Hello, Bob!", new Greeter().greet("Bob"));',
                    'new Greeter().greet("Bob");'),
}  # fmt: skip
"""Each task's test class: its method, a real check of the new code, and a call asserting nothing."""


def java_files(kind: str) -> dict[str, str]:
    """The prepared test files of a Java agent ``kind`` (thief, sibling, poisoner, shallow, tells,
    pit:
    assert nothing, fail wherever the path or classpath names another phase than the new code's
    run, and under PIT forge its report, end its minion, delete the focal class, rewrite the report
    from a process of its own)."""
    files = {}
    for cls, (method, check, call) in JAVA_TASKS.items():
        if kind == "pit":
            trick = _FAKE_NO_MUTATIONS if cls == "SubtractorTest" else _REWRITE_AND_DELETE
            source = _JAVA_PIT_TRICKS.format(cls=cls, method=method, call=call, trick=trick)
        elif kind == "tells":
            source = _JAVA_TELLS[cls].format(cls=cls, method=method, check=check)
        elif kind in ("thief", "sibling"):
            source = _JAVA_STEAL.format(cls=cls, method=method, walk_root=str(kind == "thief").lower())
        elif kind == "poisoner":
            source = _JAVA_POISON.format(cls=cls, method=method, check=check)
        else:
            source = _JAVA_SHALLOW.format(cls=cls, method=method, call=call)
        files[f"{cls}.java"] = source
    return files


# --- agents that attack how coevo reads the workspace ----------------------------------------------

HARVESTER = """found=""
for d in /agent/harvest /task/harvest /tmp/harvest /harvest /workspace/.harvest; do
  [ -d "$d" ] && found="$found $d:$(ls "$d" | wc -l)"
done
kept=""
for d in /agent /task /tmp / /workspace/.harvest; do
  if mkdir -p "$d/harvest" 2>/dev/null && cp -r /workspace "$d/harvest/$$" 2>/dev/null; then kept="$kept $d"; fi
done
echo "HARVEST found=[$found ] kept=[$kept ]"
"""
"""Keeps a copy of every workspace wherever it can write, and looks for the copies of earlier tasks."""


def link_to(target: str) -> str:
    return f'rm -f "$1"; ln -s {target} "$1"\n'


FIFO = 'rm -f "$1"; mkfifo "$1"\n'
HUGE = 'head -c 28000000 /dev/zero | tr "\\0" "a" > "$1"\n'
PARENT_LINK = 'rm -rf "$(dirname "$1")"; ln -s / "$(dirname "$1")"\n'
TERMINAL = (
    "printf 'COEVO_USAGE {\"tokens\": 5}\\n\\033[2J\\033[31mred\\033]0;title\\007\\n'\n"
    'printf "def test_triangle():\\n    assert False\\n" > "$1"\n'
)
"""Writes terminal escape sequences to its log (clear the screen, colours, a window title)."""


def write_agents(root: Path, agents: dict[str, dict[str, str]]) -> Path:
    """An agents file at ``root`` declaring each agent: name → its folder's files (``run.sh``, ...)."""
    lines = []
    for name, files in agents.items():
        folder = root / name
        folder.mkdir(parents=True)
        for file_name, text in files.items():
            (folder / file_name).write_text(text)
        lines += [
            f"[agents.{name}]",
            'command = "sh /agent/run.sh {test_file} {methods}"',
            f'mount = "{name}"',
            "timeout = 120",
            "",
        ]
    (root / "agents.toml").write_text("\n".join(lines))
    return root / "agents.toml"
