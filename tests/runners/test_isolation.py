"""Nothing untrusted code runs in can write shared state or reach the Docker host (real Docker).

A hostile setup.py, a pom whose antrun runs ``bash`` at ``initialize`` (in the deps image's
build and in the revision's), and hostile tests try to write a ``.pth`` into every venv and
files into the shared Maven repository and into another revision, and to connect to the
Docker host and to hosts no build needs, directly and through the build's proxy. Every
attempt is reported (so the test sees it was made), and the shared folders are hashed
before and after.
"""

from __future__ import annotations

import ipaddress
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.environments.environment import revision_repository
from runners.environments.revisions import BuiltRevision, prepare_revision, release_revision
from runners.python.mutants import python_mutants
from runners.sandbox.base import UnsafePath
from runners.sandbox.docker_sandbox import docker_client
from runners.scoring.judge_tree import judge_tree
from tests.gitrepo import GitRepo
from tests.runners import hostile_projects, maven_projects, python_projects
from tests.runners.hostile_projects import Targets, snapshot

pytestmark = pytest.mark.docker

DATE = "2024-03-01T12:00:00+00:00"
SHARED_JAR = "org/victim/victim/1.0/victim-1.0.jar"
BREACHES = ("WROTE", "CONNECTED", "TUNNELED")


class _Listener(socketserver.ThreadingTCPServer):
    """A service of the Docker host, on every address: it counts who reaches it."""

    allow_reuse_address = True
    daemon_threads = True
    connections = 0


class _Count(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        assert isinstance(self.server, _Listener)
        self.server.connections += 1


@dataclass
class World:
    root: Path
    work: Path
    venvs: Path
    shared_m2: Path
    python_victim: BuiltRevision
    java_victim: BuiltRevision
    listener: _Listener
    gateway: str
    host: str
    registry_address: str

    def targets(self, registry: str) -> Targets:
        port = self.listener.server_address[1]
        assert self.java_victim.worktree and self.python_victim.worktree
        return Targets(
            venvs=self.venvs,
            repositories=[str(self.shared_m2), "/opt/coevo/shared-m2", "/root/.m2/repository"],
            others=[
                self.java_victim.worktree,
                revision_repository(self.java_victim.worktree),
                self.python_victim.worktree,
            ],
            direct=[f"{self.gateway}:{port}", f"{self.host}:{port}", f"{self.registry_address}:443"],
            tunnels=["example.com:443", f"{self.gateway}:{port}", f"localhost:{port}", f"{registry}:443"],
        )

    def shared(self) -> dict[str, dict[str, str]]:
        """Hashes of everything shared: the venvs, the shared repository, the victims' folders."""
        assert self.java_victim.worktree and self.python_victim.worktree
        return {
            "venvs": snapshot(self.venvs),
            "m2": snapshot(self.shared_m2),
            "java worktree": snapshot(self.java_victim.worktree),
            "java repository": snapshot(revision_repository(self.java_victim.worktree)),
            "python worktree": snapshot(self.python_victim.worktree),
        }


def _primary_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("203.0.113.1", 9))  # sends nothing: picks the source address of the default route
        return str(probe.getsockname()[0])


def _built(
    world_root: Path, work: Path, repository_id: int, files: dict[str, str], language: str
) -> BuiltRevision:
    repo = GitRepo(world_root / f"repo-{repository_id}")
    sha = repo.commit("revision", DATE, dict(files))
    return prepare_revision(work, repo.path, sha, language, "docker", timeout=900)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Two normal revisions built and tested in Docker (their venv, worktrees and repository are the
    victims), a jar in the shared Maven repository, and a listener on the Docker host."""
    root = tmp_path_factory.mktemp("isolation")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COEVO_VENVS", str(root / "venvs"))
        patch.delenv("COEVO_SEEDS", raising=False)  # the seeds in the victims' venvs folder
        patch.setenv("COEVO_M2", str(root / "m2"))
        jar = root / "m2" / SHARED_JAR
        jar.parent.mkdir(parents=True)
        jar.write_bytes(b"PK\x03\x04 the victim's jar")
        work = root / "work"
        python_files = {
            "pyproject.toml": python_projects.PYPROJECT,
            "src/calc/__init__.py": python_projects.CALC_INIT,
            "src/calc/core.py": python_projects.CALC_CORE,
            "tests/test_core.py": python_projects.CALC_TESTS,
        }
        python_victim = _built(root, work, 1, python_files, "python")
        assert python_victim.status == "ok", python_victim.message
        java_files = {
            "pom.xml": maven_projects.pom("calc", maven_projects.JUPITER_DEPS),
            "src/main/java/demo/Calc.java": maven_projects.CALC,
            "src/test/java/demo/CalcTest.java": maven_projects.JUPITER_TEST,
        }
        java_victim = _built(root, work, 2, java_files, "java")
        assert java_victim.status == "ok", java_victim.message
        for built, test in (
            (python_victim, "tests/test_core.py::test_add"),
            (java_victim, "demo.CalcTest#adds"),
        ):
            side = built.side()
            try:  # normal projects still build and run their tests
                assert [str(r.outcome) for r in side.run([test], timeout=300).results] == ["pass"]
            finally:
                side.close()
        listener = _Listener(("0.0.0.0", 0), _Count)
        threading.Thread(target=listener.serve_forever, daemon=True).start()
        bridge = docker_client().networks.get("bridge").attrs["IPAM"]["Config"][0]
        gateway = bridge.get("Gateway") or str(next(ipaddress.ip_network(bridge["Subnet"]).hosts()))
        try:
            yield World(
                root,
                work,
                root / "venvs",
                root / "m2",
                python_victim,
                java_victim,
                listener,
                gateway,
                _primary_address(),
                socket.gethostbyname("pypi.org"),
            )
        finally:
            listener.shutdown()
            listener.server_close()


def _report(path: Path) -> list[str]:
    assert path.is_file(), f"{path.name}: the hostile code did not run"
    return path.read_text().splitlines()


def _breaches(lines: list[str], allowed: tuple[str, ...] = ()) -> list[str]:
    return [line for line in lines if line.startswith(BREACHES) and not line.startswith(allowed)]


def test_the_victims_classpaths_name_what_their_test_containers_see(world: World) -> None:
    side = world.java_victim.side()
    try:
        missing = 'cat .coevo/classpath/*.txt | while read -r e; do [ -e "$e" ] || echo "$e"; done'
        listed = side.sandbox.exec(["sh", "-c", missing], timeout=60)
    finally:
        side.close()
    assert listed.ok and listed.stdout == "", f"missing in the test container: {listed.stdout}"


def test_each_test_container_has_a_scratch_folder_no_other_sees(world: World) -> None:
    one, other = world.python_victim.side(), world.python_victim.side()
    try:
        mine, theirs = one.sandbox.scratch(), other.sandbox.scratch()
        assert one.sandbox.exec(["test", "-d", str(mine)], timeout=60).ok
        assert other.sandbox.exec(["test", "-d", str(theirs)], timeout=60).ok
        assert not one.sandbox.exec(["test", "-e", str(theirs)], timeout=60).ok
    finally:
        one.close()
        other.close()


def test_a_hostile_setup_py_conftest_and_test_write_nothing_shared(world: World) -> None:
    port = world.listener.server_address[1]
    files = hostile_projects.python_project(
        world.targets("pypi.org"), f"http://{world.gateway}:{port}/simple"
    )
    before = world.shared()
    venvs_before = set(p.name for p in world.venvs.iterdir())
    built = _built(world.root, world.work, 3, files, "python")
    assert built.status == "ok", built.message
    assert built.worktree is not None
    after = world.shared()

    own = {p.name for p in world.venvs.iterdir()} - venvs_before
    (venv,) = [name for name in own if (world.venvs / name).is_dir()]
    assert own <= {venv, f"{venv}.lock"}
    assert {k: v for k, v in after["venvs"].items() if not k.startswith(venv)} == before["venvs"]
    assert {k: v for k, v in after.items() if k != "venvs"} == {
        k: v for k, v in before.items() if k != "venvs"
    }

    # pip ran setup.py with only its own venv (and staging copy) writable, through the proxy to PyPI only.
    setup = _report(world.venvs / venv / "hostile-setup.txt")
    assert "TUNNELED pypi.org:443" in setup  # the proxy serves the registry
    assert f"refused tunnel {world.gateway}:{port}: HTTP/1.1 403" in setup  # declared, but the Docker host
    own_folders = (f"WROTE {world.venvs / venv}/", f"WROTE {world.venvs / venv}.src-")
    assert _breaches(setup, (*own_folders, "TUNNELED pypi.org:443")) == []
    assert any(line.startswith(f"refused write {world.venvs}/.seed-") for line in setup), setup  # it tried
    # Collecting the tests (the project's conftest) ran with every venv read-only, its own too.
    collect = _report(built.worktree / "hostile-collect.txt")
    assert _breaches(collect, ("TUNNELED pypi.org:443",)) == []

    # The test, run in a test container: no network at all, nothing shared writable.
    own_venv = snapshot(world.venvs / venv)
    side = built.side()
    try:
        run = side.run(["tests/test_hostile.py::test_attempts"], timeout=300)
    finally:
        side.close()
    assert [str(r.outcome) for r in run.results] == ["pass"]
    test = _report(built.worktree / "hostile-test.txt")
    assert _breaches(test) == [] and "refused tunnel example.com:443: no proxy" in test
    assert snapshot(world.venvs / venv) == own_venv
    assert {k: v for k, v in world.shared().items() if k != "venvs"} == {
        k: v for k, v in before.items() if k != "venvs"
    }
    assert world.listener.connections == 0


def test_a_hostile_pom_and_test_write_nothing_shared(world: World) -> None:
    port = world.listener.server_address[1]
    registry = "repo.maven.apache.org"
    files = hostile_projects.maven_project(world.targets(registry), f"https://{world.gateway}:{port}/repo")
    before = world.shared()
    built = _built(world.root, world.work, 4, files, "java")
    assert built.status == "ok", built.message
    assert built.worktree is not None and built.image is not None
    assert world.shared() == before

    # The deps image's build ran the antrun step with nothing shared mounted, through the proxy.
    log = docker_client().containers.run(built.image, ["cat", "/opt/coevo/deps.log"], remove=True).decode()
    deps = [line.split("[exec] ", 1)[1].strip() for line in log.splitlines() if "[exec] " in line]
    assert f"refused tunnel {world.gateway}:{port}: HTTP/1.1 403" in deps
    assert _breaches(deps, (f"TUNNELED {registry}:443",)) == []
    # The revision's build: its own repository writable, nothing else.
    build = _report(built.worktree / "hostile-build.txt")
    assert f"TUNNELED {registry}:443" in build
    assert _breaches(build, ("WROTE /root/.m2/repository/", f"TUNNELED {registry}:443")) == []

    own_repository = snapshot(revision_repository(built.worktree))
    side = built.side()
    try:
        run = side.run(["demo.HostileTest#attempts"], timeout=300)
    finally:
        side.close()
    assert [str(r.outcome) for r in run.results] == ["pass"]
    test = _report(built.worktree / "hostile-test.txt")
    assert _breaches(test) == [] and "refused write /root/.m2/repository/hostile" in test
    assert snapshot(revision_repository(built.worktree)) == own_repository
    assert world.shared() == before
    assert world.listener.connections == 0

    release_revision(world.work, world.root / "repo-4", built.sha, "docker")
    assert not revision_repository(built.worktree).exists() and not built.worktree.exists()
    # Its deps image is this run's own (the pom names this run's folders and port): 22 MB a run,
    # left behind on every machine that runs the suite, unless removed.
    assert built.image.startswith("coevo-deps:")
    docker_client().images.remove(built.image)


def test_a_link_a_build_leaves_in_its_worktree_leads_the_host_nowhere(world: World) -> None:
    """The host writes an agent's or another revision's test file beside the revision's own; the
    revision's conftest left a link there, to another revision's source."""
    assert world.java_victim.worktree is not None
    victim = world.java_victim.worktree / "src/main/java/demo/Calc.java"
    planted = "tests/test_coevo_probe__test_core.py"
    files = {
        "pyproject.toml": python_projects.PYPROJECT,  # the victim's: its venv serves, built already
        "src/calc/__init__.py": python_projects.CALC_INIT,
        "src/calc/core.py": python_projects.CALC_CORE,
        "tests/test_core.py": python_projects.CALC_TESTS,
        "conftest.py": f"import os\n\nif not os.path.lexists({planted!r}):\n"
        f"    os.symlink({str(victim)!r}, {planted!r})\n",
    }
    built = _built(world.root, world.work, 5, files, "python")
    assert built.status == "ok", built.message
    assert built.worktree is not None and (built.worktree / planted).is_symlink()
    before = world.shared()
    side = built.side()
    try:
        agent_file = b"def test_add():\n    pass\n"
        with pytest.raises(UnsafePath):
            side.run_cross(
                "tests/test_core.py", agent_file, ["tests/test_core.py::test_add"], "probe", timeout=120
            )
    finally:
        side.close()
    assert world.shared() == before


_BATCH_CHEAT = '''\
import ctypes
import errno
import glob
import json
import os
import subprocess
import sys
import time

import pytest
from calc.core import add, sub

TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.path.dirname(os.environ["COEVO_PYTEST_RESULTS"])
FORGED = {
    "id": "tests/test_cheat.py::test_calls", "when": "teardown", "outcome": "failed",
    "xfail": False, "message": "forged", "duration": 0.0, "oracle": True,
}
LEFTOVER = """
import glob, json, os, sys, time
while os.getppid() == int(sys.argv[4]):  # until the run that started it is over
    time.sleep(0.01)
time.sleep(0.3)  # the driver has had its time to kill it; the next run is under way
with open(os.path.join(sys.argv[1], "cheat-report.txt"), "a") as out:
    out.write("LEFTOVER ALIVE" + chr(10))
for _ in range(600):
    for name in glob.glob(os.path.join(sys.argv[2], "*.results")):
        with open(name, "a") as out:
            out.write(sys.argv[3] + "\\\\n")
    time.sleep(0.05)
"""


def _note(line):
    with open(os.path.join(TREE, "cheat-report.txt"), "a") as out:
        out.write(line + "\\n")


@pytest.fixture
def slow_teardown():
    yield
    time.sleep(0.3)  # what a leftover of the run before appends now would fail this one


def test_calls(slow_teardown):
    time.sleep(0.6)  # a leftover of the run before, if alive, shows itself meanwhile
    add(1, 2)
    sub(3, 1)  # nothing asserted: every mutant survives unless a run is tampered with
    _note("saw %d results files" % len(glob.glob(os.path.join(SCRATCH, "*.results"))))
    places = (TREE, os.path.join(TREE, "tests"), SCRATCH, "/tmp", "/dev/shm")
    seen = sum(len(glob.glob(os.path.join(place, "count-*"))) for place in places)
    libc = ctypes.CDLL(None, use_errno=True)  # a System V semaphore outlives the process
    if libc.semget(0xC0E0, 1, 0o1000 | 0o2000 | 0o600) == -1 and ctypes.get_errno() == errno.EEXIST:
        seen += 1  # IPC_CREAT | IPC_EXCL failed: a run before made it
    _note("earlier runs seen: %d" % seen)  # by what they left: a counter would tell the last run
    for place in places:
        with open(os.path.join(place, "count-%d" % os.getpid()), "w"):
            pass
    driver = os.getppid()
    status = {"run": 1, "exit": 0, "timed_out": True, "duration": 99.0}
    try:
        with open("/proc/%d/fd/1" % driver, "w") as out:
            out.write(json.dumps(status) + "\\n")
        _note("FORGED the driver's output")
    except OSError as exc:
        _note("refused output: %s" % type(exc).__name__)
    try:
        with open("/proc/%d/cmdline" % driver, "rb") as handle:
            plan = handle.read().split(b"\\0")[-2].decode()  # the driver's last argument
        with open(plan) as handle:
            handle.read()
        _note("READ the plan")
    except OSError as exc:
        _note("refused plan: %s" % type(exc).__name__)
    subprocess.Popen(
        [sys.executable, "-c", LEFTOVER, TREE, SCRATCH, json.dumps(FORGED), str(os.getpid())],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
'''


_SHADOW = """\
import os
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shadow-imported"), "a") as out:
    out.write("uid %d\\n" % os.getuid())
raise ImportError("a module of the tree named as the standard library's")
"""


def test_the_runs_of_a_batch_cannot_reach_each_other(world: World, tmp_path: Path) -> None:
    """Python's mutants run in one driver process (root) whose every run is a fork as the tests'
    user. A test tries to forge the driver's account of later runs, to read its plan, to count
    the runs before it, and leaves a detached process that appends failures to every later run's
    results, and counts the runs before it by the files they left (in the tree, the scratch
    folder, ``/tmp``, ``/dev/shm``); the tree holds modules named as the standard library's (on
    ``PYTHONPATH``, before it). The test asserts nothing, so each mutant must survive."""
    built = world.python_victim
    given = {"tests/test_cheat.py": _BATCH_CHEAT.encode()}
    given |= {name: _SHADOW.encode() for name in ("errno.py", "json.py", "runpy.py", "src/signal.py")}
    tests = ["tests/test_cheat.py::test_calls"]
    # As scoring does: the run on the new code in a tree and container of its own, then the
    # mutation phase in a fresh one.
    base = judge_tree(built, world.root / "repo-1", [], given, tmp_path / "base").side()
    try:
        baseline = base.tool.run_tests(base.sandbox, base.spec, tests, 600, coverage=True)
    finally:
        base.close()
    tree = judge_tree(built, world.root / "repo-1", [], given, tmp_path / "tree")
    assert tree.worktree is not None and tree.spec is not None
    report_file = tree.worktree / "cheat-report.txt"  # coevo's (root's): kept between runs
    report_file.write_text("")
    report_file.chmod(0o666)
    focal = [
        {"file": "src/calc/core.py", "method": "add", "start": 1, "end": 2},
        {"file": "src/calc/core.py", "method": "sub", "start": 5, "end": 7},
    ]
    mutants = python_mutants(focal, {"src/calc/core.py": python_projects.CALC_CORE.encode()})
    assert len(mutants) >= 2, mutants
    side = tree.side()
    try:
        assert side.sandbox.test_user is not None
        result = side.tool.mutation(side.sandbox, side.spec, tests, mutants, 600, baseline=baseline)
    finally:
        side.close()
    assert result.complete and "control run" not in result.message, result.message
    assert {m.status for m in result.mutants} == {"SURVIVED"}, result.mutants
    report = report_file.read_text().splitlines()
    runs = len(mutants) + 1  # a run per mutant, then the control run
    assert report.count("saw 1 results files") == runs, report
    assert report.count("refused output: PermissionError") == runs, report
    assert report.count("refused plan: PermissionError") == runs, report
    assert report.count("earlier runs seen: 0") == runs, report
    assert "LEFTOVER ALIVE" not in report, "a run's leftover outlived it"
    assert (tree.worktree / "src/calc/core.py").read_text() == python_projects.CALC_CORE
    # The tests' own process may import the tree's modules (as ``python -m pytest`` does); the
    # driver, which is root, never does.
    for marker in (tree.worktree / "shadow-imported", tree.worktree / "src" / "shadow-imported"):
        assert "uid 0" not in (marker.read_text().splitlines() if marker.exists() else []), marker
