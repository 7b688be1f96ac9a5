"""Method-level changes between the old and new versions of a file."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from tasks import MethodChangeKind, TestChangeKind

from .errors import SourceSyntaxError
from .files import file_stem
from .parsing import MethodInfo, ParsedFile


@dataclass(frozen=True)
class MethodDelta:
    """One method across rev1 → rev2: ``old`` or ``new`` is None when it was added or removed."""

    key: str
    old: MethodInfo | None
    new: MethodInfo | None

    @property
    def changed(self) -> bool:
        return self.old is None or self.new is None or self.old.source != self.new.source

    @property
    def production_kind(self) -> MethodChangeKind:
        if self.old is None:
            return MethodChangeKind.ADDED
        if self.new is None:
            return MethodChangeKind.REMOVED
        return MethodChangeKind.CHANGED

    @property
    def test_kind(self) -> TestChangeKind:
        if self.old is None:
            return TestChangeKind.INSERTED
        if self.changed:
            return TestChangeKind.UPDATED
        return TestChangeKind.UNCHANGED_WITH_CHANGED_DEPENDENCIES


def method_deltas(
    old: ParsedFile | None,
    new: ParsedFile | None,
    old_path: str | None = None,
    new_path: str | None = None,
) -> list[MethodDelta]:
    """Every method of either version, matched by key, in new-file order then removed ones.

    When the file was renamed and its top-level class renamed with it (Java's
    ``FooTest.java`` → ``BarTest.java``), keys are matched across the rename.
    """
    old_methods = old.by_key() if old else {}
    new_methods = new.by_key() if new else {}
    rename = _class_rename(old_path, new_path)
    if rename:
        old_methods = {_rekey(key, *rename): method for key, method in old_methods.items()}
    deltas = [MethodDelta(key, old_methods.get(key), method) for key, method in new_methods.items()]
    deltas += [
        MethodDelta(key, method, None) for key, method in old_methods.items() if key not in new_methods
    ]
    return deltas


def _class_rename(old_path: str | None, new_path: str | None) -> tuple[str, str] | None:
    if not old_path or not new_path:
        return None
    old_stem, new_stem = file_stem(old_path), file_stem(new_path)
    return (old_stem, new_stem) if old_stem != new_stem else None


def _rekey(key: str, old_stem: str, new_stem: str) -> str:
    return new_stem + key[len(old_stem) :] if key.startswith(old_stem + ".") else key


class ParseCache:
    """Parsed files by blob id: a blob parsed once serves every pair that holds it."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._entries: OrderedDict[str, ParsedFile | SourceSyntaxError] = OrderedDict()

    def parse(
        self, blob_id: str, read: Callable[[], bytes], parse: Callable[[bytes], ParsedFile]
    ) -> ParsedFile:
        """The parse of a blob; ``read`` gives its content and is called only on a miss.

        Raises :class:`SourceSyntaxError` (cached too) when the blob does not parse.
        """
        entry = self._entries.get(blob_id)
        if entry is None:
            try:
                entry = parse(read())
            except SourceSyntaxError as exc:
                entry = exc
            self._entries[blob_id] = entry
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(blob_id)
        if isinstance(entry, SourceSyntaxError):
            raise entry
        return entry
