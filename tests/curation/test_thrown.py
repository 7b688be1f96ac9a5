"""A changed Java method that an exception leaves before any JaCoCo probe shows no covered line
(``return Math.addExact(a, b)`` that throws): the old test's failure on the new code passed
through it, and that stack finds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from runners.results import java_frames
from tasks import Task, open_store
from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo
from tests.runners.maven_projects import JUPITER_DEPS, pom

CALC = "src/main/java/demo/Calc.java"
CALC_TEST = "src/test/java/demo/CalcTest.java"


def _calc(add: str) -> str:
    method = f"    public int add(int a, int b) {{\n        {add}\n    }}\n"
    return f"package demo;\n\npublic class Calc {{\n{method}}}\n"


def _test(body: str) -> str:
    return (
        "package demo;\n\nimport static org.junit.jupiter.api.Assertions.*;\n\n"
        "import org.junit.jupiter.api.Test;\n\nclass CalcTest {\n"
        f"    @Test\n    void wraps() {{\n        {body}\n    }}\n}}\n"
    )


def test_a_method_that_now_throws_through_a_callee_is_focal_by_the_old_tests_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("Adds", "2026-09-01T08:00:00+00:00", {
        "pom.xml": pom("calc", JUPITER_DEPS), CALC: _calc("return a + b;"),
        CALC_TEST: _test("assertEquals(Integer.MIN_VALUE, new Calc().add(Integer.MAX_VALUE, 1));"),
    })  # fmt: skip
    repo.commit("Overflow throws", "2026-09-02T08:00:00+00:00", {
        CALC: _calc("return Math.addExact(a, b);"),
        CALC_TEST: _test(
            "assertThrows(ArithmeticException.class, () -> new Calc().add(Integer.MAX_VALUE, 1));"
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "java")
    assert {m: str(r.label) for m, r in records(db).items()} == {"CalcTest.wraps()": "test_update_positive"}
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()
    assert [(f["method"], f["provenance"]) for f in task.focal_methods] == [("Calc.add(int,int)", "stack")]


def test_java_frames_read_a_surefire_trace() -> None:
    trace = (
        "java.lang.IllegalStateException: wrapped\n"
        "\tat org.example.util.Calc$Inner.add(Calc.java:12)\n"
        "\tat java.base/java.lang.Math.addExact(Math.java:883)\n"
        "\tat app//org.example.util.Calc.lambda$sum$0(Calc.java:7)\n"
        "\tat Default.run(Default.java:3)\n"
        "Caused by: java.lang.ArithmeticException: integer overflow\n"
        "\tat org.example.util.Calc$Inner.add(Calc.java:12)\n"
        "\t... 4 more\n"
    )
    assert java_frames(trace) == (
        "org/example/util/Calc.java:12",
        "java/lang/Math.java:883",
        "org/example/util/Calc.java:7",
        "Default.java:3",
    )
