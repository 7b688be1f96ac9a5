"""Test code that changed with a test: in its own file it is part of the answer, elsewhere a drop.

Static checks run on real git histories of both languages; one Python history is curated and
scored on the host, end to end: the same-file helper gives a generation task whose gold holds it,
and the agent's starting file has neither the methods nor the helper.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlmodel import select

from curation.static import changed_test_helpers, file_helpers, same_file_helpers, uses_changed_helper
from miner.files import FilePatterns
from miner.languages import get_language
from runners.scoring.agents import Agent, find_agent
from runners.scoring.causes import (
    BEHAVIOUR,
    PRODUCTION_API,
    TEST_CODE,
    failure_cause,
    names_of_test_code,
    own_packages,
)
from runners.scoring.scorer import ScoreOptions, score
from runners.scoring.workspace import reset_test_file
from tasks import AgentRun, Task, open_store
from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo

PY_BASE = {
    "requirements.txt": "# pytest only\n",
    "calc/__init__.py": "",
    "calc/squarer.py": "def square(a):\n    return a * a\n",
    "tests/test_squarer.py": (
        "from calc.squarer import square\n\n\ndef test_square():\n    assert square(2) == 4\n"
    ),
}
PY_CUBE = {
    "calc/cuber.py": "def cube(a):\n    return a * a * a\n",
    "tests/test_squarer.py": (
        "from calc.squarer import square\n"
        "from calc.cuber import cube\n\n\n"
        "def test_square():\n    assert square(2) == 4\n\n\n"
        "def expected(a):\n    return a * times(a)\n\n\n"
        "def times(a):\n    return a * a\n\n\n"
        "def unrelated():\n    return 0\n\n\n"
        "def test_cube():\n    assert cube(3) == expected(3)\n"
    ),
}


AUTOUSE = "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef server():\n    return 9\n"
EXPECT = "package demo;\n\nclass Expect {\n    static int square(int a) {\n        return a * a;\n    }\n}\n"


def _helpers(repo: GitRepo, language: str) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    lang = get_language(language)
    return changed_test_helpers(
        repo.path, repo.shas["base"], repo.shas["change"], FilePatterns.for_language(lang), lang
    )


def _tokens(language: str, source: str) -> tuple[str, ...]:
    return tuple(get_language(language).scan(source)[2])


def test_a_helper_of_the_tests_own_file_is_its_answer_and_transitive(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    repo.commit("change", "2024-05-02T10:00:00+00:00", PY_CUBE)
    helpers = _helpers(repo, "python")
    test = _tokens("python", "def test_cube():\n    assert cube(3) == expected(3)\n")
    assert uses_changed_helper("tests/test_squarer.py", test, helpers) is None
    assert same_file_helpers("tests/test_squarer.py", test, helpers) == ["expected", "times"]
    untouched = _tokens("python", "def test_square():\n    assert square(2) == 4\n")
    assert same_file_helpers("tests/test_squarer.py", untouched, helpers) == []


@pytest.mark.parametrize("use", ['request.getfixturevalue("server")', "pytest.lazy_fixture('server')"])
def test_changed_test_code_elsewhere_named_in_a_string_drops(tmp_path: Path, use: str) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef server():\n    return 9\n",
    })  # fmt: skip
    body = f"def test_square(request):\n    assert square(3) == {use}\n"
    found = uses_changed_helper("tests/test_squarer.py", _tokens("python", body), _helpers(repo, "python"))
    assert found == "tests/conftest.py::server"


@pytest.mark.parametrize("conftest", ["tests/other/conftest.py", "tests/conftest.py"])
def test_a_changed_autouse_fixture_is_no_use_by_itself(tmp_path: Path, conftest: str) -> None:
    """Beside other tests, or above this one: it runs around the test without being named."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    repo.commit("change", "2024-05-02T10:00:00+00:00", {conftest: AUTOUSE})
    body = _tokens("python", "def test_square():\n    assert square(3) == 9\n")
    assert uses_changed_helper("tests/test_squarer.py", body, _helpers(repo, "python")) is None


GUARD_V1 = "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef guard():\n    yield\n"
GUARD_V2 = (
    "import os\n\nimport pytest\n\n\n@pytest.fixture(autouse=True)\ndef guard():\n    yield\n"
    '    assert os.environ.pop("COEVO_STRICT", None) != "leaked", "a test leaked COEVO_STRICT"\n'
)
LABEL_TESTS_V1 = (
    "import os\n\nfrom calc.squarer import label\n\n\n"
    'def test_label():\n    assert label(3) == "3^2"\n\n\n'
    'def test_strict():\n    os.environ["COEVO_STRICT"] = "leaked"\n    assert label(2).startswith("2")\n'
)
LABEL_TESTS_V2 = (
    "from calc.squarer import label\n\n\n"
    'def test_label():\n    assert label(3) == "3²"\n\n\n'
    "def test_strict(monkeypatch):\n"
    '    monkeypatch.setenv("COEVO_STRICT", "kept")\n    assert label(2) == "2²"\n'
)


def test_a_changed_autouse_fixture_decides_only_where_its_failure_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conftest's autouse ``guard`` gains a teardown check with the change (as flask's
    ``leak_detector`` did). test_label's update is about the new label: a task. The old
    test_strict passes on the new code but for the guard, which fails it at teardown: its ON
    error is the guard's, so it is no task, though its new version fails on the old code too."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "",
        "calc/squarer.py": 'def label(a):\n    return f"{a}^2"\n',
        "tests/conftest.py": GUARD_V1, "tests/test_squarer.py": LABEL_TESTS_V1,
    })  # fmt: skip
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        "calc/squarer.py": 'def label(a):\n    return f"{a}²"\n',
        "tests/conftest.py": GUARD_V2, "tests/test_squarer.py": LABEL_TESTS_V2,
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    found = records(db)
    labels = {
        m: (str(r.drop_reason or r.label), {c: v["outcome"] for c, v in r.cells.items()})
        for m, r in found.items()
    }
    assert labels == {
        "test_label": ("test_update_positive", {"OO": "pass", "ON": "fail", "NO": "fail", "NN": "pass"}),
        "test_strict": ("old_fails_on_test_code", {"OO": "pass", "ON": "error", "NO": "fail", "NN": "pass"}),
    }
    assert "tests/conftest.py" in found["test_strict"].cells["ON"]["message"]


def test_java_helpers_in_the_same_class_belong_to_the_answer_and_in_another_drop(tmp_path: Path) -> None:
    test_dir = "src/test/java/demo"
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        f"{test_dir}/SquarerTest.java": "package demo;\n\nclass SquarerTest {\n}\n",
    })  # fmt: skip
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        f"{test_dir}/SquarerTest.java": (
            "package demo;\n\nimport org.junit.jupiter.api.*;\n\nclass SquarerTest {\n"
            "    @BeforeEach\n    void start() {}\n\n"
            "    private int roundTrip(int a) {\n        return a;\n    }\n\n"
            "    @Test\n    void testSquare() {\n"
            "        Assertions.assertEquals(4, roundTrip(4));\n    }\n}\n"
        ),
        f"{test_dir}/Expect.java": EXPECT,
    })  # fmt: skip
    helpers = _helpers(repo, "java")
    own = _tokens("java", "void testSquare() { Assertions.assertEquals(4, roundTrip(4)); }")
    assert uses_changed_helper(f"{test_dir}/SquarerTest.java", own, helpers) is None
    keys = same_file_helpers(f"{test_dir}/SquarerTest.java", own, helpers)
    assert sorted(helpers[f"{test_dir}/SquarerTest.java"][key][0] for key in keys) == ["<setup>", "roundTrip"]
    other = _tokens("java", "void testSquare() { Assertions.assertEquals(9, Expect.square(3)); }")
    assert (
        uses_changed_helper(f"{test_dir}/SquarerTest.java", other, helpers)
        == f"{test_dir}/Expect.java::Expect.square(int)"
    )


def test_a_same_file_helper_makes_a_generation_task_whose_gold_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    repo.commit("change", "2024-05-02T10:00:00+00:00", PY_CUBE)
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    with open_store(db).session() as session:
        tasks = session.exec(select(Task)).all()
    assert [(t.track, t.test_methods, t.gold_helpers) for t in tasks] == [
        ("generation", ["test_cube"], ["expected", "times"])
    ]
    given = reset_test_file(tasks[0], repo.path)
    assert given is not None
    text = given.decode()
    assert "def test_cube" not in text and "def expected" not in text and "def times" not in text
    assert "def unrelated" in text and "def test_square" in text  # changed, but not the answer's
    report = score(
        open_store(db), find_agent("gold"), options=ScoreOptions(backend="local", test_timeout=60, reruns=1)
    )
    assert (report.scored, report.errors) == (1, {})
    with open_store(db).session() as session:
        run = session.exec(select(AgentRun)).one()
    assert (run.success_rate, run.outcomes["test_cube"]["old"]) == (1.0, "compile_error")


def _javac_errors(tmp_path: Path, sources: dict[str, str]) -> str:
    """What the real javac says compiling ``sources`` (the message a NO cell stores)."""
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        ["javac", "-d", str(tmp_path / "out"), *(str(tmp_path / name) for name in sources)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    return result.stderr


BAG = (
    'syntax = "proto3";\n\npackage demo;\n\noption java_package = "demo";\n\n'
    "// the messages the tests convert\nmessage SimpleProto {\n  string msg = 1;\n  int32 count = 2;\n}\n"
)


def test_a_message_added_to_a_tests_proto_is_changed_test_code(tmp_path: Path) -> None:
    """gson 3621e51e03: a new test uses ``Bag.ProtoWithAnnotationsAndJsonNames``, a message the same
    commit added to ``proto/src/test/proto/bag.proto``; it failed to compile on the old code for
    that alone, and was a generation task."""
    repo = GitRepo(tmp_path / "gson")
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        "proto/src/test/proto/bag.proto": BAG,
        "proto/src/test/java/demo/ProtoTest.java": "package demo;\n\nclass ProtoTest {\n}\n",
    })  # fmt: skip
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        "proto/src/test/proto/bag.proto": BAG.replace("// the messages", "// all the messages")
        + "\nmessage ProtoWithJsonNames {\n  string name = 1 [json_name = \"n\"];\n"
        + "  enum Kind {\n    PLAIN = 0;\n  }\n}\n",
    })  # fmt: skip
    helpers = _helpers(repo, "java")
    assert sorted(helpers["proto/src/test/proto/bag.proto"]) == ["Kind", "ProtoWithJsonNames"]
    test = "proto/src/test/java/demo/ProtoTest.java"
    uses_new = _tokens("java", "void testNames() { Bag.ProtoWithJsonNames p = null; }")
    bag_proto = "proto/src/test/proto/bag.proto"
    assert uses_changed_helper(test, uses_new, helpers) == f"{bag_proto}::ProtoWithJsonNames"
    uses_old = _tokens("java", "void testSimple() { Bag.SimpleProto p = null; }")
    assert uses_changed_helper(test, uses_old, helpers) is None  # a comment changed, not the message
    bag = "class Bag {\n    static class SimpleProto {\n    }\n}\n"
    uses = "class ProtoTest {\n    Bag.ProtoWithJsonNames names;\n}\n"
    message = _javac_errors(tmp_path, {"Bag.java": bag, "ProtoTest.java": uses})
    assert "ProtoWithJsonNames" in message
    assert failure_cause("compile_error", message, names_of_test_code(helpers)) == TEST_CODE
    assert failure_cause("compile_error", message, names_of_test_code({})) == PRODUCTION_API


def test_changed_test_code_reached_through_the_tests_own_helpers_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gson 3621e51e03's ``basicRoundTrips`` names the new message only in its file's
    ``roundTrip``; here the own helper ``built`` did not change, but the ``make`` it calls in
    ``tests/helpers.py`` did. Curated end to end, the test is dropped before anything runs."""
    repo = GitRepo(tmp_path / "calc")
    own_helper = "from tests.helpers import make\n\n\ndef built():\n    return make()\n\n\n"
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        **PY_BASE,
        "tests/__init__.py": "",
        "tests/helpers.py": "def make():\n    return 2\n",
        "tests/test_squarer.py": own_helper + PY_BASE["tests/test_squarer.py"].replace("from", "\nfrom"),
    })  # fmt: skip
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        "calc/cuber.py": "def cube(a):\n    return a * a * a\n",
        "tests/helpers.py": "def make():\n    return 3\n",
        "tests/test_squarer.py": own_helper
        + "from calc.squarer import square\nfrom calc.cuber import cube\n\n\n"
        + "def test_square():\n    assert square(2) == 4\n\n\n"
        + "def test_cube():\n    assert cube(built()) == 27\n\n\n"
        + "def test_cube_alone():\n    assert cube(2) == 8\n",
    })  # fmt: skip
    found = records(mined_and_curated(repo, tmp_path, monkeypatch, "python"))
    assert str(found["test_cube"].drop_reason) == "test_utility_co_change"
    assert found["test_cube"].detail == "uses changed test code tests/helpers.py::make"
    assert str(found["test_cube_alone"].label) == "test_generation"  # the helper is not its own
    java = "proto/src/test/java/demo/ProtoTest.java"
    own = file_helpers(get_language("java"), (
        b"class ProtoTest {\n    static Object roundTrip() {\n        return Bag.ProtoWithJsonNames.of();\n"
        b"    }\n\n    @Test\n    public void basicRoundTrips() {\n        roundTrip();\n    }\n}\n"
    ))  # fmt: skip
    proto = {"proto/src/test/proto/bag.proto": {"ProtoWithJsonNames": ("ProtoWithJsonNames", ())}}
    calls = _tokens("java", "void basicRoundTrips() { roundTrip(); }")
    assert uses_changed_helper(java, calls, proto) is None  # its own tokens do not name it
    assert (
        uses_changed_helper(java, calls, proto, own) == "proto/src/test/proto/bag.proto::ProtoWithJsonNames"
    )
    unrelated = _tokens("java", "void other() { assertTrue(true); }")
    assert uses_changed_helper(java, unrelated, proto, own) is None


def test_why_a_test_fails_on_code_it_was_not_written_for(tmp_path: Path) -> None:
    test_side = names_of_test_code({"src/test/java/demo/Data.java": [], "tests/helpers.py": ["make"]})
    assert {"Data", "helpers", "tests.helpers", "make"} <= test_side
    squarer = "class Squarer {\n    int square(int a) {\n        return a * a;\n    }\n}\n"
    uses_data = (
        "class SquarerTest {\n    int nine() {\n        return new Squarer().square(Data.THREE);\n    }\n}\n"
    )
    message = _javac_errors(tmp_path, {"Squarer.java": squarer, "SquarerTest.java": uses_data})
    assert failure_cause("compile_error", message, test_side) == TEST_CODE
    uses_cube = "class SquarerTest {\n    int nine() {\n        return new Squarer().cube(3);\n    }\n}\n"
    message = _javac_errors(tmp_path, {"Squarer.java": squarer, "SquarerTest.java": uses_cube})
    assert failure_cause("compile_error", message, test_side) == PRODUCTION_API
    fixture = "E       fixture 'nine' not found\n>       available fixtures: x"
    assert failure_cause("error", fixture, set()) == TEST_CODE
    imports = "ImportError: cannot import name 'make' from 'tests.helpers' (/w/tests/helpers.py)"
    assert failure_cause("compile_error", imports, test_side) == TEST_CODE
    imports = "ImportError: cannot import name 'cube' from 'calc.cuber' (/w/calc/cuber.py)"
    assert failure_cause("compile_error", imports, test_side) == PRODUCTION_API
    assert failure_cause("fail", "AssertionError: assert 8 == 9", test_side) == BEHAVIOUR
    assert failure_cause("error", "ZeroDivisionError: division by zero", test_side) == BEHAVIOUR


def test_a_new_test_failing_on_the_old_code_for_a_fixture_added_with_it_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture is named in a way no static check can follow; NO's message names it."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    dynamic = 'request.getfixturevalue("".join(["ni", "ne"]))'
    repo.commit("change", "2024-05-02T10:00:00+00:00", {
        "calc/squarer.py": "def square(a):\n    return a * a\n\n\ndef cube(a):\n    return a * a * a\n",
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef nine():\n    return 9\n",
        "tests/test_squarer.py": (
            "from calc import squarer\n\n\n"
            "def test_square():\n    assert squarer.square(2) == 4\n\n\n"
            f"def test_nine(request):\n    value = {dynamic}\n    assert squarer.cube(2) == value - 1\n"
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    with open_store(db).session() as session:
        assert session.exec(select(Task)).all() == []
    found = records(db)
    assert {method: str(r.drop_reason) for method, r in found.items()} == {
        "test_nine": "old_fails_on_test_code",
        "test_square": "no_focal_code",
    }
    record = found["test_nine"]
    assert record.detail.startswith("NO fail on test code that changed with it")
    assert "fixture 'nine' not found" in record.detail


def test_a_library_the_old_revision_lacks_is_test_side() -> None:
    own = own_packages([
        "gson/src/main/java/com/google/gson/Gson.java",
        "proto/src/test/java/com/google/gson/protobuf/PTest.java",
        "src/flask/json/tag.py", "src/flask/__init__.py", "tests/test_basic.py", "README.md",
    ])  # fmt: skip
    assert {
        "com.google.gson",
        "google.gson",
        "com.google.gson.protobuf",
        "flask.json.tag",
        "flask",
        "tests",
    } <= own
    assert "com.google.common.truth.extensions.proto" not in own and "responses" not in own
    truth = "Foo.java:21: error: package com.google.common.truth.extensions.proto does not exist"
    assert failure_cause("compile_error", truth, set(), own) == TEST_CODE
    assert failure_cause("compile_error", truth, set()) == PRODUCTION_API  # not checked without own
    ours = "Foo.java:3: error: package com.google.gson.protobuf does not exist"
    assert failure_cause("compile_error", ours, set(), own) == PRODUCTION_API
    assert failure_cause("error", "ModuleNotFoundError: No module named 'responses'", set(), own) == TEST_CODE
    assert failure_cause("error", "ModuleNotFoundError: No module named 'flask.json.tag'", set(), own) == (
        PRODUCTION_API
    )


def test_a_new_test_that_imports_a_library_added_with_it_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rev1's environment lacks the library the new test imports: any test importing it fails
    there, whatever the production change; the failure names no package of the repository."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    repo.commit("cubes, tested with six", "2024-05-02T10:00:00+00:00", {
        "requirements.txt": "six\n",
        "calc/squarer.py": "def square(a):\n    return a * a\n\n\ndef cube(a):\n    return a * a * a\n",
        "tests/test_squarer.py": (
            "import six\n\nfrom calc import squarer\n\n\n"
            "def test_square():\n    assert squarer.square(2) == 4\n\n\n"
            "def test_cube():\n    assert squarer.cube(2) == six.MAXSIZE // six.MAXSIZE * 8\n"
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    found = records(db)
    assert str(found["test_cube"].drop_reason) == "old_fails_on_test_code", found["test_cube"].detail
    assert "No module named 'six'" in found["test_cube"].detail


def test_an_agent_test_failing_on_the_old_code_only_for_a_library_gets_no_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written to cheat: a method that runs the changed code, asserts what holds before and after,
    and imports a library only the new revision's environment has, so that it "fails" there."""
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", PY_BASE)
    strict = "def square(a):\n    if a < 0:\n        raise ValueError(a)\n    return a * a\n"
    repo.commit("negative sides fail, tested with six", "2024-05-02T10:00:00+00:00", {
        "requirements.txt": "six\n",
        "calc/squarer.py": strict,
        "tests/test_squarer.py": (
            "import pytest\n\nfrom calc.squarer import square\n\n\n"
            "def test_square():\n    assert square(2) == 4\n\n\n"
            "def test_negative():\n    with pytest.raises(ValueError):\n        square(-1)\n"
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    with open_store(db).session() as session:
        assert [t.test_methods for t in session.exec(select(Task)).all()] == [["test_negative"]]
    cheat = tmp_path / "cheat.py"
    cheat.write_text(
        "import six\n\nfrom calc.squarer import square\n\n\n"
        "def test_square():\n    assert square(2) == 4\n\n\n"
        "def test_negative():\n    assert six.PY3 and square(3) == 9\n"
    )
    agent = Agent("cheat", f"cp {cheat} {{test_file}}")
    report = score(open_store(db), agent, options=ScoreOptions("local", 60, trust_host=True, reruns=1))
    assert (report.scored, report.errors) == (1, {})
    with open_store(db).session() as session:
        run = session.exec(select(AgentRun)).one()
    outcome = run.outcomes["test_negative"]
    assert (outcome["outcome"], outcome["new"], outcome["old"]) == ("pass", "pass", "compile_error"), outcome
    assert (outcome["success"], run.success_rate) == (False, 0.0)
