"""When a new test file does not import on the old code, each method is judged on its own.

A new file holds a method that uses a new function and one that uses only the old API; the
import of the new function fails the whole module on the old code. Cut down to each method and
what it uses, the first still fails there (a task) and the second passes (no task). An agent
whose method passes on the old code gets no success, whatever else its file imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlmodel import select

from runners.environments.pruning import alone
from runners.scoring.agents import Agent, find_agent
from runners.scoring.scorer import ScoreOptions, score
from runners.scoring.workspace import reset_test_file
from tasks import AgentRun, Task, TestChangeKind, open_store
from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo
from tests.runners.maven_projects import JUPITER_DEPS, pom

NEW_FILE = (
    "from calc.squarer import square, cube\n\n\n"
    "def expected_cube(a):\n    return a * square(a)\n\n\n"
    "def test_square_again():\n    assert square(3) == 9\n\n\n"
    "def test_cube():\n    assert cube(2) == expected_cube(2)\n"
)
CHEAT = """
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.parent.mkdir(parents=True, exist_ok=True)
# Imports the new function, but its method checks only what the old code already does.
path.write_text(
    "from calc.squarer import square, cube\\n\\n\\ndef test_cube():\\n    assert square(2) == 4\\n"
)
"""


def test_a_method_is_judged_alone_when_its_file_does_not_import_on_the_old_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "",
        "calc/squarer.py": "def square(a):\n    return a * a\n",
    })  # fmt: skip
    repo.commit("cube", "2024-06-02T09:00:00+00:00", {
        "calc/squarer.py": "def square(a):\n    return a**2\n\n\ndef cube(a):\n    return a * a * a\n",
        "tests/test_squarer.py": NEW_FILE,
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    labels = {method: (r.label, r.cells["NO"]["outcome"]) for method, r in records(db).items()}
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()
    # test_square_again needs only square: cut down, it imports and passes on the old code.
    assert labels["test_square_again"] == ("test_generation_pass_old", "pass")
    assert labels["test_cube"] == ("test_generation", "compile_error")
    assert task.test_methods == ["test_cube"]

    (tmp_path / "cheat.py").write_text(CHEAT)
    cheat = Agent("cheat", f"{sys.executable} {tmp_path / 'cheat.py'} {{workspace}}/{{test_file}}")
    assert (
        score(open_store(db), cheat, options=ScoreOptions("local", 60, trust_host=True, reruns=1)).errors
        == {}
    )
    with open_store(db).session() as s:
        run = s.exec(select(AgentRun).where(AgentRun.agent == "cheat")).one()
    outcome = run.outcomes["test_cube"]
    assert (outcome["new"], outcome["old"], outcome["success"]) == ("pass", "pass", False), outcome


def test_a_cut_keeps_what_the_method_uses_and_line_numbers() -> None:
    cut = alone(NEW_FILE.encode(), "python", "test_square_again")
    assert cut is not None
    text = cut.decode()
    assert "from calc.squarer import square\n" in text and "cube" not in text
    assert "def expected_cube" not in text  # test_square_again does not use it
    assert len(text.splitlines()) == len(NEW_FILE.splitlines())
    cut = alone(NEW_FILE.encode(), "python", "test_cube")
    assert cut is not None and "def expected_cube" in cut.decode() and "import square, cube" in cut.decode()


IN_BLOCKS = (
    "from calc.squarer import square, cube\n\n"
    "try:\n    import json\n\n    HAS_JSON = True\nexcept ImportError:\n    HAS_JSON = False\n\n\n"
    "def test_square():\n    assert square(2) == 4\n\n\n"
    "class TestMore:\n    def test_square_again(self):\n        assert square(3) == 9\n\n\n"
    "class TestCube:\n    def test_cube(self):\n        assert cube(2) == 8\n"
)


def test_a_python_cut_leaves_no_block_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """requests' test file (2024): cut down to one method, a class whose methods all went and
    ``except ImportError:`` whose only line was an unused field were left without a statement, so
    every cut failed with an IndentationError, and a moved test that passes on the old code became
    a task. The agent's start file, without the gold's class's only method, must parse too."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "",
        "calc/squarer.py": "def square(a):\n    return a * a\n",
        "tests/test_squarer.py": "from calc.squarer import square\n\n\ndef test_square():\n"
                                 "    assert square(2) == 4\n",
    })  # fmt: skip
    repo.commit("cube", "2024-06-02T09:00:00+00:00", {
        "calc/squarer.py": "def square(a):\n    return a**2\n\n\ndef cube(a):\n    return a * a * a\n",
        "tests/test_squarer.py": IN_BLOCKS,
    })  # fmt: skip
    for name in ("test_square", "test_square_again", "test_cube"):
        cut = alone(IN_BLOCKS.encode(), "python", name)
        assert cut is not None
        compile(cut, name, "exec")  # raised IndentationError before
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python", kinds=tuple(TestChangeKind))
    labels = {
        method: (str(r.drop_reason or r.label), (r.cells.get("NO") or {}).get("outcome"))
        for method, r in records(db).items()
    }
    assert labels == {
        "TestMore.test_square_again": ("test_generation_pass_old", "pass"),
        "TestCube.test_cube": ("test_generation", "compile_error"),
        "test_square": ("test_update_negative", None),  # moved down the file, unchanged
    }
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()
    given = reset_test_file(task, repo.path)
    assert given is not None and "def test_cube" not in given.decode()
    compile(given, "given", "exec")
    assert "class TestCube:\n    pass\n" in given.decode()


JAVA_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The class's annotation names its own constant (commons-lang's SystemPropertiesTest does). */
@Tag(SquarerTest.TAG)
class SquarerTest {
    static final String TAG = "squares";
    private final Squarer subject = new Squarer();

    @Test
    void testSquare() {
        assertEquals(9, subject.square(3));
    }

    @Test
    void testCube() {
        assertEquals(8, subject.cube(2));
    }

    @Test
    void testName() {
        assertEquals("squarer 2", Squarer.NAME);
    }
}
"""


FRAMED = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junitpioneer.jupiter.SetSystemProperty;
import other.Fresh;
import other.Base;

/** Also checks {@link Fresh}, as "Fresh" // says. */
@SetSystemProperty(key = SquarerTest.KEY, value = "Fresh // not a comment")
class SquarerTest extends Base<Squarer> {
    static final String KEY = "k";
    private static final String UNUSED = "u";

    @Test
    void testSquare() {
        assertEquals(9, new Squarer().square(3));
    }

    @Test
    void testFresh() {
        assertEquals(1, Fresh.ONE);
    }
}
"""


def test_a_java_cut_keeps_what_the_class_header_names_and_nothing_only_a_comment_or_string_does() -> None:
    """A cut always keeps the class's annotations and header, so their imports and fields stay; an
    import of a new class that only a comment or a string of the header names would fail the
    method on the old code for nothing, so it goes."""
    cut = alone(FRAMED.encode(), "java", "testSquare")
    assert cut is not None
    text = cut.decode()
    assert "import org.junitpioneer.jupiter.SetSystemProperty;" in text and "import other.Base;" in text
    assert 'static final String KEY = "k";' in text and "UNUSED" not in text
    assert "import other.Fresh;" not in text and "testFresh" not in text
    assert len(text.splitlines()) == len(FRAMED.splitlines())


def _squarer(body: str) -> str:
    return f"package demo;\n\npublic class Squarer {{\n{body}}}\n"


def test_java_methods_are_judged_alone_and_a_changed_constant_is_focal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """testCube does not compile on the old code; testSquare alone passes there; testName checks
    a constant that changed, and fails there: one task of two methods, one pass-old record."""
    repo = GitRepo(tmp_path / "calc")
    square_v1 = "    public int square(int a) {\n        return a * a;\n    }\n"
    square_v2 = "    public int square(int a) {\n        return Math.multiplyExact(a, a);\n    }\n"
    cube = "    public int cube(int a) {\n        return a * a * a;\n    }\n"
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "pom.xml": pom("calc", JUPITER_DEPS),
        "src/main/java/demo/Squarer.java": _squarer(
            '    public static final String NAME = "squarer";\n' + square_v1
        ),
    })  # fmt: skip
    repo.commit("cube", "2024-06-02T09:00:00+00:00", {
        "src/main/java/demo/Squarer.java": _squarer(
            '    public static final String NAME = "squarer 2";\n' + square_v2 + cube
        ),
        "src/test/java/demo/SquarerTest.java": JAVA_TEST,
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "java", timeout=60)
    labels = {method: (str(r.label), r.cells["NO"]["outcome"]) for method, r in records(db).items()}
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()
    assert labels == {
        "SquarerTest.testSquare()": ("test_generation_pass_old", "pass"),
        "SquarerTest.testCube()": ("test_generation", "compile_error"),
        "SquarerTest.testName()": ("test_generation", "fail"),
    }
    focal = {(f["method"], f.get("unit"), f["provenance"]) for f in task.focal_methods}
    assert ("Squarer.NAME", "field", "reference") in focal and (
        "Squarer.cube(int)",
        "method",
        "coverage",
    ) in focal


def _test_class(name: str, *methods: str) -> str:
    return (
        "package demo;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\n"
        f"import org.junit.jupiter.api.Test;\n\nclass {name} {{\n{chr(10).join(methods)}}}\n"
    )


def _test(name: str, expected: int, call: str) -> str:
    """A test method asserting that ``new Squarer().<call>`` gives ``expected``."""
    return (
        f"    @Test\n    void {name}() {{\n        assertEquals({expected}, new Squarer().{call});\n    }}\n"
    )


FIXTURES = "package demo;\n\nclass Fixtures {\n    static int three() {\n        return 3;\n    }\n}\n"


def test_rev1_whose_tests_do_not_compile_still_judges_new_tests_on_its_production_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At rev1 a test was committed before the code it calls (``CubeFirstTest`` uses ``cube``):
    rev1's tests do not compile, its production code does. The new test of ``cube`` fails there for
    the right reason (a generation task); the new test of ``square`` that needs a test helper of
    rev1, whose classes are not built there, is no task (it would pass there); the updated test,
    which needs rev1's own tests (OO), drops alone with the compiler's message."""
    repo = GitRepo(tmp_path / "calc")
    square = "    public int square(int a) {\n        return a * a;\n    }\n"
    cube = "    public int cube(int a) {\n        return a * a * a;\n    }\n"
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "pom.xml": pom("calc", JUPITER_DEPS),
        "src/main/java/demo/Squarer.java": _squarer(square),
        "src/test/java/demo/Fixtures.java": FIXTURES,
        "src/test/java/demo/OtherTest.java": _test_class("OtherTest", _test("testSquare", 9, "square(3)")),
        "src/test/java/demo/CubeFirstTest.java": _test_class(
            "CubeFirstTest", _test("testCube", 27, "cube(3)")
        ),
    })  # fmt: skip
    repo.commit("cube", "2024-06-02T09:00:00+00:00", {
        "src/main/java/demo/Squarer.java": _squarer(square.replace("a * a", "a * a * 1") + cube),
        "src/test/java/demo/OtherTest.java": _test_class("OtherTest", _test("testSquare", 9, "square(-3)")),
        "src/test/java/demo/SquarerTest.java": _test_class(
            "SquarerTest",
            _test("testCubeOfTwo", 8, "cube(2)"),
            _test("testThree", 9, "square(Fixtures.three())"),
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "java", timeout=60)
    found = records(db)
    labels = {
        method: (str(r.drop_reason or r.label), r.cells.get("NO", {}).get("outcome"))
        for method, r in found.items()
    }
    assert labels == {
        "SquarerTest.testCubeOfTwo()": ("test_generation", "compile_error"),
        "SquarerTest.testThree()": ("old_fails_on_test_code", "compile_error"),
        "OtherTest.testSquare()": ("build_failed", None),
    }
    assert "its tests do not compile" in found["OtherTest.testSquare()"].detail
    assert "CubeFirstTest.java" in found["OtherTest.testSquare()"].detail  # the compiler's message
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()
    assert task.test_methods == ["SquarerTest.testCubeOfTwo()"]
    assert ("tests", "not compiled") in {(c["name"], c["value"]) for c in task.build_records["rev1"]}
    # Scoring builds rev1 the same way: the developer's test succeeds on it.
    assert score(open_store(db), find_agent("gold"), options=ScoreOptions("local", 60, reruns=1)).errors == {}
    with open_store(db).session() as s:
        run = s.exec(select(AgentRun).where(AgentRun.agent == "gold")).one()
    outcome = run.outcomes["SquarerTest.testCubeOfTwo()"]
    assert (outcome["new"], outcome["old"], outcome["success"]) == ("pass", "compile_error", True), outcome
