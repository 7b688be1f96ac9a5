"""Agents written to cheat, run for real on Java tasks (the Java curation history, one task of
each track): none gets a success, none changes what other runs read; and on the host, the tree an
agent is judged in holds no gold in either language."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runners import adversaries as a
from tests.runners.judged import (
    ONCE,
    Curated,
    gold_is_perfect,
    no_success,
    successful_but_not_strict,
)


@pytest.mark.docker
@pytest.mark.maven
@pytest.mark.slow
def test_java_cheats_get_nothing_and_change_nothing(java_tasks: Curated, tmp_path: Path) -> None:
    gold_is_perfect(java_tasks)
    before = java_tasks.fingerprint()
    kinds = ("thief", "sibling", "poisoner", "shallow", "pit", "tells")
    agents = a.write_agents(tmp_path, {kind: {"run.sh": a.COPY, **a.java_files(kind)} for kind in kinds})
    for agent in kinds:
        result = java_tasks.score(agent, agents, "--backend", "docker", *ONCE)
        assert result.returncode == 0, (agent, result.stderr)
    for agent in ("thief", "sibling"):
        runs = java_tasks.runs(agent)
        for track, method in (
            ("generation", "SubtractorTest.testSubtract()"),
            ("update", "GreeterTest.testGreet()"),
        ):
            no_success(runs[track])
            message = runs[track].outcomes[method]["message"]
            assert "no gold found; tried: []" in message, message
    successful_but_not_strict(java_tasks.runs("shallow"))
    # PIT's "no mutations" line forged, its minion ended, the focal class deleted, its report
    # rewritten from a process of the test's own: nothing of it reaches strictness or MutOnPass.
    tricked = java_tasks.runs("pit")
    successful_but_not_strict(tricked)
    assert tricked["update"].mutation_on_pass == 0.0, tricked["update"].mutants
    # The launcher's discovery line printed by a real test, javac quoting "error: file not found".
    told = java_tasks.runs("tells")
    assert set(told) == {"generation", "update"}, told  # no task skipped
    assert (told["generation"].success_rate, told["update"].compile_fail_rate) == (1.0, 1.0), told
    poisoned = java_tasks.runs("poisoner")
    assert {track: run.pass_rate for track, run in poisoned.items()} == {"generation": 1.0, "update": 1.0}
    assert java_tasks.fingerprint() == before
    gold_is_perfect(java_tasks, "--redo")


@pytest.mark.maven
@pytest.mark.slow
def test_the_judge_tree_is_clean_on_the_host_too(
    python_tasks: Curated, java_tasks: Curated, tmp_path: Path
) -> None:
    """A trusted agent on the host could read anything; still, the tree it is judged in holds no gold."""
    agents = a.write_agents(
        tmp_path,
        {"sibling": {"run.sh": a.COPY, "test_shapes.py": a.PY_SIBLING, **a.java_files("sibling")}},
    )
    # On the host the agent works in its workspace: /agent is its folder there.
    text = agents.read_text().replace("sh /agent/run.sh", f"sh {tmp_path / 'sibling' / 'run.sh'}")
    agents.write_text(text)
    (tmp_path / "sibling" / "run.sh").write_text(f'cp "{tmp_path / "sibling"}/$(basename "$1")" "$1"\n')
    for curated, methods in (
        (python_tasks, ("test_triangle", "test_rectangle")),
        (java_tasks, ("SubtractorTest.testSubtract()", "GreeterTest.testGreet()")),
    ):
        result = curated.score("sibling", agents, "--backend", "local", "--trust-agent", *ONCE)
        assert result.returncode == 0, result.stderr
        runs = curated.runs("sibling")
        for (track, run), method in zip(sorted(runs.items()), methods, strict=True):
            no_success(run)
            assert "no gold found" in run.outcomes[method]["message"], (track, run.outcomes)
