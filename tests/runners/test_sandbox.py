"""LocalSandbox: real processes, timeouts that kill the whole group, capped output."""

from __future__ import annotations

import os
import time
from pathlib import Path

from runners import LocalSandbox


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
