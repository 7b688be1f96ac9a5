"""Benchmark the build rate of historical revisions: coevo at a baseline ref against this checkout.

Over a fixed list of real repositories (three Python, three Java, of clearly different ages) and
a fixed window of their mined pairs (:data:`WINDOWS`: the last ``pairs`` pairs whose rev2 is
before ``until``, mined from the year before it), every revision the window needs (rev1 and
rev2 of each pair, each once) is built with two behaviours:

* **old**: coevo at ``--baseline-ref`` (default ``fafe496``, main before issue 12), exported
  with ``git archive`` into ``--cache`` with a venv of its own;
* **new**: the checkout this script lives in, run with the interpreter running the script.

Each build is ``coevo env build REPO@SHA --backend BACKEND --json`` in a process of its own, with
a timeout and its own ``COEVO_WORK``/``COEVO_VENVS``/``COEVO_M2`` under ``--cache`` (one
behaviour never reuses the other's venvs or Maven repository; Docker images are shared, as they
are keyed by their content). Results are kept per (coevo commit, repository, revision) in
``--results DIR/<commit>.json``, so a rerun skips what it has and the two behaviours can run at
different times (``--only old``, ``--only new``). The window's revisions are kept in
``DIR/windows.json`` so both behaviours build the same ones.

It prints, per behaviour and repository, the build rate, how many built whole (ok with no note:
no test module lost to an import error, no Maven module left out) and seconds per build; the
cause of each failure and each note (one line: :func:`runners.cause_line` on the build
message); with ``--again N``, the seconds of a second build of revisions that built (their
images and venvs are content-keyed, so it must cost less than the first); and with both
behaviours measured, the overall rates (goal: at least 90% with the new behaviour) and the
regressions (revisions that built with the old behaviour and fail with the new). It exits 1
when both were measured and there is a regression or the new rate is under 90%.

The repositories are never downloaded here: clone them yourself into ``--repos-dir``, one
folder per repository named as in :data:`WINDOWS` (``requests``, ``gson``, …), or pass
``NAME=PATH`` arguments.

Example::

    python bench/build_rate.py --repos-dir ~/bench-repos --results ~/build-rate --only old --again 1
    python bench/build_rate.py --repos-dir ~/bench-repos --results ~/build-rate --only new --again 1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlmodel import col, select

from runners import cause_line
from tasks import Repository, RevisionPair, open_store

BEHAVIOURS = ("old", "new")
GOAL = 0.9
CHECKOUT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Window:
    """A repository (by its public name) and the pairs of it whose revisions are built."""

    public: str
    """``owner/name`` on GitHub: where to clone it from (this script never does)."""
    language: str
    until: str
    """The window ends before this date (YYYY-MM-DD); it is mined from a year before."""
    pairs: int
    """The last this many pairs (by rev2's date) are taken."""
    era: str

    @property
    def name(self) -> str:
        return self.public.split("/")[1]


WINDOWS = (
    Window("python-attrs/attrs", "python", "2016-09-01", 4, "2016: Python 2 era, unpinned test deps"),
    Window("psf/requests", "python", "2022-07-01", 4, "2022: urllib3 2 and pytest 8 came later"),
    Window("pallets/flask", "python", "2026-04-01", 4, "2026: recent"),
    Window("JodaOrg/joda-time", "java", "2015-07-01", 4, "2015: source 1.5, Java 5 era"),
    Window("apache/commons-lang", "java", "2020-07-01", 4, "2020: Java 8"),
    Window("google/gson", "java", "2026-06-01", 4, "2026: recent"),
)


@dataclass(frozen=True)
class Revision:
    """One revision of a window to build."""

    repo: str
    sha: str
    date: str


@dataclass(frozen=True)
class Build:
    """The outcome of one ``coevo env build``: ``ok``, ``failed`` (the build failed), ``error``
    (coevo stopped with an error line: no environment for it) or ``timeout``."""

    status: str
    cause: str
    seconds: float
    choices: list[dict[str, str]]
    image: str | None = None
    again_seconds: float | None = None
    """With ``--again``: the seconds of a second build of the same revision (nothing new to
    make: its images and venv are keyed by their content)."""
    again_status: str | None = None


# --- The window (mined once, kept) ----------------------------------------------------------------


def window_revisions(window: Window, path: Path, results: Path) -> list[Revision]:
    """The revisions of ``window`` to build, oldest first: read from ``windows.json`` when an
    earlier run mined them, else mined now with this checkout's ``coevo mine`` and kept."""
    kept_file = results / "windows.json"
    kept = json.loads(kept_file.read_text()) if kept_file.exists() else {}
    key = f"{window.public} until {window.until} pairs {window.pairs}"
    if key not in kept:
        kept[key] = [asdict(r) for r in _mine(window, path)]
        _write_json(kept_file, kept)
    return [Revision(**r) for r in kept[key]]


def _mine(window: Window, path: Path) -> list[Revision]:
    until = datetime.fromisoformat(window.until).replace(tzinfo=UTC)
    since = (until - timedelta(days=365)).date().isoformat()
    with tempfile.TemporaryDirectory(prefix="build-rate-mine-") as tmp:
        db = Path(tmp) / "mined.db"
        command = [sys.executable, "-m", "coevo.cli", "mine", str(path), "--language", window.language]
        command += ["--since", since, "--until", window.until, "--db", str(db), "--json"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=CHECKOUT, check=False)
        if done.returncode != 0:
            raise SystemExit(f"mining {window.public} failed: {done.stderr.strip()[-500:]}")
        store = open_store(str(db))
        with store.session() as s:
            repo = s.exec(select(Repository)).one()
            query = select(RevisionPair).where(RevisionPair.repository_id == repo.id)
            pairs = s.exec(query.order_by(col(RevisionPair.rev2_date).desc())).all()[: window.pairs]
            dates = {p.rev1: p.rev1_date for p in pairs} | {p.rev2: p.rev2_date for p in pairs}
        store.close()
    revisions = [Revision(window.name, sha, when.isoformat() if when else "") for sha, when in dates.items()]
    return sorted(revisions, key=lambda r: r.date)


# --- The two behaviours ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Coevo:
    """One behaviour: the commit it is, and how to run its CLI."""

    behaviour: str
    commit: str
    python: Path
    source: Path


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, check=True
    ).stdout


def new_coevo() -> Coevo:
    """This checkout, as committed (``+dirty`` when tracked files differ from HEAD)."""
    commit = _git("rev-parse", "HEAD").strip()
    if _git("status", "--porcelain", "--untracked-files=no").strip():
        commit += "+dirty"
    return Coevo("new", commit, Path(sys.executable), CHECKOUT)


def old_coevo(ref: str, cache: Path) -> Coevo:
    """coevo at ``ref``, exported into ``cache`` with its own venv (made once)."""
    commit = _git("rev-parse", f"{ref}^{{commit}}").strip()
    source = cache / f"coevo-{commit[:12]}"
    python = source / ".venv" / "bin" / "python"
    if not python.exists():
        print(f"installing coevo {commit[:12]} into {source}", file=sys.stderr, flush=True)
        source.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(CHECKOUT), "archive", "--format=tar", commit], capture_output=True, check=True
        )
        with tempfile.TemporaryFile() as handle:
            handle.write(archive.stdout)
            handle.seek(0)
            with tarfile.open(fileobj=handle) as tar:
                tar.extractall(source, filter="data")
        subprocess.run([sys.executable, "-m", "venv", str(source / ".venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(source)], check=True)
    return Coevo("old", commit, python, source)


def build(
    coevo: Coevo, revision: Revision, path: Path, language: str, backend: str, cache: Path, timeout: float
) -> Build:
    """Builds one revision with ``coevo env build`` in a process group of its own; on timeout
    the group gets SIGTERM (coevo removes its containers) and, a minute later, SIGKILL."""
    caches = cache / f"caches-{coevo.commit[:12]}"
    env = os.environ | {
        "COEVO_WORK": str(caches / "work"),
        "COEVO_VENVS": str(caches / "venvs"),
        "COEVO_M2": str(caches / "m2"),
    }
    command = [str(coevo.python), "-m", "coevo.cli", "env", "build", f"{path}@{revision.sha}"]
    command += ["--backend", backend, "--language", language, "--json"]
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            command, stdout=out, stderr=err, cwd=coevo.source, env=env, start_new_session=True
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            return Build("timeout", f"no result after {timeout:.0f} s", time.monotonic() - started, [])
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    try:
        run: dict[str, Any] = json.loads(stdout)
    except ValueError:
        lines = [line for line in stderr.splitlines() if line.strip()]
        cause = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
        return Build("error", cause or f"exit {code}, no output", seconds, [])
    result = run["build"]
    status = "ok" if result["ok"] and code == 0 else "failed"
    return Build(status, cause_line(result["message"]), seconds, result.get("choices", []), run.get("image"))


# --- Results ----------------------------------------------------------------------------------


def _write_json(path: Path, value: object) -> None:
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(value, indent=1, sort_keys=True))
    scratch.replace(path)


def load_results(results: Path, commit: str) -> dict[str, Build]:
    """Builds kept for coevo ``commit``, by ``repo@sha``."""
    path = results / f"{commit}.json"
    if not path.exists():
        return {}
    return {key: Build(**value) for key, value in json.loads(path.read_text())["builds"].items()}


def save_results(results: Path, coevo: Coevo, builds: dict[str, Build]) -> None:
    payload = {
        "commit": coevo.commit,
        "behaviour": coevo.behaviour,
        "builds": {k: asdict(b) for k, b in builds.items()},
    }
    _write_json(results / f"{coevo.commit}.json", payload)


def run_behaviour(
    coevo: Coevo,
    revisions: dict[Window, tuple[Path, list[Revision]]],
    args: argparse.Namespace,
) -> dict[str, Build]:
    """Builds every revision not yet kept for ``coevo``, saving after each one."""
    builds = load_results(args.results, coevo.commit)
    for window, (path, window_revisions_) in revisions.items():
        for revision in window_revisions_:
            key = f"{revision.repo}@{revision.sha}"
            if key in builds and not (args.rebuild_failed and builds[key].status != "ok"):
                continue
            print(
                f"{coevo.behaviour} {key[: len(revision.repo) + 13]} ({revision.date[:10]}) …",
                file=sys.stderr,
                end=" ",
                flush=True,
            )
            done = build(coevo, revision, path, window.language, args.backend, args.cache, args.timeout)
            print(f"{done.status} in {done.seconds:.0f} s {done.cause[:120]}", file=sys.stderr, flush=True)
            builds[key] = done
            save_results(args.results, coevo, builds)
    if args.again:
        for window, (path, window_revisions_) in revisions.items():
            built = [r for r in window_revisions_ if builds[f"{r.repo}@{r.sha}"].status == "ok"]
            for revision in built[: args.again]:
                key = f"{revision.repo}@{revision.sha}"
                if builds[key].again_seconds is not None:
                    continue
                print(f"{coevo.behaviour} {key[: len(revision.repo) + 13]} again …", file=sys.stderr, end=" ")
                again = build(coevo, revision, path, window.language, args.backend, args.cache, args.timeout)
                print(f"{again.status} in {again.seconds:.0f} s", file=sys.stderr, flush=True)
                builds[key] = replace(builds[key], again_seconds=again.seconds, again_status=again.status)
                save_results(args.results, coevo, builds)
    return builds


# --- Report -----------------------------------------------------------------------------------


def _short(key: str) -> str:
    repo, sha = key.split("@")
    return f"{repo}@{sha[:10]}"


def report(
    measured: dict[str, tuple[Coevo, dict[str, Build]]], revisions: dict[Window, tuple[Path, list[Revision]]]
) -> int:
    """Prints the tables; the exit code (1 when the goal is missed or a revision regressed).

    ``built`` counts builds coevo calls ok; ``whole`` those of them with no note (a note says
    what was lost: test modules pytest could not import, Maven modules that did not build)."""
    keys = {w: [f"{r.repo}@{r.sha}" for r in rs] for w, (_, rs) in revisions.items()}
    every = [k for ks in keys.values() for k in ks]
    print(f"\n{'repository':<14} {'lang':<6} {'until':<10} {'revs':>4}", end="")
    for behaviour in measured:
        print(f" {behaviour + ' built':>10} {'whole':>5} {'rate':>5} {'s/build':>7}", end="")
    print("   era")
    for window, window_keys in keys.items():
        print(f"{window.name:<14} {window.language:<6} {window.until:<10} {len(window_keys):>4}", end="")
        for _, builds in measured.values():
            print(_rate_cells([builds[k] for k in window_keys if k in builds], len(window_keys)), end="")
        print(f"   {window.era}")
    print(f"{'all':<14} {'':<6} {'':<10} {len(every):>4}", end="")
    for _, builds in measured.values():
        print(_rate_cells([builds[k] for k in every if k in builds], len(every)), end="")
    print()
    for behaviour, (coevo, builds) in measured.items():
        kept = [(k, builds[k]) for k in every if k in builds]
        failed = [(k, b) for k, b in kept if b.status != "ok"]
        print(f"\n{behaviour} (coevo {coevo.commit[:12]}): failures ({len(failed)})")
        for key, failure in failed:
            print(f"  {_short(key):<24} {failure.status:<8} {failure.cause}")
        noted = [(k, b) for k, b in kept if b.status == "ok" and b.cause]
        print(f"{behaviour}: built, with a note ({len(noted)})")
        for key, note in noted:
            print(f"  {_short(key):<24} {note.cause}")
        again = [(k, b) for k, b in kept if b.again_seconds is not None]
        if again:
            first = sum(b.seconds for _, b in again)
            second = sum(b.again_seconds or 0.0 for _, b in again)
            print(
                f"{behaviour}: built again (images and venvs kept): {first:.0f} s first, {second:.0f} s again"
            )
            for key, repeated in again:
                seconds = f"{repeated.seconds:6.0f} s → {repeated.again_seconds:4.0f} s"
                print(f"  {_short(key):<24} {seconds} {repeated.again_status}")
    if set(measured) != set(BEHAVIOURS):
        return 0
    old, new = measured["old"][1], measured["new"][1]
    both = [k for k in every if k in old and k in new]
    regressions = [k for k in both if old[k].status == "ok" and new[k].status != "ok"]
    now_partial = [k for k in both if _whole(old[k]) and new[k].status == "ok" and not _whole(new[k])]
    fixed = [k for k in both if old[k].status != "ok" and new[k].status == "ok"]
    measured_new = [new[k] for k in every if k in new]
    new_rate = sum(b.status == "ok" for b in measured_new) / max(1, len(measured_new))
    print(f"\nrevisions measured both ways: {len(both)} of {len(every)}")
    print(f"fixed (failed old, built new): {len(fixed)}")
    print(f"regressions (built old, fail new): {len(regressions)}")
    for key in regressions:
        print(f"  {_short(key):<24} {new[key].status:<8} {new[key].cause}")
    print(f"built whole before, with a note now: {len(now_partial)}")
    for key in now_partial:
        print(f"  {_short(key):<24} {new[key].cause}")
    print(f"new build rate: {new_rate:.0%} (goal {GOAL:.0%})")
    return 1 if regressions or new_rate < GOAL else 0


def _whole(build: Build) -> bool:
    return build.status == "ok" and not build.cause


def _rate_cells(done: list[Build], total: int) -> str:
    if not done:
        return f" {'-':>10} {'-':>5} {'-':>5} {'-':>7}"
    ok = sum(b.status == "ok" for b in done)
    whole = sum(map(_whole, done))
    seconds = sum(b.seconds for b in done) / len(done)
    partial = "" if len(done) == total else f" of {len(done)}"
    return f" {f'{ok}{partial}':>10} {whole:>5} {ok / len(done):>5.0%} {seconds:>7.0f}"


# --- Main -------------------------------------------------------------------------------------


def _paths(args: argparse.Namespace) -> dict[str, Path]:
    given = dict(item.split("=", 1) for item in args.repos)
    paths: dict[str, Path] = {}
    for window in WINDOWS:
        path = (
            Path(given[window.name])
            if window.name in given
            else args.repos_dir / window.name
            if args.repos_dir
            else None
        )
        if path is None or (not (path / ".git").exists() and not (path / "HEAD").exists()):
            raise SystemExit(
                f"no clone of {window.public} at {path}: clone it into --repos-dir as "
                f"{window.name}/ or pass {window.name}=PATH"
            )
        paths[window.name] = path.resolve()
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "repos", nargs="*", metavar="NAME=PATH", help="where a repository's clone is (else --repos-dir)"
    )
    parser.add_argument(
        "--repos-dir", type=Path, help="a folder holding one clone per repository, named as the repository"
    )
    parser.add_argument(
        "--results", type=Path, required=True, help="where builds are kept (reruns skip what is there)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "coevo-bench",
        help="the old coevo and each behaviour's caches",
    )
    parser.add_argument(
        "--baseline-ref", default="fafe496", help="the old behaviour's git ref (default fafe496)"
    )
    parser.add_argument(
        "--only",
        choices=BEHAVIOURS,
        help="build with one behaviour only (the report shows what is kept of both)",
    )
    parser.add_argument("--no-build", action="store_true", help="build nothing: print what is kept")
    parser.add_argument(
        "--backend", choices=("docker", "local"), default="docker", help="coevo's backend (default docker)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per build (default 900)")
    parser.add_argument(
        "--again",
        type=int,
        default=0,
        metavar="N",
        help="build the first N revisions that built of each repository once more and print the seconds",
    )
    parser.add_argument("--rebuild-failed", action="store_true", help="build again what failed before")
    args = parser.parse_args()
    args.results.mkdir(parents=True, exist_ok=True)
    args.cache.mkdir(parents=True, exist_ok=True)
    args.cache = args.cache.resolve()
    paths = _paths(args)
    revisions = {w: (paths[w.name], window_revisions(w, paths[w.name], args.results)) for w in WINDOWS}
    coevos = {"old": old_coevo(args.baseline_ref, args.cache), "new": new_coevo()}
    if coevos["new"].commit == coevos["old"].commit:
        print(
            f"this checkout is the baseline ({coevos['old'].commit[:12]}): only old is measured",
            file=sys.stderr,
        )
        del coevos["new"]
    measured: dict[str, tuple[Coevo, dict[str, Build]]] = {}
    for behaviour, coevo in coevos.items():
        if args.no_build or args.only not in (None, behaviour):
            builds = load_results(args.results, coevo.commit)
        else:
            builds = run_behaviour(coevo, revisions, args)
        if builds:
            measured[behaviour] = (coevo, builds)
    return report(measured, revisions)


if __name__ == "__main__":
    sys.exit(main())
