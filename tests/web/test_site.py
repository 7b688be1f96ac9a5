"""The site as files: deterministic, relative, escaped, and only written where coevo may."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tasks import Task, TaskStatus, open_store
from tests.cli import coevo
from tests.web.sites import HOSTILE, PAYLOADS, synthetic_store
from web import SiteError, render_site


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    render_site(synthetic_store(root / "s.db", 120), root / "site")
    return root / "site"


def test_the_same_store_renders_the_same_files(site: Path) -> None:
    again = site.parent / "again"
    render_site(open_store(site.parent / "s.db"), again)
    assert files(again) == files(site)
    assert len(list((site / "tasks").iterdir())) == 119  # one of the 120 is retired: not shown


def test_every_link_is_relative_and_leads_to_a_file_of_the_site(site: Path) -> None:
    outside = set()
    for page in site.rglob("*.html"):
        for target in re.findall(r'(?:href|src)="([^"]*)"', page.read_text()):
            if target.startswith(("#", "data:")):
                continue
            if "://" in target:
                outside.add(target.split("/commit/")[0])
                continue
            path = unquote(urlsplit(target).path)
            assert not path.startswith("/"), f"{page}: {target}"
            assert (page.parent / path).resolve().is_file(), f"{page}: {target} leads nowhere"
    # The only addresses outside the site are the commits of the repository that has a web URL.
    assert outside == {"https://github.com/example/calc"}


def test_text_a_repository_wrote_is_escaped_in_every_page_and_data_file(site: Path) -> None:
    for path in site.rglob("*"):
        if path.suffix not in (".html", ".js") or path.parent.name == "static":
            continue
        text = path.read_text()
        for payload in PAYLOADS:
            assert payload not in text, f"{path} holds {payload!r} unescaped"
        if path.suffix == ".js":
            assert "<" not in text and ">" not in text, path
    hostile = next(p for p in (site / "tasks").iterdir() if "&lt;script&gt;alert(1)" in p.read_text())
    page = hostile.read_text()
    assert "Fix &lt;script&gt;alert(1)&lt;/script&gt;" in page  # the commit message, as text
    # The data files still carry the text whole: the explorer shows exactly what was written.
    chunk = (site / "data" / "tasks-0000.js").read_text()
    rows = json.loads(chunk.removeprefix("coevo.chunk(0, ").removesuffix(");\n"))
    assert any(f"test_{PAYLOADS[0]}" in row[6] for row in rows)
    assert any(HOSTILE in json.dumps(row) or PAYLOADS[1] in row[3] for row in rows)


def test_a_folder_coevo_did_not_write_is_refused_and_its_own_is_rewritten(tmp_path: Path) -> None:
    store = synthetic_store(tmp_path / "s.db", 9, runs=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(SiteError, match="holds files coevo did not write"):
        render_site(store, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"

    out = tmp_path / "site"
    render_site(store, out)
    with store.session() as session:
        task = session.get(Task, next(p.stem for p in (out / "tasks").iterdir()))
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        session.add(task)
        session.commit()
    render_site(store, out)
    assert not (out / "tasks" / f"{task.id}.html").exists()  # retired pages do not linger
    assert len(list((out / "tasks").iterdir())) == 7


def test_coevo_site_renders_a_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    synthetic_store(db, 30).close()
    result = coevo("site", "--db", str(db), "--out", str(tmp_path / "from-db"))
    assert result.returncode == 0, result.stderr
    out = tmp_path / "from-db"
    assert result.stdout == f"site: wrote {out / 'index.html'} (29 tasks, 3 repositories, 3 agents)\n"
    both = coevo("site", "--db", str(db), "--snapshot", str(tmp_path))
    assert both.returncode != 0 and "give --db or --snapshot, not both" in both.stderr


def test_an_agent_trained_after_a_task_is_flagged_on_its_page(site: Path) -> None:
    first = next(p for p in (site / "tasks").iterdir() if p.stem.endswith("-0000000000000001"))  # 2024-01
    late = next(p for p in (site / "tasks").iterdir() if p.stem.endswith(f"-{118:016x}"))  # 2026-05
    flag = "after this task; the model may have seen it"
    page = first.read_text()
    rows = re.findall(r"<tr><td>([^<]*)</td>.*?</tr>", page, flags=re.S)
    flagged = re.findall(r"<tr><td>([^<]*)</td>(?:(?!</tr>).)*" + re.escape(flag), page, flags=re.S)
    assert set(rows) >= {"early-model", "late-model", "no-cutoff"}
    assert sorted(flagged) == ["early-model", "late-model"]
    assert flag not in late.read_text()
