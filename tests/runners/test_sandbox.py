"""LocalSandbox: real processes, timeouts that kill the whole group, capped output."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from runners import LocalSandbox
from runners.sandbox.base import UnsafePath, read_beneath, write_beneath


def test_runs_in_the_worktree_with_env_and_files(tmp_path: Path) -> None:
    box = LocalSandbox(tmp_path, env={"GREETING": "hi"})
    box.write_file("sub/in.txt", b"data")
    result = box.exec(["sh", "-c", "echo $GREETING; cat sub/in.txt; echo err >&2; exit 3"], timeout=30)
    assert (result.exit_code, result.stdout, result.stderr, result.ok) == (3, "hi\ndata", "err\n", False)
    assert box.read_file("sub/in.txt") == b"data"
    assert box.read_file("missing") is None


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    box = LocalSandbox(tmp_path)
    started = time.monotonic()
    result = box.exec(["sh", "-c", "sleep 60 & echo $! > child.pid; wait"], timeout=1)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 30
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not _alive(child), "the grandchild survived the timeout"


def test_a_detached_grandchild_does_not_outlive_the_command(tmp_path: Path) -> None:
    """The command exits at once but leaves a child in the background holding its stdout: the call
    returns when the command does, and the child is gone."""
    box = LocalSandbox(tmp_path)
    started = time.monotonic()
    result = box.exec(["sh", "-c", "sleep 120 & echo $! > child.pid; echo done"], timeout=60)
    assert result.ok and result.stdout == "done\n"
    assert time.monotonic() - started < 30
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not _alive(child), "the background child outlived the command"


@pytest.mark.parametrize("command_waits", [True, False], ids=["command-hangs", "command-exits"])
def test_a_grandchild_that_left_the_group_and_holds_stdout_does_not_extend_the_timeout(
    tmp_path: Path, command_waits: bool
) -> None:
    """``setsid`` puts the grandchild out of reach of the group kill; it holds the pipe for 120 s.
    The call still returns about at the deadline (bounded generously here), not when it lets go."""
    box = LocalSandbox(tmp_path)
    tail = "sleep 120" if command_waits else "true"
    script = f"setsid sleep 120 & echo $! > escaped.pid; echo started; {tail}"
    started = time.monotonic()
    try:
        result = box.exec(["sh", "-c", script], timeout=2)
        assert time.monotonic() - started < 30
        assert result.stdout == "started\n"
        assert result.timed_out is command_waits
        assert result.exit_code == (None if command_waits else 0)
    finally:
        escaped = int((tmp_path / "escaped.pid").read_text())
        os.kill(escaped, signal.SIGKILL)


def test_megabytes_of_output_are_capped(tmp_path: Path) -> None:
    box = LocalSandbox(tmp_path, output_limit=64 * 1024)
    result = box.exec(["sh", "-c", "yes 0123456789 | head -c 20000000; echo END"], timeout=60)
    assert result.ok and result.truncated
    assert len(result.stdout) < 70 * 1024
    assert result.stdout.startswith("0123456789") and result.stdout.endswith("END\n")
    assert "[... output truncated ...]" in result.stdout


def test_a_missing_program_is_exit_127(tmp_path: Path) -> None:
    result = LocalSandbox(tmp_path).exec(["no-such-program-xyz"], timeout=5)
    assert result.exit_code == 127 and "no-such-program-xyz" in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie counts as dead.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_host_side_reads_and_writes_below_a_folder_follow_no_link(tmp_path: Path) -> None:
    """What coevo reads and writes in a worktree, scratch folder or venv that untrusted code could
    change: a link it left leads nowhere (neither out of the folder nor within it)."""
    root, outside = tmp_path / "worktree", tmp_path / "secret.txt"
    outside.write_text("the host's")
    (root / "target").mkdir(parents=True)
    (root / "target/cp.txt").symlink_to(outside)
    (root / "linked").symlink_to(tmp_path)
    os.mkfifo(root / "pipe")
    assert read_beneath(root, "target/cp.txt") is None
    assert read_beneath(root, "linked/secret.txt") is None
    assert read_beneath(root, "pipe") is None  # and returns at once
    assert read_beneath(root, "../secret.txt") is None
    for path in ("target/cp.txt", "linked/secret.txt", "linked/new.txt", "pipe", "../secret.txt", "/etc/x"):
        with pytest.raises(UnsafePath):
            write_beneath(root, path, b"written")
    assert outside.read_text() == "the host's" and not (tmp_path / "new.txt").exists()
    write_beneath(root, ".coevo/classpath/_root.txt", b"a\n")
    assert read_beneath(root, ".coevo/classpath/_root.txt") == b"a\n"
    assert read_beneath(root, "missing.txt") is None
