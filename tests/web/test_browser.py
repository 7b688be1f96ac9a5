"""The site read in a real headless Chromium, served on loopback: the explorer filters as the store
counts, the leaderboard's slider recomputes what ``coevo leaderboard --after`` computes, and
nothing a repository wrote runs."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tasks import TaskStatus, Track, list_tasks, open_store
from tests.cli import coevo
from tests.gitrepo import GitRepo
from tests.web.conftest import Watched
from tests.web.sites import AGENTS, PAYLOADS, synthetic_store
from web import render_site, repo_page

pytestmark = pytest.mark.browser
EXE = Path(sys.executable).parent / "coevo"


@pytest.fixture(scope="module")
def store_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("browse")
    store = synthetic_store(root / "s.db", 600)
    render_site(store, root / "site")
    store.close()
    return root / "s.db", root / "site"


def test_the_explorer_filters_by_track_and_dates_as_the_store_counts(
    store_site: tuple[Path, Path], serve: Any, browser_page: Watched
) -> None:
    db, site = store_site
    page = browser_page.page
    browser_page.goto(serve(site) + "tasks.html")
    assert page.locator("#count").inner_text() == "599"
    assert page.locator("#rows tr").count() == 50
    page.select_option("#f-track", "generation")
    page.fill("#f-from", "2025-02-01")
    page.fill("#f-to", "2025-08-31")
    page.locator("#f-to").dispatch_event("change")
    page.wait_for_function("document.getElementById('loading').textContent === ''")
    expected = list_tasks(
        open_store(db), track=Track.GENERATION, since=datetime(2025, 2, 1, tzinfo=UTC),
        until=datetime(2025, 9, 1, tzinfo=UTC), statuses=[TaskStatus.ACTIVE],
    )  # fmt: skip
    count = len(expected.tasks)
    assert 0 < count < 599
    page.wait_for_function(f"document.getElementById('count').textContent === '{count}'")
    shown = page.locator("#rows tr td:nth-child(2)").all_inner_texts()
    assert set(shown) == {"generation"} and len(shown) == min(count, 50)
    dates = page.locator("#rows tr td:nth-child(1)").all_inner_texts()
    assert dates == sorted(dates, reverse=True)
    assert dates[-1] >= "2025-02-01" and dates[0] <= "2025-08-31"
    assert browser_page.errors == []


def test_a_task_page_shows_both_diffs_and_the_matrix(
    store_site: tuple[Path, Path], serve: Any, browser_page: Watched
) -> None:
    _, site = store_site
    page = browser_page.page
    browser_page.goto(serve(site) + "tasks.html")
    page.locator("#rows tr a").first.click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#gold-diff .gi").count() >= 2  # added lines, highlighted
    assert "raise TypeError('a')" in page.locator("#production-diff").inner_text()
    matrix = page.locator("table.matrix")
    assert matrix.locator("thead th").all_inner_texts() == ["test method", "label", "OO", "ON", "NO", "NN"]
    row = matrix.locator("tbody tr").first.locator("td")
    assert row.nth(3).inner_text().startswith("fail") and "runs: fail, fail" in row.nth(3).inner_text()
    assert row.nth(4).inner_text().startswith("pass")
    assert browser_page.errors == []


def _leaderboard(db: Path, after: str | None) -> list[dict[str, Any]]:
    args = ["leaderboard", "--db", str(db), "--json", *(["--after", after] if after else [])]
    result = coevo(*args)
    assert result.returncode == 0, result.stderr
    return [{k: v for k, v in s.items() if k != "groups"} for s in json.loads(result.stdout)]


def test_the_cutoff_slider_gives_the_scores_coevo_leaderboard_computes(
    store_site: tuple[Path, Path], serve: Any, browser_page: Watched
) -> None:
    db, site = store_site
    page = browser_page.page
    browser_page.goto(serve(site) + "leaderboard.html")
    slider = page.locator("#lb-after")
    stops = int(slider.get_attribute("max") or 0)
    assert stops > 24  # one per month of about 30
    compared = 0
    for position in (0, 1, stops // 3, stops // 2, stops - 6, stops):
        slider.fill(str(position))
        label = page.locator("#lb-after-label").inner_text()
        after = None if position == 0 else label
        assert position == 0 or (label.endswith("-01") and label[:4].isdigit())
        expected = _leaderboard(db, after)
        computed = page.evaluate("coevo.lastStandings")
        assert computed == expected, f"slider at {label}"
        # The table shows those numbers, in that order.
        cells = page.locator("#lb-rows tr").all()
        if expected:
            assert [c.locator("th").inner_text().removesuffix(" ⚠") for c in cells] == [
                s["agent"] for s in expected
            ]
            first = cells[0].locator("td").all_inner_texts()
            assert first[2] == f"{expected[0]['strict_success_rate']:.1f}"
            assert first[3] == f"{expected[0]['success_rate']:.1f}"
            compared += len(expected)
    assert compared >= 12
    # An agent is flagged while the slider's date is before its declared training cutoff.
    slider.fill("0")
    flagged = {t.removesuffix(" ⚠") for t in page.locator("#lb-rows th").all_inner_texts() if t.endswith("⚠")}
    assert flagged == {"early-model", "late-model"}
    assert browser_page.errors == []


def test_the_contamination_chart_draws_one_series_per_agent_with_a_cutoff(
    store_site: tuple[Path, Path], serve: Any, browser_page: Watched
) -> None:
    _, site = store_site
    page = browser_page.page
    browser_page.goto(serve(site) + "leaderboard.html")
    series = page.locator("#contamination-chart g.series")
    agents = sorted(name for name, _, cutoff in AGENTS if cutoff is not None)
    assert sorted(series.evaluate_all("gs => gs.map(g => g.dataset.agent)")) == agents
    assert all(series.nth(i).locator("circle").count() > 5 for i in range(series.count()))
    assert "no-cutoff" in page.locator("text=Not drawn").inner_text()


def test_no_page_has_a_console_error_and_hostile_text_stays_text(
    store_site: tuple[Path, Path], serve: Any, browser_page: Watched
) -> None:
    _, site = store_site
    base = serve(site)
    page = browser_page.page
    hostile_repo = f"evil{PAYLOADS[1]}"
    hostile_task = next(p.name for p in (site / "tasks").iterdir() if "alert(1)" in p.read_text())
    for name, path in (
        ("overview", "index.html"),
        ("explorer", "tasks.html"),
        ("task", f"tasks/{hostile_task}"),
        ("repository", repo_page(hostile_repo)),
        ("funnel", "funnel.html"),
        ("leaderboard", "leaderboard.html"),
    ):
        browser_page.goto(base + path)
        browser_page.shot(name)
        assert browser_page.errors == [], f"{path}: {browser_page.errors}"
        assert browser_page.dialogs == [], f"{path} ran a script: {browser_page.dialogs}"
    browser_page.goto(base + f"tasks/{hostile_task}")
    body = page.locator("main").inner_text()
    for payload in PAYLOADS:
        assert payload in body  # shown, as text
    assert page.locator("main img, main script").count() == 0
    # In the explorer too: rows from the data files are written as text.
    browser_page.goto(base + "tasks.html")
    page.fill("#f-text", "onerror")
    page.wait_for_function(
        "document.querySelectorAll('#rows tr').length > 0 && coevo.lastFilterMs !== undefined"
    )
    assert PAYLOADS[1] in page.locator("#rows").inner_text()
    assert page.locator("#rows img").count() == 0 and browser_page.dialogs == []
    # The dark theme is one click away and stays across pages.
    page.click("#theme-toggle")
    browser_page.goto(base + "leaderboard.html")
    assert page.evaluate("document.documentElement.dataset.theme") in ("dark", "light")
    browser_page.shot("leaderboard-other-theme")
    assert browser_page.errors == []


def test_a_mined_commit_with_hostile_message_and_code_renders_as_text(
    tmp_path: Path, serve: Any, browser_page: Watched
) -> None:
    """Mined and curated for real (on the host): the commit message and the files carry the payloads."""
    repo = GitRepo(tmp_path / "calc")
    calc = '"""Sums."""\n\n\ndef add(a, b):\n    return a + b\n'
    test = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    repo.commit(
        "start",
        "2026-03-01T10:00:00+00:00",
        {"calc.py": calc, "tests/test_calc.py": test, "requirements.txt": "\n"},
    )
    calc2 = calc + f"\n\ndef label(x):\n    return '{PAYLOADS[1]}' + str(x)  # {PAYLOADS[2]}\n"
    test2 = test.replace("import add", "import add, label") + (
        f'\n\ndef test_label():\n    """{PAYLOADS[0]}"""\n    assert label(1) == \'{PAYLOADS[1]}1\'\n'
    )
    repo.commit(
        f"Add label {PAYLOADS[0]} {PAYLOADS[2]}",
        "2026-03-02T10:00:00+00:00",
        {"calc.py": calc2, "tests/test_calc.py": test2},
    )
    env = {**os.environ, "COEVO_WORK": str(tmp_path / "work")}
    outputs = (
        "--db",
        str(tmp_path / "c.db"),
        "--snapshots",
        str(tmp_path / "snaps"),
        "--site",
        str(tmp_path / "site"),
    )
    ran = coevo(
        "run",
        str(repo.path),
        "--backend",
        "local",
        "--reruns",
        "1",
        *outputs,
        cwd=tmp_path,
        env=env,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stderr
    [task_page] = (tmp_path / "site" / "tasks").iterdir()
    page = browser_page.page
    browser_page.goto(serve(tmp_path / "site") + f"tasks/{task_page.name}")
    body = page.locator("main").inner_text()
    assert f"Add label {PAYLOADS[0]} {PAYLOADS[2]}" in body
    assert PAYLOADS[1] in page.locator("#production-diff").inner_text()
    assert PAYLOADS[0] in page.locator("#gold-diff").inner_text()
    assert browser_page.dialogs == [] and browser_page.errors == []
    assert page.locator("main img").count() == 0


def test_ten_thousand_tasks_first_paint_is_small_and_filtering_is_measured(
    tmp_path: Path, serve: Any, browser_page: Watched
) -> None:
    store = synthetic_store(tmp_path / "big.db", 10_000, runs=False)
    render_site(store, tmp_path / "site")
    page = browser_page.page
    browser_page.goto(serve(tmp_path / "site") + "tasks.html")
    first_paint = sum(size for _, size in browser_page.transferred)
    assert page.locator("#rows tr").count() == 50
    assert page.locator("#count").inner_text() == "9999"
    print(
        f"\nexplorer first paint over 10,000 tasks: {first_paint / 1024:.0f} KiB "
        f"in {len(browser_page.transferred)} requests"
    )
    assert first_paint < 1_000_000
    page.select_option("#f-language", "java")
    page.wait_for_function("coevo.lastFilterMs !== undefined")
    loaded = page.evaluate("coevo.lastFilterMs")
    page.evaluate("coevo.lastFilterMs = undefined")
    page.fill("#f-text", "test_more_99")
    page.wait_for_function("coevo.lastFilterMs !== undefined")
    typed = page.evaluate("coevo.lastFilterMs")
    print(f"filtering all 9,999 rows: {loaded:.1f} ms by language, {typed:.1f} ms by text")
    assert page.locator("#count").inner_text() == str(
        sum(1 for i in range(10_000) if i % 3 == 2 and i != 5 and "test_more_99" in f"test_more_{i}")
    )
    assert browser_page.errors == []
