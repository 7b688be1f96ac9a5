"""Reading what an agent left: never a link, a device or a FIFO, never too much, never through git."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from runners.java.outputs import source_file_of
from runners.scoring.workspace import UnreadableTestFile, changed_paths, read_agent_file, tree_state


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    (root / "x.py").write_text("X = 1\n")
    return root


def test_a_regular_file_is_read_and_a_missing_one_is_none(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    assert read_agent_file(root, "tests/test_x.py") == b"def test_x():\n    assert True\n"
    assert read_agent_file(root, "tests/test_y.py") is None
    assert read_agent_file(root, "missing/test_y.py") is None


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda root, path: path.symlink_to("/proc/self/environ"), "is a symbolic link"),
        (lambda root, path: path.symlink_to(root / "x.py"), "is a symbolic link"),
        (lambda root, path: os.mkfifo(path), "is a FIFO"),
        (lambda root, path: path.mkdir(), "is a folder"),
        (
            lambda root, path: path.write_bytes(b"#" * 600_000),
            "has 600000 bytes, more than the 524288 allowed",
        ),
    ],
    ids=["link-to-environ", "link-inside", "fifo", "folder", "huge"],
)
def test_anything_but_a_small_regular_file_is_refused_saying_what_it_is(
    tmp_path: Path, make: object, said: str
) -> None:
    root = _workspace(tmp_path)
    path = root / "tests" / "test_x.py"
    path.unlink()
    make(root, path)  # type: ignore[operator]
    # A FIFO would block a plain open() until a writer came: the read must return at once.
    result: list[BaseException] = []
    reader = threading.Thread(target=lambda: _capture(result, root), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading the agent's file blocked"
    assert len(result) == 1 and isinstance(result[0], UnreadableTestFile), result
    assert said in str(result[0])


def _capture(result: list[BaseException], root: Path) -> None:
    try:
        read_agent_file(root, "tests/test_x.py")
    except BaseException as exc:  # the test inspects it
        result.append(exc)


def test_a_link_in_a_folder_above_the_file_is_not_followed(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    outside = tmp_path / "outside"
    (outside / "tests").mkdir(parents=True)
    (outside / "tests" / "test_x.py").write_text("SECRET = 'gold'\n")
    subprocess.run(["rm", "-rf", str(root / "tests")], check=True)
    (root / "tests").symlink_to(outside / "tests")
    with pytest.raises(UnreadableTestFile, match="tests is a symbolic link, not a folder"):
        read_agent_file(root, "tests/test_x.py")
    with pytest.raises(UnreadableTestFile, match="not a path inside the workspace"):
        read_agent_file(root, "../outside/tests/test_x.py")


def test_the_tree_state_lists_changes_without_following_links_or_reading_git(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / ".git").mkdir()
    before = tree_state(root)
    assert set(before.files) == {"tests/test_x.py", "x.py"} and not before.over
    (root / "x.py").write_text("X = 2\n")
    (root / "tests" / "test_x.py").unlink()
    (root / "everything").symlink_to("/")  # never walked into
    (root / ".git" / "config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    after = tree_state(root)
    assert changed_paths(before, after) == ["everything", "tests/test_x.py", "x.py"]
    assert after.files["everything"] == ("link", 0, "/")


def test_a_workspace_over_its_limit_says_so(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "big").write_bytes(b"0" * 4096)
    state = tree_state(root, max_bytes=1024)
    assert state.over == "more than 1024 bytes of files"


@pytest.mark.maven
def test_the_source_file_of_a_class_names_the_file_it_was_compiled_from(tmp_path: Path) -> None:
    source = tmp_path / "demo" / "CalcTest.java"
    source.parent.mkdir()
    source.write_text(
        "package demo;\n"
        "class CalcTest {\n"
        "    static final long BIG = 1L << 40; static final double D = 0.5;\n"
        "    class Inner {}\n"
        "    Runnable r = () -> {}; Object o = new Object() {};\n"
        "    void run() { class Local {} new Local(); }\n"
        "}\n"
        "class Helper {}\n"
    )
    subprocess.run(["javac", "-d", str(tmp_path / "out"), str(source)], check=True)
    classes = sorted((tmp_path / "out" / "demo").glob("*.class"))
    assert {c.name for c in classes} >= {
        "CalcTest.class",
        "CalcTest$Inner.class",
        "CalcTest$1.class",
        "Helper.class",
    }
    assert {source_file_of(c.read_bytes()) for c in classes} == {"CalcTest.java"}
    subprocess.run(["javac", "-g:none", "-d", str(tmp_path / "bare"), str(source)], check=True)
    assert source_file_of((tmp_path / "bare" / "demo" / "CalcTest.class").read_bytes()) is None
    with pytest.raises(ValueError, match="not a class file"):
        source_file_of(b"PK\x03\x04")
