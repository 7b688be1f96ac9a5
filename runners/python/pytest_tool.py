"""Python revisions: dependencies in a shared venv (see :mod:`runners.python.venvs`), tests run by pytest.

Tests are pytest node ids relative to the worktree. pytest refuses a whole run when one
node id names a missing file or test, and rebuilds ids lossily from its JUnit XML (an
inherited test reports the file that defines it). So the run passes pytest only the test
files, and a small plugin (written to a scratch folder and loaded with ``-p``) keeps just
the requested items and streams every report as a JSON line, keyed by the exact node id.
Results therefore survive a timeout (tests that finished keep their outcome), and the
same plugin switches coverage.py's dynamic context to the node id around each test.

Outcomes: a test whose module fails to import (``ImportError``, ``SyntaxError``) is
``compile_error``, the Python counterpart of a Java test that does not compile against
the code; a test that exists in no collected module is ``absent``.
"""

from __future__ import annotations

import configparser
import contextlib
import dataclasses
import json
import os
import re
import secrets
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..buildtools import BuildChoice, BuildResult, Coverage, TestRun
from ..environments.envspec import EnvSpec
from ..mutation import Mutant, MutationResult, after_control_run
from ..results import (
    REPORT_LIMIT,
    Outcome,
    TestResult,
    UnreadableReport,
    bounded,
    cause_line,
    in_context,
    without_roots,
)
from ..sandbox.base import (
    DEFAULT_OUTPUT_LIMIT,
    ExecResult,
    Sandbox,
    UnsafePath,
    read_beneath,
    read_capped,
    write_beneath,
)
from .mutants import PythonMutant
from .venvs import (
    FoundPython,
    NoPython,
    VenvBuild,
    VenvBuildFailed,
    import_paths,
    prepare_venv,
    site_packages,
    venv_for,
    venv_python,
)

_PLUGIN = "_coevo_pytest"
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")

# Runs inside the project's venv, on any Python 3 and pytest >= 4: no annotations, no walrus.
_PLUGIN_SOURCE = '''\
"""coevo: run only the requested node ids; stream each report as a JSON line."""
import json
import os
import re

import pytest

_state = {}


def _emit(record):
    out = _state.get("out")
    if out is None:
        out = _state["out"] = open(os.environ["COEVO_PYTEST_RESULTS"], "a", encoding="utf-8")
    out.write(json.dumps(record) + "\\n")
    out.flush()


def _coverage():
    if "coverage" not in _state:
        current = None
        if os.environ.get("COEVO_PYTEST_COVERAGE"):
            import coverage

            current = coverage.Coverage.current()
        _state["coverage"] = current
    return _state["coverage"]


def pytest_unconfigure(config):
    """Each test's lines (its dynamic context's), as JSON in the file COEVO_PYTEST_COVERAGE names:
    read here, where coverage.py is loaded already, not by a process of its own."""
    cov = _coverage()
    if cov is None:
        return
    try:
        cov.stop()
        data = cov.get_data()
        lines = {}
        for path in data.measured_files():
            for line, contexts in (data.contexts_by_lineno(path) or {}).items():
                for context in contexts:
                    if context:
                        lines.setdefault(context, {}).setdefault(path, []).append(line)
        with open(os.environ["COEVO_PYTEST_COVERAGE"], "w", encoding="utf-8") as out:
            json.dump(lines, out)
    except Exception:  # data the tests spoiled: no lines (coevo reads none), the results stand
        pass


def _message(report):
    if hasattr(report, "wasxfail"):  # an expected failure: the reason, then what failed
        crash = getattr(report.longrepr, "reprcrash", None)
        failed = str(crash.message) if crash is not None else ""
        if "XFailed" in failed:  # pytest.xfail(reason) called: the reason says it all
            failed = ""
        return ": ".join(part for part in (report.wasxfail, failed) if part)
    if report.passed:
        return ""
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, "Skipped: reason")
        reason = str(report.longrepr[-1])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and report.when != "call":  # a fixture or set-up failed: where says whose
        return _bounded(f"{crash.message}\\n(at {crash.path}:{crash.lineno})")
    if crash is not None:
        return _bounded(str(crash.message))
    return _bounded(str(report.longrepr or ""))  # a fixture not found, say: the report says why


def _bounded(text, limit=20000):
    """Head and tail of a long text: coevo bounds it again, as every message it stores."""
    if len(text) <= limit:
        return text
    cut = "\\n... %d characters cut ...\\n" % (len(text) - limit)
    return text[: limit // 3] + cut + text[-(limit - limit // 3):]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    with open(os.environ["COEVO_PYTEST_SELECT"], encoding="utf-8") as handle:
        wanted = set(json.load(handle))
    # A test asked for without parameters means all of its parametrizations.
    keep = [item for item in items if item.nodeid in wanted or item.nodeid.split("[")[0] in wanted]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    _emit({"collected": [item.nodeid for item in keep]})


def pytest_sessionfinish(session, exitstatus):
    """Which of the worktree's modules the run imported (mutation testing: was the mutant's?)."""
    import sys

    root = os.path.realpath(str(session.config.rootdir))
    loaded = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            path = os.path.realpath(path)
            if path.startswith(root + os.sep):
                loaded.add(os.path.relpath(path, root).replace(os.sep, "/"))
    _emit({"loaded": sorted(loaded)})


def pytest_collectreport(report):
    if report.failed:
        _emit({"collect_error": report.nodeid, "message": _bounded(str(report.longrepr))})


def pytest_runtest_logreport(report):
    _emit(
        {
            "id": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "xfail": hasattr(report, "wasxfail"),
            "message": _message(report),
            "duration": getattr(report, "duration", 0.0),
            "oracle": getattr(report, "coevo_oracle", None),
        }
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and call.excinfo is not None and report.failed:
        report.coevo_oracle = _oracle(item, call.excinfo)


_TEST_CODE = re.compile(r"(^|/)(tests?/|test_[^/]*\\.py$|[^/]*_test\\.py$|conftest\\.py$)")


def _oracle(item, excinfo):
    """Whether the test failed by its own check: an exception its own code raised (an ``assert``,
    an explicit ``raise``), or a check of a test framework it called (``pytest.raises``,
    ``pytest.fail``, ``self.assertEqual``: an AssertionError or pytest's Failed raised outside
    the project's production code). An exception that escaped from the code under test is none."""
    try:
        own = os.path.realpath(str(item.fspath))
        entries = list(excinfo.traceback)
        paths = [os.path.realpath(str(entry.path)) for entry in entries]
        if own not in paths:
            return False
        last_own = max(index for index, path in enumerate(paths) if path == own)
        if last_own == len(entries) - 1:  # raised by the test's own code
            if excinfo.errisinstance(AssertionError):
                return True
            return str(entries[-1].statement).lstrip().startswith("raise")
        checks = (AssertionError, getattr(pytest.fail, "Exception", AssertionError))
        if not excinfo.errisinstance(checks):
            return False
        root = os.path.realpath(str(item.config.rootdir))
        innermost = paths[-1]
        if innermost.startswith(root + os.sep):
            return _TEST_CODE.search(os.path.relpath(innermost, root).replace(os.sep, "/")) is not None
        return True
    except Exception:  # a traceback it cannot read shows no check
        return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cov = _coverage()
    if cov is not None:
        cov.switch_context(item.nodeid)
    yield
    if cov is not None:
        cov.switch_context("")
'''


_DRIVER = "_coevo_driver.py"
# Runs inside the project's venv, on any Python 3: no annotations, no f-strings.
_DRIVER_SOURCE = r'''"""coevo: pytest runs one after another, each in a process forked from
this one, which has imported pytest (and coverage.py) once. Every run of a batch, the first as
the last, starts the same way; only the code under test (a file written over before the run, put
back after) differs.

argv[1]: the plan (JSON, readable by this process alone): ``root`` (the tree), ``scratch`` (the
run files' folder), ``keep`` (where each run's files are moved when it ends, out of the next
runs' sight), ``budget`` (seconds: a run that could outlast it is not started, nor any after
it), ``user`` ("uid:gid" the tests run as, every process of which is killed after each run; null:
this process's user, and the run's process group is killed), ``site`` (the venv's
site-packages, where this process imports pytest from) and ``runs``: each with the pytest
arguments, its environment, its files' names (random: they say nothing of its place in the
batch), its timeout, whether coverage.py traces it, and a file to write over before it
(``write``) and put back after (``restore``).
A line of JSON per run on stdout (where the tests cannot write): its exit code, whether it timed
out and its duration, or why it was not run.

It runs isolated and without ``site`` (``python -I -S``): nothing of the tree (a module named
as one of the standard library's, on ``PYTHONPATH``) nor of the venv (its ``.pth`` files) runs
before a run's process is the tests' user; each run then sets up its path as ``python -m``
would (``site``, ``PYTHONPATH``, the working folder first)."""
import errno
import json
import os
import runpy
import shutil
import signal
import stat
import sys
import time

_started = time.time()

try:
    import ctypes

    _libc = ctypes.CDLL(None)
except Exception:
    _libc = None

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def _open_beneath(root, path, flags):
    """``path`` below ``root``, following no link (a run's tests may have left one)."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise OSError(errno.EINVAL, "not a path inside the tree")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = child
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    return fd


def _write(root, path, data):
    fd = _open_beneath(root, path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _ids(user):
    return tuple(int(part) for part in user.split(":"))


def _as_user(user):
    uid, gid = _ids(user)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _remove(path):
    """Whatever is at ``path`` (a file, a link, a folder an earlier run's tests put there)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)


def _prepare(scratch, files, user):
    """The run's files, made afresh: nothing an earlier run left under their names is used."""
    for name in files.values():
        _remove(os.path.join(scratch, name))
    for key in ("results", "coverage"):  # written by the tests' process, by name
        fd = os.open(os.path.join(scratch, files[key]), _NEW, 0o644)
        if user:
            os.fchown(fd, *_ids(user))
        os.close(fd)


def _child(run, scratch, user, parent):
    os.setpgid(0, 0)
    files = run["files"]
    for fd, key in ((1, "out"), (2, "err")):
        out = os.open(os.path.join(scratch, files[key]), _NEW, 0o644)
        os.dup2(out, fd)
        os.close(out)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if user:
        _as_user(user)
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the run ends with this process
    if os.getppid() != parent:
        os._exit(70)
    os.environ.update(run["env"])
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    import site

    site.main()  # the venv's .pth files, as the tests' user
    paths = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    sys.path[:0] = [os.getcwd()] + paths  # as ``python -m`` has it
    sys.argv = ["pytest"] + run["argv"]
    cov = None
    code = 0
    try:
        if run["coverage"]:
            import coverage

            data = os.path.join(scratch, files["data"])
            cov = coverage.Coverage(data_file=data, source=[run["coverage"]], config_file=False)
            cov.start()
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        if cov is not None:
            try:
                cov.stop()
                cov.save()
            except Exception:
                pass
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(str(code) + "\n")
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


_USER_PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")
"""Where the tests' user can write in a judge container besides the tree and the scratch folder."""


def _remove_ipc(user):
    """The System V shared memory, semaphores and message queues of the tests' user: they outlive
    its processes in the container, so a run could count the runs before it with one."""
    if _libc is None:
        return
    uid = _ids(user)[0]
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + kind) as handle:
                header, rows = handle.readline().split(), handle.read().splitlines()
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) != len(header) or int(fields[header.index("uid")]) != uid:
                continue
            number = int(fields[1])
            if kind == "shm":
                _libc.shmctl(number, 0, None)  # IPC_RMID
            elif kind == "sem":
                _libc.semctl(number, 0, 0)
            else:
                _libc.msgctl(number, 0, None)


def _remove_writes(user, places, spared):
    """Everything the tests' user made under ``places`` (files, links, folders; ``spared`` aside):
    each run starts from what the first one found, so no run learns its place in the batch from
    what the runs before it left."""
    uid = _ids(user)[0]
    for place in places:
        for folder, dirs, names in os.walk(place):
            for name in dirs + names:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if info.st_uid != uid or path in spared:
                    continue  # what coevo made stays (and is walked, but for what is spared)
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
            kept = [os.path.join(folder, name) for name in dirs]
            dirs[:] = [name for name, path in zip(dirs, kept) if path not in spared and os.path.lexists(path)]


def _kill_leftovers(pid, user, clean):
    """What the run left running: its process group; with a user, every process of it (and, when
    ``clean``, its System V objects)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if not user:
        return
    killer = os.fork()
    if killer == 0:
        try:
            _as_user(user)
            os.kill(-1, signal.SIGKILL)  # every process of the user but the caller
            if clean:
                _remove_ipc(user)  # as their owner: root in a container may not
        finally:
            os._exit(0)
    os.waitpid(killer, 0)


def _wait(pid, timeout):
    """(status, timed out): the run's status, after killing it at ``timeout``."""
    deadline = time.time() + timeout
    pause = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        if time.time() >= deadline:
            os.killpg(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1], True
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _say(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main():
    with open(sys.argv[1]) as handle:
        plan = json.load(handle)
    user, runs, scratch, keep = plan["user"], plan["runs"], plan["scratch"], plan["keep"]
    sys.dont_write_bytecode = True
    sys.path.extend(plan["site"])  # pytest and coverage.py only: no .pth file is run here
    for run in runs:  # read before any test runs
        for key in ("write", "restore"):
            if run.get(key):
                with open(run[key][1], "rb") as handle:
                    run[key] = (run[key][0], handle.read())
    if any(run["coverage"] for run in runs):  # as ``coverage run -m pytest`` has them: coverage.py first
        import coverage  # noqa: F401
    import pytest  # noqa: F401
    for number, run in enumerate(runs):
        if time.time() - _started + run["timeout"] > plan["budget"]:
            _say({"run": number, "skipped": "out of time"})
            break
        try:
            if run.get("write"):
                _write(plan["root"], *run["write"])
        except OSError as exc:
            _say({"run": number, "skipped": "not written: %s: %s" % (run["write"][0], exc.strerror or exc)})
            break
        _prepare(scratch, run["files"], user)
        began = time.time()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                _child(run, scratch, user, parent)
            finally:
                os._exit(70)
        status, timed_out = _wait(pid, run["timeout"])
        duration = time.time() - began
        # Between the runs of a batch (a mutation phase), what the tests' user made is removed:
        # the next run starts from what the first found. After the last, what the tests left stays
        # for the sandbox's next batch, as it would for another process (a rerun sees it).
        between = bool(user) and number < len(runs) - 1
        _kill_leftovers(pid, user, between)
        if run.get("restore"):
            try:
                _write(plan["root"], *run["restore"])
            except OSError:
                pass  # coevo puts it back from outside too
        for name in run["files"].values():  # out of the next runs' sight
            try:
                os.rename(os.path.join(scratch, name), os.path.join(keep, name))
            except OSError:
                pass
        if between:
            _remove_writes(user, (plan["root"], scratch) + _USER_PLACES, {keep})
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        _say({"run": number, "exit": code, "timed_out": timed_out, "duration": duration})


main()
'''


_DRIVER_SLACK = 60.0
"""Seconds the driver may take beyond its runs' own (its start, pytest's import) before the
sandbox kills it."""


@dataclass(frozen=True)
class _Planned:
    """One run of a batch (:meth:`PytestTool._batch`)."""

    timeout: float
    write: tuple[str, bytes, bytes] | None = None
    """(path in the worktree, its content for this run, its content put back after)."""


@dataclass(frozen=True)
class _Batch:
    runs: list[tuple[TestRun, list[dict]]]
    """The runs made, in the planned order, each with the plugin's records."""
    stopped: str
    """Why the runs after those stopped ("" when every planned run was made)."""
    driver: ExecResult | None
    """How the driver ended (None when it was not started)."""


def _statuses(stdout: str) -> dict[int, dict]:
    """The driver's line per run, by run: the tests cannot write to its output (it runs as
    another user, or is trusted on the host)."""
    found: dict[int, dict] = {}
    for line in stdout.splitlines():
        try:
            status = json.loads(line)
        except ValueError:
            continue
        if isinstance(status, dict) and isinstance(status.get("run"), int):
            found.setdefault(status["run"], status)
    return found


def _driver_end(driver: ExecResult | None) -> str:
    if driver is None:
        return "not started"
    if driver.timed_out:
        return f"killed after {driver.duration:.0f}s"
    return cause_line(driver.stderr) or f"exit code {driver.exit_code}"


class PytestTool:
    """pip-installed dependencies in a shared venv; pytest over the worktree's own code."""

    name = "pip"

    def __init__(self, python: FoundPython | None = None) -> None:
        """``python``: the interpreter as the sandbox sees it (default: the host's)."""
        self._python = python

    def build_production(
        self, sandbox: Sandbox, spec: EnvSpec, timeout: float, failed: BuildResult
    ) -> BuildResult | None:
        """None: a Python build compiles nothing apart from its tests (a test module that does not
        import costs only its own tests, ``compile_error``)."""
        return None

    def build(self, sandbox: Sandbox, spec: EnvSpec, timeout: float) -> BuildResult:
        """Ensures the venv, then collects the tests to prove the project imports.

        Raises :class:`~runners.python.venvs.NoPython` when this machine has no interpreter at all
        (coevo's lack, not the project's).

        Collection errors in some test modules only still count as built (those tests will
        be ``compile_error``); the message then names the first one. The result's choices say
        which interpreter, which dependencies' date and which test tools the venv has, and why.
        """
        deadline = time.monotonic() + timeout
        worktree = Path(sandbox.workdir)
        try:
            built = prepare_venv(spec, worktree, sandbox, timeout, self._python)
        except VenvBuildFailed as exc:
            return BuildResult(ok=False, message=str(exc), log=exc.log)
        venv = built.path
        argv = [str(venv_python(venv)), "-m", "pytest", "--collect-only", "-q", *_common_options(worktree)]
        result = sandbox.exec(argv, timeout=_left(deadline), env=_test_env(venv, worktree, ()))
        retried = f"built with today's releases: {built.retry}" if built.retry else ""
        note = "; ".join(filter(None, [built.note, retried]))
        outcome = _collect_outcome(result, worktree, note)
        return dataclasses.replace(outcome, choices=_choices(spec, built), installed=built.installed)

    def run_tests(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        timeout: float,
        coverage: bool = False,
    ) -> TestRun:
        """Runs the node ids in one pytest process; every id asked for gets a result.

        A test that hung or ended the process costs the others nothing: it runs again alone, and
        the rest again in one process (those before it too: a killed process keeps no coverage).
        """
        requested = list(dict.fromkeys(tests))
        run, records = self._run(sandbox, spec, requested, timeout, coverage)
        culprit = _cut_short_by(requested, records)
        if culprit is None or len(requested) == 1:
            return run
        alone = self._run(sandbox, spec, [culprit], timeout, coverage)[0]
        rest = self.run_tests(sandbox, spec, [t for t in requested if t != culprit], timeout, coverage)
        found = {result.test: result for result in (*alone.results, *rest.results)}
        return TestRun(
            results=tuple(found[test] for test in requested),
            coverage={**rest.coverage, **alone.coverage},
            log=run.log,  # the whole batch's run, which the culprit cut short
        )

    def _run(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        timeout: float,
        coverage: bool = False,
        measure: bool = True,
    ) -> tuple[TestRun, list[dict]]:
        """:meth:`run_tests` and the plugin's records (a ``loaded`` record names the worktree's
        modules the run imported). ``coverage`` without ``measure``: traced as a run with
        coverage is, its data not read (a test sees no difference)."""
        budget = timeout + _DRIVER_SLACK
        batch = self._batch(sandbox, spec, tests, [_Planned(timeout)], budget, coverage, measure)
        if batch.runs:
            return batch.runs[0]
        assert batch.driver is not None  # every early end returns a run for each planned one
        # The driver did not run it (pytest is missing, say): its output says why.
        requested = list(dict.fromkeys(tests))
        results = _results(requested, [], batch.driver, Path(sandbox.workdir))
        return TestRun(results, log=batch.driver), []

    def _batch(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        planned: Sequence[_Planned],
        budget: float,
        coverage: bool = False,
        measure: bool = True,
    ) -> _Batch:
        """The planned runs of ``tests``, one after another, by one driver process in the sandbox
        (:data:`_DRIVER_SOURCE`: pytest and coverage.py imported once, each run a fork of it). A
        run that could outlast ``budget`` seconds from the driver's start is not started, nor any
        after it."""
        worktree = Path(sandbox.workdir)
        requested = list(dict.fromkeys(tests))
        try:
            venv = venv_for(spec, worktree, sandbox, budget, self._python)
        except (VenvBuildFailed, NoPython) as exc:
            log = exc.log if isinstance(exc, VenvBuildFailed) else None
            failed = TestRun(tuple(TestResult(t, Outcome.ERROR, str(exc)) for t in requested), log=log)
            return _Batch([(failed, [])] * len(planned), "", None)
        files = list(dict.fromkeys(f for f in map(_file_of, requested) if _is_file_in(worktree, f)))
        if not files:
            absent = TestRun(tuple(TestResult(t, Outcome.ABSENT) for t in requested))
            return _Batch([(absent, [])] * len(planned), "", None)
        # The sandbox's own scratch folder: no other container (another run's tests) can reach
        # this run's files, and being outside the worktree, coverage does not measure them.
        # The tests can write there, so the host writes and reads following no link.
        with tempfile.TemporaryDirectory(
            prefix="coevo-pytest-", dir=sandbox.scratch(), ignore_cleanup_errors=True
        ) as scratch_name:
            scratch = Path(scratch_name)
            if sandbox.test_user is not None:  # the tests write their results and coverage here
                scratch.chmod(0o1777)
            write_beneath(scratch, f"{_PLUGIN}.py", _PLUGIN_SOURCE.encode())
            write_beneath(scratch, "select.json", json.dumps(requested).encode())
            argv = [
                "-p",
                _PLUGIN,
                "-q",
                "--tb=short",
                "--maxfail=0",  # a project's -x in addopts would leave requested tests unrun
                "--continue-on-collection-errors",
                *_common_options(worktree),
                *files,
            ]
            keep = scratch / "kept"
            keep.mkdir(mode=0o700)
            runs: list[dict[str, object]] = []
            named: list[dict[str, str]] = []  # each run's files, by what they hold
            for number, run in enumerate(planned):
                token = secrets.token_hex(8)  # nothing in a name tells a run its place in the batch
                names = {key: f"{token}.{key}" for key in ("out", "err", "results", "coverage", "data")}
                named.append(names)
                env = {
                    "COEVO_PYTEST_RESULTS": str(scratch / names["results"]),
                    **({"COEVO_PYTEST_COVERAGE": str(scratch / names["coverage"])} if coverage else {}),
                    **({"HOME": "/tmp"} if sandbox.test_user is not None else {}),
                }
                entry: dict[str, object] = {
                    "argv": argv,
                    "env": env,
                    "files": names,
                    "coverage": str(worktree.resolve()) if coverage else None,
                    "timeout": max(run.timeout, 1.0),
                }
                if run.write is not None:
                    path, content, original = run.write
                    for key, data in (("write", content), ("restore", original)):
                        write_beneath(keep, f"{number}.{key}", data)
                        entry[key] = (path, str(keep / f"{number}.{key}"))
                runs.append(entry)
            plan = {
                "root": str(worktree),
                "scratch": str(scratch),
                "keep": str(keep),
                "user": sandbox.test_user,
                "site": [str(path) for path in site_packages(venv)],
                "budget": budget,
                "runs": runs,
            }
            write_beneath(keep, "plan.json", json.dumps(plan).encode())
            write_beneath(keep, _DRIVER, _DRIVER_SOURCE.encode())
            command = [str(venv_python(venv)), "-I", "-S", str(keep / _DRIVER), str(keep / "plan.json")]
            env = _test_env(venv, worktree, (scratch,))
            env["COEVO_PYTEST_SELECT"] = str(scratch / "select.json")
            try:
                driver = sandbox.exec(command, timeout=budget + _DRIVER_SLACK, env=env)
            finally:
                sandbox.stop_untrusted()
            statuses = _statuses(driver.stdout)
            done: list[tuple[TestRun, list[dict]]] = []
            for number in range(len(planned)):
                status = statuses.get(number)
                if status is None or "skipped" in status:
                    break
                read = self._read_run(keep, named[number], status, requested, worktree, coverage and measure)
                done.append(read)
        stopped = ""
        if len(done) < len(planned):
            status = statuses.get(len(done))
            stopped = str(status["skipped"]) if status else f"the test driver stopped: {_driver_end(driver)}"
        return _Batch(done, stopped, driver)

    def _read_run(
        self,
        kept: Path,
        files: Mapping[str, str],
        status: dict,
        requested: list[str],
        worktree: Path,
        measure: bool,
    ) -> tuple[TestRun, list[dict]]:
        """A run of a batch as the driver saw it end and as its ``files`` (moved to ``kept``) say."""
        out, out_cut = read_capped(kept, files["out"], DEFAULT_OUTPUT_LIMIT)
        err, err_cut = read_capped(kept, files["err"], DEFAULT_OUTPUT_LIMIT)
        code = status["exit"]
        timed_out = bool(status["timed_out"])
        log = ExecResult(
            exit_code=None if timed_out or code == 128 + signal.SIGKILL else code,
            stdout=out,
            stderr=err,
            duration=float(status["duration"]),
            timed_out=timed_out,
            truncated=out_cut or err_cut,
        )
        try:
            records = _read_records(read_beneath(kept, files["results"], REPORT_LIMIT))
        except UnreadableReport as exc:  # the tests wrote it: their error
            why = f"the tests' run left results coevo cannot read: {exc}"
            return TestRun(tuple(TestResult(t, Outcome.ERROR, why) for t in requested), log=log), []
        results = _results(requested, records, log, worktree)
        lines: dict[str, Coverage] = {}
        if measure:
            lines = _read_coverage(kept, worktree, files["coverage"])
            ran = {r.test for r in results if r.outcome not in _NOT_RUN}
            lines = {test: _coverage_of(test, lines) for test in requested if test in ran}
        return TestRun(results=results, coverage=lines, log=log), records

    # --- mutation ----------------------------------------------------------------------------------

    def mutation(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        mutants: Sequence[PythonMutant],
        timeout: float,
        baseline: TestRun | None = None,
    ) -> MutationResult:
        """Each mutant's fate under ``tests`` (node ids that pass unmutated), one pytest run each.

        Each mutant is written over its module in the worktree while its run goes on (the
        original is put back afterwards): mutation testing runs in a judge tree of its own. The
        runs are made by one driver process, as every run of the tests is (:meth:`_batch`), and
        traced by coverage.py as the run on the new code is, so a test sees nothing of the phase
        but the code.

        ``baseline`` is the tests' unmutated run with coverage when the caller has one; else it
        is run here. A mutant whose statement no test ran in it is
        ``NO_COVERAGE`` without a run, as in PIT. Otherwise a mutant is ``KILLED`` when a test
        does not pass, ``TIMED_OUT`` when the run outlives twice the unmutated run's time plus
        10 s, ``NO_COVERAGE`` when the run did not import its module, else ``SURVIVED`` (PIT's
        statuses); the tests that did not pass detected it, and those whose own check failed
        are its evidence (:attr:`~runners.mutation.Mutant.asserted_by`). Mutants the overall
        ``timeout`` leaves no time for are not counted, and the message says so. When a mutant
        was detected, the tests run once more on the unmutated code, as they ran with the
        mutants (the control run of :func:`~runners.mutation.after_control_run`).
        """
        deadline = time.monotonic() + timeout
        if baseline is None:
            baseline = self.run_tests(sandbox, spec, tests, timeout, coverage=True)
        failing = [r.test for r in baseline.results if r.outcome != Outcome.PASS]
        tests = [t for t in tests if t not in failing]
        if not tests:
            return MutationResult((), "no test passes without mutation", baseline.log, complete=False)
        covered: dict[str, set[int]] = {}
        for test in tests:
            for path, lines in baseline.coverage.get(test, Coverage()).lines.items():
                covered.setdefault(path, set()).update(lines)
        each = 2 * (baseline.log.duration if baseline.log else 10.0) + 10.0
        originals = {path: sandbox.read_file(path) for path in {m.file for m in mutants}}
        found: dict[int, Mutant] = {}
        runs: list[tuple[int, _Planned]] = []
        message = ""
        for number, mutant in enumerate(mutants):
            where = (mutant.file, mutant.function, mutant.line)
            which = f"occurrence {mutant.occurrence}"
            ran = covered.get(mutant.file, set())
            if covered and mutant.statement is not None and mutant.statement not in ran:
                found[number] = Mutant(*where, "NO_COVERAGE", mutant.operator, which)
                continue
            original = originals.get(mutant.file)
            if original is None:  # the tests left a link or a folder there
                message = f"the module under test could not be mutated: {mutant.file} is not a plain file"
                break
            runs.append((number, _Planned(each, (mutant.file, mutant.source, original))))
        if not runs:
            ordered = tuple(found[number] for number in sorted(found))
            return MutationResult(ordered, message, baseline.log, complete=not message)
        # Every mutant's run, then the control run (the unmutated code, as the mutants ran), by
        # one driver: a run is a fork of a process that has pytest and coverage.py loaded.
        try:
            planned = [run for _, run in runs] + [_Planned(each)]
            batch = self._batch(sandbox, spec, tests, planned, _left(deadline), True, False)
        finally:  # whatever stopped the batch, the tree sees the original code after it
            for path in originals:
                _put_back(sandbox, path, originals)
        for (number, _), (run, records) in zip(runs, batch.runs, strict=False):
            found[number] = _fate(mutants[number], run, records)
        if len(batch.runs) < len(runs):
            why = batch.stopped
            if why.startswith("not written: "):
                message = f"the module under test could not be mutated: {why.removeprefix('not written: ')}"
            else:
                message = f"{len(mutants) - len(found)} mutants not run: {why}"
        ordered = tuple(found[number] for number in sorted(found))
        result = MutationResult(ordered, message, baseline.log, complete=not message)
        if not any(m.detected for m in ordered):
            return result
        if len(batch.runs) == len(runs) + 1:
            control = batch.runs[-1][0]
        else:  # the batch stopped before its control run: made alone, as the mutants' were
            control, _ = self._run(sandbox, spec, tests, each, coverage=True, measure=False)
        passed = {r.test for r in control.results if r.outcome == Outcome.PASS}
        return after_control_run(result, tests, passed)


def _put_back(sandbox: Sandbox, path: str, originals: Mapping[str, bytes | None]) -> None:
    original = originals.get(path)
    if original is not None:
        with contextlib.suppress(UnsafePath):  # a link the tests left: the tree goes after this phase
            sandbox.write_file(path, original)


def _fate(mutant: PythonMutant, run: TestRun, records: Sequence[dict]) -> Mutant:
    """PIT's status of ``mutant`` after its run, with the tests that detected it and those whose
    own check did: an exception escaping from the mutated code, or a timeout, shows that the code
    changed, not that the test checks it."""
    outcomes = {r.outcome for r in run.results}
    # On a timeout, the tests not reported passing are the ones that did not finish.
    killers = tuple(r.test for r in run.results if r.outcome != Outcome.PASS)
    loaded = {path for record in records for path in record.get("loaded", ())}
    if Outcome.TIMEOUT in outcomes:
        status = "TIMED_OUT"
    elif outcomes - {Outcome.PASS}:
        status = "KILLED"
    elif mutant.file not in loaded:
        status = "NO_COVERAGE"
    else:
        status = "SURVIVED"
    checked = {r["id"] for r in records if r.get("when") == "call" and r.get("oracle") is True}
    asserted = tuple(t for t in killers if t in checked or any(c.startswith(t + "[") for c in checked))
    where = (mutant.file, mutant.function, mutant.line)
    which = f"occurrence {mutant.occurrence}"
    return Mutant(*where, status, mutant.operator, which, killing_tests=killers, asserted_by=asserted)


_NOT_RUN = (Outcome.ABSENT, Outcome.TIMEOUT, Outcome.COMPILE_ERROR)


def _choices(spec: EnvSpec, built: VenvBuild) -> tuple[BuildChoice, ...]:
    """The build record: the interpreter and why (the spec's last word on it), then the venv's."""
    why = next((note for note in reversed(spec.notes) if note.startswith("python ")), "")
    why = "; ".join(filter(None, [why, built.note]))
    return (BuildChoice("python", built.python, why), *built.choices())


def _coverage_of(test: str, lines: Mapping[str, Coverage]) -> Coverage:
    """A test's lines; a test asked for without parameters covers what all of them cover."""
    if test in lines or "[" in test:
        return lines.get(test, Coverage())
    merged: dict[str, frozenset[int]] = {}
    for node, coverage in lines.items():
        if node.startswith(test + "["):
            for path, numbers in coverage.lines.items():
                merged[path] = merged.get(path, frozenset()) | numbers
    return Coverage(lines=merged)


def _common_options(worktree: Path) -> list[str]:
    # Without --rootdir, a project with no ini file gets node ids relative to the tests' common folder.
    # Newer pytest than the project knew deprecates what its tests do; with the project's own
    # ``filterwarnings = error`` that would fail collection, so pytest's own deprecations are ignored.
    return [
        "-p",
        "no:cacheprovider",
        f"--rootdir={worktree}",
        "-W",
        "ignore::pytest.PytestDeprecationWarning",
        *_old_setup_cfg_options(worktree),
    ]


def _old_setup_cfg_options(worktree: Path) -> list[str]:
    """A ``[pytest]`` section of ``setup.cfg`` (pytest 3 and before; pytest 4 and later refuse to
    start: "[pytest] section in setup.cfg files is no longer supported") given as ``-o`` options,
    with no ini file read (``-c /dev/null``); none when pytest would read another file first."""
    if any((worktree / name).is_file() for name in ("pytest.ini", ".pytest.ini")):
        return []
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(_text(worktree, "setup.cfg"))
    except configparser.Error:
        return []
    if not parser.has_section("pytest") or parser.has_section("tool:pytest"):
        return []
    for name, section in (("tox.ini", "pytest"), ("pyproject.toml", "tool.pytest.ini_options")):
        if f"[{section}]" in _text(worktree, name):
            return []
    options = ["-c", os.devnull]
    for key, value in parser.items("pytest"):
        options += ["-o", f"{key}={value.strip()}"]
    return options


def _text(worktree: Path, path: str) -> str:
    return (read_beneath(worktree, path) or b"").decode("utf-8", errors="replace")


def _test_env(venv: Path, worktree: Path, extra_paths: Sequence[Path]) -> dict[str, str]:
    """The worktree's code first on the path, the venv's tools on PATH, nothing written to the tree."""
    paths = [*import_paths(worktree), *extra_paths]
    return {
        "PYTHONPATH": os.pathsep.join(str(p) for p in paths),
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTEST_ADDOPTS": "",
    }


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 1.0)


def _file_of(test: str) -> str:
    return test.split("::", 1)[0]


def _is_file_in(worktree: Path, path: str) -> bool:
    if not path or Path(path).is_absolute() or ".." in Path(path).parts:
        return False
    return (worktree / path).is_file()


def _collect_outcome(result: ExecResult, worktree: Path, note: str) -> BuildResult:
    """Reads ``pytest --collect-only -q``: an importable project collects, a broken one does not.

    The message of a failure is pytest's whole output (bounded), paths in the worktree made
    relative; :func:`~runners.results.cause_line` finds its cause (``E   ModuleNotFoundError: …``,
    ``pytest: error: unrecognized arguments: …``).
    """
    if result.timed_out:
        message = f"collecting the tests timed out after {result.duration:.0f}s"
        return BuildResult(ok=False, message=message, log=result)
    collected = sum(1 for line in result.stdout.splitlines() if "::" in line and not line[:1].isspace())
    if result.exit_code in (0, 5):
        return BuildResult(ok=True, message=note, log=result)
    output = _output(result, worktree) or f"pytest exited with code {result.exit_code} and no output"
    if result.exit_code == 2 and collected:
        partial = in_context(f"{collected} tests collected, but some test modules fail to import", output)
        return BuildResult(ok=True, message="; ".join(filter(None, [note, partial])), log=result)
    return BuildResult(ok=False, message=output, log=result)


def _output(result: ExecResult, worktree: Path) -> str:
    """What a pytest run printed (bounded), paths in the worktree made relative."""
    return bounded(_in_worktree((result.stdout.strip() + "\n" + result.stderr.strip()).strip(), worktree))


def _in_worktree(text: str, worktree: Path) -> str:
    """``text`` with paths inside the worktree made relative, so messages compare across worktrees."""
    return without_roots(text, [str(worktree), str(worktree.resolve())])


def _relative(path: str, worktree: Path) -> str:
    for root in (worktree, worktree.resolve()):
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            continue
    return path


_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "collected": (list,),
    "collect_error": (str,),
    "message": (str,),
    "id": (str,),
    "when": (str,),
    "outcome": (str,),
    "xfail": (bool,),
    "duration": (int, float),
    "oracle": (bool, type(None)),
    "loaded": (list,),
}
"""What the plugin writes, field by field: the tests run in the same process and can append to the
file, so anything else is theirs."""


def _read_records(data: bytes | None) -> list[dict]:
    """The plugin's records; :class:`~runners.results.UnreadableReport` for anything it does not
    write (a line that is no JSON object, an unknown field, a field of another type), but for the
    last line of a killed run, which may be cut short."""
    records: list[dict] = []
    text = (data or b"").decode("utf-8", errors="replace")
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines) and not text.endswith("\n"):
                continue
            raise UnreadableReport(f"line {number} of the results is not JSON") from None
        if not isinstance(record, dict) or not record:
            raise UnreadableReport(f"line {number} of the results is not a record")
        for key, value in record.items():
            kinds = _RECORD_FIELDS.get(key)
            if (
                kinds is None
                or not isinstance(value, kinds)
                or (kinds == (int, float) and isinstance(value, bool))
            ):
                raise UnreadableReport(f"line {number} of the results has a bad field {key[:40]!r}")
        for key in ("collected", "loaded"):
            if not all(isinstance(item, str) for item in record.get(key, ())):
                raise UnreadableReport(f"line {number} of the results has a bad field {key!r}")
        records.append(record)
    return records


def _results(
    requested: list[str], records: list[dict], log: ExecResult, worktree: Path
) -> tuple[TestResult, ...]:
    """One result per requested id, from the plugin's reports and how the run ended."""
    ran = _by_request(requested, _combine(records, worktree))
    collected: set[str] | None = None
    collect_errors: dict[str, str] = {}
    for record in records:
        if "collected" in record:
            collected = set(record["collected"]) | {node.split("[")[0] for node in record["collected"]}
        elif "collect_error" in record:
            collect_errors[record["collect_error"]] = bounded(_in_worktree(record["message"], worktree))
    crash = "" if log.timed_out else _output(log, worktree)
    results: list[TestResult] = []
    for test in requested:
        if test in ran:
            results.append(ran[test])
            continue
        failed_import = next((m for node, m in collect_errors.items() if _under(test, node)), None)
        if failed_import is not None:
            results.append(TestResult(test, Outcome.COMPILE_ERROR, failed_import))
        elif not _is_file_in(worktree, _file_of(test)) or (collected is not None and test not in collected):
            results.append(TestResult(test, Outcome.ABSENT))
        elif log.timed_out:
            results.append(TestResult(test, Outcome.TIMEOUT, f"no result within {log.duration:.0f}s"))
        else:
            why = crash if collected is None else in_context("collected but not run", crash)
            results.append(TestResult(test, Outcome.ERROR, why or f"pytest exited with code {log.exit_code}"))
    return tuple(results)


def _cut_short_by(requested: Sequence[str], records: Sequence[dict]) -> str | None:
    """The requested test whose run the process never finished, when it ended before pytest's
    session did (it hung and was killed, or a test ended it): the last test whose set-up was
    reported and whose tear-down was not. None when the session finished, or no test was under
    way (collection or a session's tear-down hung: every test would)."""
    if any("loaded" in record for record in records):
        return None
    started: list[str] = []
    finished: set[str] = set()
    for record in records:
        if record.get("when") == "setup":
            started.append(record.get("id", ""))
        elif record.get("when") == "teardown":
            finished.add(record.get("id", ""))
    node = next((node for node in reversed(started) if node not in finished), None)
    if node is None:
        return None
    return next((test for test in requested if node == test or node.startswith(f"{test}[")), None)


def _by_request(requested: list[str], ran: dict[str, TestResult]) -> dict[str, TestResult]:
    """``ran`` with a test asked for without parameters given the combined outcome of all of them
    (a failure fails it; an error errs it; it passes when none failed and one passed)."""
    combined = dict(ran)
    for test in requested:
        if test in ran or "[" in test:
            continue
        members = [result for node, result in ran.items() if node.startswith(test + "[")]
        if not members:
            continue
        for outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.PASS, Outcome.XFAIL, Outcome.SKIPPED):
            chosen = [m for m in members if m.outcome == outcome]
            if chosen:
                message = chosen[0].message
                if outcome in (Outcome.FAIL, Outcome.ERROR):
                    message = in_context(chosen[0].test.removeprefix(test), message)
                combined[test] = TestResult(test, outcome, message, sum(m.duration for m in members))
                break
    return combined


def _under(test: str, node: str) -> bool:
    return not node or test == node or test.startswith((f"{node}::", f"{node}/"))


def _combine(records: list[dict], worktree: Path) -> dict[str, TestResult]:
    """Setup, call and teardown reports folded into one outcome per node id, each with its whole
    message (bounded; a setup or teardown failure says which, with its cause)."""
    outcomes: dict[str, tuple[Outcome, str]] = {}
    durations: dict[str, float] = {}
    for record in records:
        test = record.get("id")
        if test is None:
            continue
        durations[test] = durations.get(test, 0.0) + float(record.get("duration") or 0.0)
        when, outcome = record.get("when"), record.get("outcome")
        message = _in_worktree(record.get("message", ""), worktree)
        if record.get("xfail") and outcome == "skipped":
            outcomes[test] = (Outcome.XFAIL, message)
        elif record.get("xfail"):  # passed though expected to fail (a strict mark fails instead)
            outcomes[test] = (Outcome.PASS, f"passed, though marked xfail: {message}".rstrip(": "))
        elif outcome == "skipped":
            outcomes[test] = (Outcome.SKIPPED, message)
        elif when == "call":
            outcomes[test] = (Outcome.PASS, "") if outcome == "passed" else (Outcome.FAIL, message)
        elif outcome == "failed" and (test not in outcomes or outcomes[test][0] == Outcome.PASS):
            outcomes[test] = (Outcome.ERROR, in_context(str(when), message))
    return {
        test: TestResult(test, outcome, bounded(message), durations.get(test, 0.0))
        for test, (outcome, message) in outcomes.items()
    }


def _read_coverage(scratch: Path, worktree: Path, name: str) -> dict[str, Coverage]:
    """Lines per node id, as the plugin wrote them from coverage.py's data into ``name``, test
    files left out."""
    try:
        written = read_beneath(scratch, name, REPORT_LIMIT)
    except UnreadableReport:
        return {}
    if written is None:
        return {}
    try:
        raw: Mapping[str, Mapping[str, list[int]]] = json.loads(written)
    except ValueError:
        return {}
    if not _coverage_shaped(raw):  # the tests can write coverage's data: no coverage, then
        return {}
    coverage: dict[str, Coverage] = {}
    for test, files in raw.items():
        lines: dict[str, frozenset[int]] = {}
        for path, numbers in files.items():
            relative = _relative(path, worktree)
            if relative == path or _TEST_FILE.search(relative):
                continue
            lines[relative] = frozenset(numbers) | lines.get(relative, frozenset())
        coverage[test] = Coverage(lines=lines)
    return coverage


def _coverage_shaped(raw: object) -> bool:
    """Whether ``raw`` is what the plugin writes: test → path → list of line numbers."""
    return isinstance(raw, dict) and all(
        isinstance(files, dict)
        and all(
            isinstance(path, str)
            and isinstance(numbers, list)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
            for path, numbers in files.items()
        )
        for files in raw.values()
    )
