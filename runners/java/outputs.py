"""What a Java build leaves that its tests need, copied into a judge tree
(:mod:`runners.scoring.judge_tree`): each module's ``target/`` and coevo's classpath files, minus
every class compiled from the test files judged there (found by their ``SourceFile`` attribute)."""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..environments.envspec import EnvSpec
from ..sandbox.base import read_beneath, write_beneath
from .maven import STATE_DIR, classpath_file


def judge_outputs(worktree: Path, dest: Path, spec: EnvSpec, test_files: Sequence[str]) -> None:
    """The build outputs of ``worktree`` the tests need, in ``dest`` (a fresh export of the same
    revision), without any class compiled from ``test_files``."""
    _copy_java_outputs(worktree, dest, spec.modules or ("",))
    for path in test_files:
        _remove_compiled_java(dest, spec.module_for(path), path)


def _copy_java_outputs(worktree: Path, dest: Path, modules: Iterable[str]) -> None:
    """Each module's ``target/`` and coevo's classpath files, their paths moved to ``dest``."""
    for module in modules:
        # The build ran the project's code: a link it left is copied as a link, never followed.
        target = worktree / module / "target" if module else worktree / "target"
        if target.is_dir() and not target.is_symlink() and not target.parent.is_symlink():
            shutil.copytree(target, dest / target.relative_to(worktree), symlinks=True, dirs_exist_ok=True)
        listed = read_beneath(worktree, classpath_file(module))
        if listed is not None:
            moved = classpath_file(module)
            text = _moved_classpath(listed.decode("utf-8", errors="replace"), worktree, dest)
            write_beneath(dest, moved, text.encode())
    (dest / STATE_DIR).mkdir(exist_ok=True)
    (dest / STATE_DIR / ".gitignore").write_text("*\n")


def _moved_classpath(text: str, worktree: Path, dest: Path) -> str:
    """A classpath file's entries inside ``worktree`` moved to ``dest`` (host paths; a container's
    own paths, ``/work/...``, name the mounted tree wherever it is)."""
    old = str(worktree).rstrip("/") + "/"
    new = str(dest).rstrip("/") + "/"
    return "".join(
        new + line[len(old) :] if line.startswith(old) else line for line in text.splitlines(keepends=True)
    )


def _remove_compiled_java(dest: Path, module: str, test_file: str) -> None:
    """Deletes every class compiled from ``test_file`` (its classes, nested, local and anonymous
    ones, other top-level types it declares), found by their ``SourceFile`` attribute in the
    folder of the file's package, and the sources annotation processors made from tests."""
    root = dest / module / "target" if module else dest / "target"
    shutil.rmtree(root / "generated-test-sources", ignore_errors=True)
    package = _package_folder(dest / test_file, test_file)
    folder = root / "test-classes" / package
    for above in reversed([folder, *folder.parents]):
        if above.is_relative_to(dest) and above.is_symlink():
            above.unlink()  # a link the build left where the gold's classes are: none of it is copied
            return
    if not folder.is_dir():
        return
    name = os.path.basename(test_file)
    for class_file in folder.glob("*.class"):
        if class_file.is_symlink():  # a build's link could lead to any class: none is kept
            class_file.unlink()
            continue
        data = read_beneath(folder, class_file.name)
        try:
            source = source_file_of(data) if data is not None else None
        except ValueError:
            source = None
        stem = class_file.name.split("$")[0].removesuffix(".class")
        # A class that does not say its source (compiled with -g:none) goes when its name says so.
        if source == name or (source is None and stem == name.removesuffix(".java")):
            class_file.unlink()


def _package_folder(source: Path, test_file: str) -> str:
    """The package folder of a Java file: from its ``package`` line, else its path under ``java/``."""
    try:
        head = source.read_bytes()[:65536].decode("utf-8", errors="replace")
    except OSError:
        head = ""
    for line in head.splitlines():
        stripped = line.strip()
        if stripped.startswith("package ") and stripped.endswith(";"):
            return stripped.removeprefix("package ").removesuffix(";").strip().replace(".", "/")
    parts = test_file.split("/")
    return "/".join(parts[parts.index("java") + 1 : -1]) if "java" in parts[:-1] else ""


_CONSTANT_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2}
_CONSTANT_SIZES |= {17: 4, 18: 4, 19: 2, 20: 2}
"""Bytes after the tag of each constant pool entry but a UTF-8 string (JVMS 4.4)."""


def source_file_of(data: bytes) -> str | None:
    """The ``SourceFile`` attribute of a class file (``CalcTest.java``), or None when it has none.

    Raises ValueError when ``data`` is not a class file.
    """
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    try:
        return _read_source_file(data)
    except (struct.error, IndexError) as exc:
        raise ValueError(f"truncated class file: {exc}") from None


def _read_source_file(data: bytes) -> str | None:
    offset = 8
    (count,) = struct.unpack_from(">H", data, offset)
    offset += 2
    utf8: dict[int, bytes] = {}
    index = 1
    while index < count:
        tag = data[offset]
        offset += 1
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, offset)
            utf8[index] = data[offset + 2 : offset + 2 + length]
            offset += 2 + length
        elif tag in _CONSTANT_SIZES:
            offset += _CONSTANT_SIZES[tag]
        else:
            raise ValueError(f"unknown constant pool tag {tag}")
        index += 2 if tag in (5, 6) else 1  # longs and doubles take two slots
    offset += 6  # access flags, this class, super class
    (interfaces,) = struct.unpack_from(">H", data, offset)
    offset += 2 + 2 * interfaces
    for _ in range(2):  # fields, then methods: each with its attributes
        (members,) = struct.unpack_from(">H", data, offset)
        offset += 2
        for _ in range(members):
            offset += 6
            offset = _skip_attributes(data, offset)
    (attributes,) = struct.unpack_from(">H", data, offset)
    offset += 2
    for _ in range(attributes):
        name, length = struct.unpack_from(">HI", data, offset)
        if utf8.get(name) == b"SourceFile" and length == 2:
            (value,) = struct.unpack_from(">H", data, offset + 6)
            return utf8[value].decode("utf-8", errors="replace")
        offset += 6 + length
    return None


def _skip_attributes(data: bytes, offset: int) -> int:
    (attributes,) = struct.unpack_from(">H", data, offset)
    offset += 2
    for _ in range(attributes):
        (length,) = struct.unpack_from(">I", data, offset + 2)
        offset += 6 + length
    return offset
