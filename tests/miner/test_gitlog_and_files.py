"""The selection pass and the file classification, on real repositories and paths."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from miner import FilePatterns, FileRole, get_language, iter_log, plan_pairs
from miner.gitlog import read_commit
from tests.gitrepo import GitRepo


def test_log_streams_oldest_first_with_renames_and_odd_paths(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("one", "2024-01-01T10:00:00+02:00", {"src/a b.py": "x = 1\n" * 20, "tésts/ü.py": "y = 2\n"})
    repo.commit("two", "2024-01-02T10:00:00-05:00", {"src/a b.py": None, "c.py": "x = 1\n" * 20})
    repo.commit("three", "2024-01-03T10:00:00+00:00", renames={"c.py": "d/e f.py"})
    commits = list(iter_log(repo.path, ["HEAD"]))
    assert [c.sha for c in commits] == [repo.shas["one"], repo.shas["two"], repo.shas["three"]]
    assert {(ch.status, ch.path) for ch in commits[0].changes} == {("A", "src/a b.py"), ("A", "tésts/ü.py")}
    assert commits[0].committer_date.utcoffset() == timedelta(hours=2)
    assert commits[1].parents == (repo.shas["one"],)
    assert [(ch.status, ch.old_path, ch.path) for ch in commits[2].changes] == [("R", "c.py", "d/e f.py")]
    assert read_commit(repo.path, repo.shas["three"]) == commits[2]


def test_file_roles_by_language() -> None:
    java = FilePatterns.for_language(get_language("java"))
    assert java.role("src/test/java/a/FooTest.java") is FileRole.TEST
    assert java.role("module/src/test/java/a/Helper.java") is FileRole.TEST
    assert java.role("src/main/java/a/FooIT.java") is FileRole.TEST
    assert java.role("src/main/java/a/Foo.java") is FileRole.PRODUCTION
    assert java.role("src/main/java/a/package-info.java") is FileRole.OTHER
    assert java.role("src/main/resources/a.properties") is FileRole.OTHER
    python = FilePatterns.for_language(get_language("python"))
    assert python.role("tests/unit/helpers.py") is FileRole.TEST
    assert python.role("pkg/test_core.py") is FileRole.TEST
    assert python.role("pkg/core_test.py") is FileRole.TEST
    assert python.role("src/pkg/core.py") is FileRole.PRODUCTION
    assert python.role("docs/conf.py") is FileRole.OTHER
    assert python.role("setup.py") is FileRole.OTHER
    custom = FilePatterns.for_language(get_language("python"), test_globs=("spec/**",))
    assert custom.role("spec/core.py") is FileRole.TEST
    assert custom.role("tests/core.py") is FileRole.PRODUCTION


def test_window_walk_stops_at_test_commits_and_merges(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", "2024-01-01T00:00:00+00:00", {"m.py": "a = 1\n", "test_m.py": "t = 1\n"})
    repo.commit("prod 1", "2024-01-01T01:00:00+00:00", {"m.py": "a = 2\n"})
    repo.commit("prod 2", "2024-01-01T02:00:00+00:00", {"n.py": "b = 2\n"})
    repo.commit("test", "2024-01-01T03:00:00+00:00", {"test_m.py": "t = 2\n"})
    repo.commit("test again", "2024-01-01T04:00:00+00:00", {"test_m.py": "t = 3\n"})
    patterns = FilePatterns.for_language(get_language("python"))
    plans = {c.sha: p for c, p in plan_pairs(iter_log(repo.path, ["HEAD"]), patterns, lambda sha: None) if p}
    test = plans[repo.shas["test"]]
    assert test.rev1 == repo.shas["base"]
    assert [c.sha for c in test.commits] == [repo.shas["prod 1"], repo.shas["prod 2"], repo.shas["test"]]
    assert test.span_seconds == 2 * 3600
    assert plans[repo.shas["test again"]].outcome == "no_production_change"
    narrow = {
        c.sha: p
        for c, p in plan_pairs(
            iter_log(repo.path, ["HEAD"]), patterns, lambda sha: None, window=timedelta(minutes=90)
        )
        if p
    }
    assert narrow[repo.shas["test"]].rev1 == repo.shas["prod 1"]
