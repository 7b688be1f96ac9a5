"""Static links from test methods to changed production methods."""

from __future__ import annotations

from miner import MethodInfo, ProductionMethod, static_links
from tasks import MethodChangeKind


def _method(
    key: str, container: str, calls: set[str] = frozenset(), refs: set[str] = frozenset()
) -> MethodInfo:
    name = key.split(".")[-1].split("(")[0]
    return MethodInfo(key, name, container, 1, 2, "", True, frozenset(calls), frozenset(refs))


PARSE = ProductionMethod(
    "src/main/java/p/Parser.java", _method("Parser.parse(String)", "Parser"), MethodChangeKind.CHANGED
)
RESET = ProductionMethod(
    "src/main/java/p/Parser.java", _method("Parser.reset()", "Parser"), MethodChangeKind.CHANGED
)
CTOR = ProductionMethod(
    "src/main/java/p/Parser.java", _method("Parser.Parser(int)", "Parser"), MethodChangeKind.ADDED
)
GONE = ProductionMethod(
    "src/main/java/p/Parser.java", _method("Parser.old()", "Parser"), MethodChangeKind.REMOVED
)
ALL = [PARSE, RESET, CTOR, GONE]
TEST_FILE = "src/test/java/p/ParserTest.java"


def _links(test: MethodInfo) -> set[tuple[str, str]]:
    return {(prod.method.key, str(provenance)) for prod, provenance in static_links(test, TEST_FILE, ALL)}


def test_calls_constructors_and_naming() -> None:
    test = _method("ParserTest.testParse()", "ParserTest", calls={"parse", "Parser", "old"}, refs={"Parser"})
    assert _links(test) == {
        ("Parser.parse(String)", "call"),
        ("Parser.Parser(int)", "call"),
        ("Parser.parse(String)", "naming"),
    }


def test_class_reference_only_when_no_changed_method_of_the_class_is_called() -> None:
    test = _method("ParserTest.usesFactory()", "ParserTest", calls={"create"}, refs={"Parser"})
    assert _links(test) == {
        ("Parser.parse(String)", "class_reference"),
        ("Parser.reset()", "class_reference"),
        ("Parser.Parser(int)", "class_reference"),
    }


def test_unrelated_test_links_nothing() -> None:
    assert _links(_method("OtherTest.works()", "OtherTest", calls={"run"}, refs={"Other"})) == set()
