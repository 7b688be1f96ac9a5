"""The command line as a user meets it: help, one-line errors, the main commands end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from coevo.cli import app, main
from tests.cli import coevo
from tests.gitrepo import GitRepo
from tests.miner.histories import java_history

COMMANDS = app.list_commands(click.Context(app))
"""Every command, as ``coevo --help`` lists them (each loaded from its stage's module when used)."""


def test_the_console_script_lists_every_command() -> None:
    result = coevo("--help", fresh=True)  # the console script as it starts
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str) -> None:
    """The help click renders for each command (in this process: the console script's own start is
    the test above)."""
    result = CliRunner().invoke(app, [command, "--help"], prog_name="coevo")
    assert result.exit_code == 0, result.output
    assert "Example: coevo " + command in " ".join(result.output.split())


def test_not_a_repository_is_one_line(tmp_path: Path) -> None:
    result = coevo("mine", str(tmp_path), "--db", str(tmp_path / "c.db"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {tmp_path} is not a git repository"]


def test_missing_path_is_one_line(tmp_path: Path) -> None:
    result = coevo("run", str(tmp_path / "nope"), "--db", str(tmp_path / "c.db"), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'nope'}: {tmp_path / 'nope'}: no such file or directory"
    ]


def test_unknown_option_and_bad_date_are_one_line(tmp_path: Path) -> None:
    result = coevo("mine", ".", "--bogus")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: No such option") and "--bogus" in line
    assert line.endswith("(see 'coevo mine --help')")
    result = coevo("candidates", "--since", "last tuesday", "--db", str(tmp_path / "c.db"))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "--since 'last tuesday' is not a date" in result.stderr


def test_a_repository_path_with_a_newline_is_printed_on_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "calc\nrepo"
    repo = java_history(odd)
    mined = coevo("mine", str(repo.path), "--db", str(tmp_path / "c.db"))
    assert mined.returncode == 0, mined.stderr
    (line,) = mined.stdout.splitlines()
    assert line.startswith("calc\\nrepo: completed")
    missing = coevo("mine", str(tmp_path / "not\na repo"), "--db", str(tmp_path / "c.db"))
    assert missing.returncode == 1
    (error,) = missing.stderr.splitlines()
    assert "not\\na repo" in error


def test_database_in_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    result = coevo("mine", str(repo.path), "--db", str(tmp_path / "no" / "such" / "c.db"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: cannot create the database {tmp_path}/no/such/c.db: its folder does not exist"
    ]
    result = coevo("candidates", "--db", str(tmp_path / "no" / "such" / "c.db"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: no coevo store at {tmp_path}/no/such/c.db: check --db (or $COEVO_DB), "
        "or create one with coevo mine REPO"
    ]


def test_run_then_candidates_text_and_json(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    db = tmp_path / "coevo.db"
    result = coevo("run", str(repo.path), "--db", str(db), "--no-curate", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("calc: completed — 17 commits read")
    assert "11 candidates" in result.stdout

    listing = coevo("candidates", "--db", str(db), "--limit", "3")
    lines = listing.stdout.splitlines()
    assert lines[-1] == (
        "11 candidates: 8 inserted, 1 unchanged_with_changed_dependencies, 2 updated"
        " — showing 3, 8 left out (--limit 0 shows all)"
    )
    assert "ArithmeticTest.testSubtractNegative()" in listing.stdout
    assert "Calculator.subtract(int,int) [call]" in listing.stdout

    data = json.loads(coevo("candidates", "--db", str(db), "--json", "--kind", "updated").stdout)
    assert data["total"] == 2
    assert {c["test_method"] for c in data["candidates"]} == {
        "CalculatorTest.testAdd()",
        "ArithmeticTest.testMax()",
    }
    assert data["candidates"][0]["rev2_date"] == "2024-03-10T09:00:00Z"

    unknown = coevo("candidates", "--db", str(db), "--repo", "nope")
    assert unknown.stderr.splitlines() == ["error: no repository named 'nope' (known: calc)"]


def test_readme_first_command_example_then_run_gives_a_task_of_each_track(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    made = coevo("example", "example-repo", cwd=tmp_path, fresh=True)
    assert made.stdout.startswith("wrote example-repo"), made.stderr
    again = coevo("example", "example-repo", cwd=tmp_path)  # the README command can be run twice
    assert again.returncode == 0 and again.stdout.startswith("already there: example-repo")
    result = coevo("run", "example-repo", "--backend", "local", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    *lines, snapshot, site = result.stdout.splitlines()
    assert lines == [
        "example-repo: completed — 5 commits read, 5 selected, 4 changed tests (0 already mined), 2 pairs, "
        "2 candidates, 0 files skipped",
        "curation: completed — 2 pairs curated (local): 1 test_generation, 1 test_update_positive",
    ]
    [written] = (tmp_path / "snapshots").iterdir()
    added = "(2 tasks; 2 added, 0 retired (the first snapshot there))"
    assert snapshot == f"snapshot: wrote snapshots/{written.name} {added}"
    assert site == "site: wrote site/index.html (2 tasks, 1 repositories, 0 agents)"
    pages = sorted(p.name for p in (tmp_path / "site" / "tasks").iterdir())
    assert len(pages) == 2
    # The snapshot renders the same task pages (it carries the tasks, not the agents' runs).
    again = coevo("site", "--snapshot", f"snapshots/{written.name}", "--out", "snapshot-site", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in (tmp_path / "snapshot-site" / "tasks").iterdir()) == pages
    index = (tmp_path / "snapshot-site" / "index.html").read_text()
    assert f"Rendered by coevo from snapshot {written.name}" in index
    funnel = json.loads(coevo("funnel", "--json", cwd=tmp_path).stdout)
    assert funnel["overall"]["tasks"] == {"generation": 1, "update": 1}
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    taken = coevo("example", "taken", cwd=tmp_path)
    assert taken.returncode == 1
    assert taken.stderr.splitlines() == [
        "error: taken exists and is not empty: choose a new folder for the example"
    ]


def test_run_reports_a_bad_repository_and_mines_the_good_one(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    result = coevo(
        "run",
        str(tmp_path / "missing"),
        str(repo.path),
        "--db",
        str(tmp_path / "c.db"),
        "--json",
        "--no-curate",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert [r["repository"] for r in data["runs"]] == ["calc"]
    assert list(data["errors"]) == [str(tmp_path / "missing")]


def test_mine_a_clone_url_then_fetch_new_commits(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    clones = tmp_path / "clones"

    def mine_url() -> dict:
        result = coevo(
            "mine", repo.path.as_uri(), "--json", "--db", str(tmp_path / "c.db"),
            env={**os.environ, "COEVO_CLONES": str(clones)},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        (run,) = json.loads(result.stdout)["runs"]
        return run

    first = mine_url()
    assert (first["repository"], first["candidates"]) == ("calc", 11)
    assert len(list(clones.iterdir())) == 1
    calc = "src/main/java/demo/Calculator.java"
    test = "src/test/java/demo/ArithmeticTest.java"
    repo.commit("later", "2024-04-01T10:00:00+00:00", {
        calc: repo.read(calc).replace("return a * b;", "return Math.multiplyExact(a, b);"),
        test: repo.read(test).rstrip().removesuffix("}")
        + "    @Test\n    void testMultiply() {\n        assertEquals(6, calc.multiply(2, 3));\n    }\n}\n",
    })  # fmt: skip
    second = mine_url()
    assert (second["commits_scanned"], second["candidates"]) == (1, 1)


def test_json_lists_every_candidate_and_text_says_what_its_limit_left_out(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "many")
    tests = "".join(f"def test_double_{n}():\n    assert double({n}) == {2 * n}\n\n\n" for n in range(60))
    core = "many/core.py"
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {core: "def double(x):\n    return x + x\n"})
    repo.commit("many tests", "2024-05-02T10:00:00+00:00", {
        core: "def double(x):\n    return 2 * x\n",
        "tests/test_core.py": "from many.core import double\n\n\n" + tests,
    })  # fmt: skip
    db = str(tmp_path / "c.db")
    assert coevo("mine", str(repo.path), "--db", db).returncode == 0
    data = json.loads(coevo("candidates", "--db", db, "--json").stdout)
    assert data["total"] == len(data["candidates"]) == 60
    limited = json.loads(coevo("candidates", "--db", db, "--json", "--limit", "7").stdout)
    assert (limited["total"], len(limited["candidates"])) == (60, 7)
    text = coevo("candidates", "--db", db).stdout.splitlines()
    assert text[-1] == "60 candidates: 60 inserted — showing 50, 10 left out (--limit 0 shows all)"
    assert len(text) == 1 + 50 + 1  # header, rows, counts
    everything = coevo("candidates", "--db", db, "--limit", "0").stdout.splitlines()
    assert (len(everything), everything[-1]) == (1 + 60 + 1, "60 candidates: 60 inserted")


def test_main_returns_exit_codes_without_raising() -> None:
    assert main(["--help"]) == 0
    assert main(["nope"]) == 2


def test_env_show_text_json_and_bad_revision(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    text = coevo("env", "show", f"{repo.path}@{repo.shas['inserted test']}")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[:3] == [
        f"revision   {repo.shas['inserted test']}",
        "language   java 17 (base image key java17)",
        "build      maven",
    ]
    assert "FROM debian:bookworm-slim" in text.stdout  # the base Dockerfile
    assert "-Dmaven.repo.local=/opt/coevo/m2" in text.stdout  # the deps script over it
    data = json.loads(coevo("env", "show", str(repo.path), "--json", "--maven-arg", "-Dx=1").stdout)
    assert (data["revision"], data["language_version"], data["modules"]) == (
        repo.shas["unchanged test, changed code"],
        "17",
        [""],
    )
    base, deps = data["images"]
    assert base["tag"].startswith("coevo-base:java17-") and deps["tag"].startswith("coevo-deps:java17-")
    assert f"a container of\n# {base['tag']}" in deps["script"] and " -Dx=1 test-compile" in deps["script"]
    custom = coevo("env", "show", str(repo.path), "--base-image", "java17=my/debian:12")
    assert "FROM my/debian:12" in custom.stdout
    assert coevo("env", "show", str(repo.path), "--base-image", "java17").returncode == 2
    bad = coevo("env", "show", f"{repo.path}@no-such-branch")
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [f"error: {repo.path} has no revision 'no-such-branch'"]
