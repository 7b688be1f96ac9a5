"""Static links from test methods to the production methods they probably exercise.

Curation replaces these with per-test coverage; they remain its fallback, so
each link records how it was found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from tasks import LinkProvenance, MethodChangeKind

from .files import file_stem
from .parsing import MethodInfo

_CONSTRUCTOR_NAMES = {"__init__", "__new__", "__post_init__"}
_TEST_AFFIXES = re.compile(r"^(Test)|(Tests|Test|IT|TestCase|Spec)$")
_MODULE_AFFIXES = re.compile(r"^(test_)|(_tests?)$")


@dataclass(frozen=True)
class ProductionMethod:
    """A changed production method, as the linker sees it."""

    file: str
    method: MethodInfo
    kind: MethodChangeKind

    @cached_property
    def class_name(self) -> str:
        """The innermost enclosing class, or the module name for a module-level function."""
        if self.method.container:
            return self.method.container.rsplit(".", 1)[-1]
        return file_stem(self.file)

    @cached_property
    def is_constructor(self) -> bool:
        return self.method.name == self.class_name or self.method.name in _CONSTRUCTOR_NAMES


def static_links(
    test: MethodInfo, test_file: str, production: list[ProductionMethod]
) -> list[tuple[ProductionMethod, LinkProvenance]]:
    """Every (production method, provenance) the test method reaches by name.

    Removed methods are never linked: the new test cannot call them.
    """
    subjects = _subjects(test, test_file)
    test_words = test.name.lower().removeprefix("test").strip("_")
    linkable = [prod for prod in production if prod.kind is not MethodChangeKind.REMOVED]
    units = [prod for prod in linkable if prod.method.unit != "method"]
    linkable = [prod for prod in linkable if prod.method.unit == "method"]
    called = [prod for prod in linkable if _calls(test, prod)]
    called_classes = {prod.class_name for prod in called}
    links = [(prod, LinkProvenance.CALL) for prod in called]
    for prod in linkable:
        # A named class is a weaker hint than a call: it links the class's changed methods only
        # when the test calls none of them (it may reach them through an interface or a helper).
        if prod.class_name in test.type_refs and prod.class_name not in called_classes:
            links.append((prod, LinkProvenance.CLASS_REFERENCE))
        name = prod.method.name.lower().strip("_")
        if prod.class_name in subjects and name and name in test_words:
            links.append((prod, LinkProvenance.NAMING))
    # Fields, constants and module-level names run at class load or import: named, not called.
    links += [(prod, LinkProvenance.REFERENCE) for prod in units if prod.method.name in test.tokens]
    return links


def _calls(test: MethodInfo, prod: ProductionMethod) -> bool:
    return (prod.class_name if prod.is_constructor else prod.method.name) in test.calls


def _subjects(test: MethodInfo, test_file: str) -> set[str]:
    """Class and module names the test's own names point at: ``CalcTest`` → ``Calc``."""
    names = {_TEST_AFFIXES.sub("", part) for part in test.container.split(".") if part}
    names.add(_TEST_AFFIXES.sub("", file_stem(test_file)))
    names.add(_MODULE_AFFIXES.sub("", file_stem(test_file)))
    return {name for name in names if name}
