"""The Python method parser on the standard ast."""

from __future__ import annotations

import textwrap

import pytest

from miner import SourceSyntaxError, get_language
from miner.python import parse_python, scan_python_function

SOURCE = textwrap.dedent(
    """
    import unittest


    def helper(x):
        def inner():
            return x
        return inner()


    class Calc:
        @property
        def value(self):
            return 1

        @value.setter
        def value(self, v):
            pass

        class Nested:
            async def run(self):
                return Calc()


    class TestCalc:
        def test_value(self):
            calc = Calc()
            assert helper(calc.value) == 1

        def not_a_test(self):
            pass


    class CalcCase(unittest.TestCase):
        def test_case(self):
            self.assertEqual(helper(1), 1)


    def test_module_level():
        assert Calc.Nested
    """
).encode()


def test_functions_methods_and_nesting() -> None:
    parsed = parse_python(SOURCE)
    keys = [m.key for m in parsed.methods]
    assert keys == [
        "helper",
        "Calc.value",
        "Calc.value#2",
        "Calc.Nested.run",
        "TestCalc.test_value",
        "TestCalc.not_a_test",
        "CalcCase.test_case",
        "test_module_level",
    ]
    assert parsed.classes == ("Calc", "Calc.Nested", "TestCalc", "CalcCase")
    methods = parsed.by_key()
    assert (methods["Calc.value"].start_line, methods["Calc.value"].end_line) == (12, 14)
    assert methods["Calc.value"].source.startswith("    @property\n")
    assert [k for k, m in methods.items() if m.is_test] == [
        "TestCalc.test_value",
        "CalcCase.test_case",
        "test_module_level",
    ]
    assert methods["TestCalc.test_value"].calls == {"Calc", "helper"}
    assert methods["TestCalc.test_value"].type_refs == {"Calc"}


def test_tokens_ignore_comments_and_layout() -> None:
    a = parse_python(b"def test_a():\n    x = f( 1 )  # one\n    return x\n").methods[0]
    b = parse_python(b"def test_a():\n    # set x\n    x = f(1)\n\n    return x\n").methods[0]
    c = parse_python(b"def test_a():\n    x = f(2)\n    return x\n").methods[0]
    assert a.tokens == b.tokens != c.tokens


def test_coding_cookie_and_errors() -> None:
    latin = "# -*- coding: latin-1 -*-\ndef f():\n    return 'Café'\n".encode("latin-1")
    assert "Café" in parse_python(latin).methods[0].source
    with pytest.raises(SourceSyntaxError, match=r"line 2.*utf-8"):
        parse_python("def f():\n    return 'Café'\n".encode("latin-1"))
    with pytest.raises(SourceSyntaxError, match="line 2"):
        parse_python(b"def f():\n    return (\n")
    with pytest.raises(SourceSyntaxError):
        parse_python(b"x = 1\0")
    assert get_language("python").parse is parse_python


def test_scan_of_a_single_function() -> None:
    calls, type_refs, tokens = scan_python_function(
        "    def test_value(self):\n"
        "        calc = Calc()  # make one\n"
        "        assert helper(calc.value) == 1\n"
    )
    assert calls == {"Calc", "helper"}
    assert type_refs == {"Calc"}
    assert "# make one" not in tokens and tokens[:2] == ("def", "test_value")
    assert get_language("python").scan is scan_python_function
    unscanned = parse_python(SOURCE, scan="none").by_key()["TestCalc.test_value"]
    assert unscanned.calls == frozenset() and unscanned.is_test


def test_overload_stubs_are_not_methods() -> None:
    source = b"""from typing import overload
import typing


@overload
def edit(text: str) -> str: ...
@typing.overload
def edit(text: None) -> None: ...
def edit(text):
    return text
"""
    (method,) = parse_python(source).methods
    assert (method.key, method.start_line) == ("edit", 9)
