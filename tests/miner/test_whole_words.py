"""The whole-word check that keeps an unchanged test only when it names a changed method: the set
of the text's words must agree with the pattern it replaced, ``\\b(?:name|…)\\b``."""

from __future__ import annotations

import re

import pytest

from miner.analysis import holds_a_word

TEXTS = (
    "assertEquals(5, Calc.add(2, 3));",
    "int added = adder.addAll(xs);",
    "new Calc(); Calc$Inner.run();",
    "x = café(1) + naïve_total",
    "self.assertEqual(f_2(x), 3)  # add",
    "",
    "_add(1)\n__init__()",
    "Calc.add\tCalc.subtract",
)
NAMES = (
    frozenset(),
    frozenset({"add"}),
    frozenset({"add", "addAll"}),
    frozenset({"dd"}),
    frozenset({"Calc"}),
    frozenset({"Calc$Inner"}),
    frozenset({"café"}),
    frozenset({"naïve_total", "missing"}),
    frozenset({"f_2"}),
    frozenset({"__init__"}),
    frozenset({"a.b"}),
    frozenset({""}),
)


@pytest.mark.parametrize("names", NAMES, ids=lambda names: ",".join(sorted(names)) or "none")
def test_the_word_set_agrees_with_the_pattern(names: frozenset[str]) -> None:
    check = holds_a_word(names)
    for text in TEXTS:
        if names:
            pattern = r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b"
            expected = re.search(pattern, text) is not None
        else:
            expected = False  # no changed method: nothing to name
        assert check(text) is expected, (names, text)
