"""Hostile projects for the isolation tests: build steps and tests that try to write shared state
and to reach the Docker host, reporting every attempt, one line each."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.runners import maven_projects

ATTEMPTS = r"""#!/bin/bash
# What a hostile build step or test tries; one line per attempt, to stdout and to the file "$1".
shopt -s nullglob
report=${1:-/dev/null}
say() { echo "$*" | tee -a "$report"; }
write() {
  if (printf 'import os; os.system("touch /tmp/pwned")\n' > "$1") 2>/dev/null; then
    say "WROTE $1"
  else
    say "refused write $1"
  fi
}
for site in {venvs}/*/lib/python*/site-packages {venvs}/.seed-*/lib/python*/site-packages; do
  write "$site/zz_hostile.pth"
done
for venv in {venvs}/*/ {venvs}/.seed-*/; do write "${venv}hostile"; done  # every venv's seed too
write "{venvs}/hostile"
for m2 in {repositories}; do
  write "$m2/hostile"
  for jar in $(find "$m2" -name '*.jar' 2>/dev/null | head -n 3); do write "$jar"; done
done
for other in {others}; do write "$other/hostile"; done
for target in {direct}; do
  if timeout 5 bash -c "exec 3<>/dev/tcp/${target%:*}/${target##*:}" 2>/dev/null; then
    say "CONNECTED $target"
  else
    say "refused connect $target"
  fi
done
for target in {tunnels}; do
  ask="exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT $target HTTP/1.1\r\n\r\n' >&3"
  reply=$(timeout 10 bash -c "$ask && head -c 12 <&3" 2>/dev/null)
  case "$reply" in
    "HTTP/1.1 200"*) say "TUNNELED $target" ;;
    *) say "refused tunnel $target: ${reply:-no proxy}" ;;
  esac
done
"""


@dataclass(frozen=True)
class Targets:
    """What the hostile code aims at (host paths and addresses the test knows)."""

    venvs: Path
    repositories: Sequence[str]
    """Maven repositories: the shared one at its host path and as containers see it."""
    others: Sequence[Path]
    """Another revision's worktree and repository."""
    direct: Sequence[str]
    """``host:port`` to connect to directly: the Docker host, a registry's address."""
    tunnels: Sequence[str]
    """``host:port`` to ask the build's proxy for."""

    def script(self) -> str:
        return (
            ATTEMPTS.replace("{venvs}", str(self.venvs))
            .replace("{repositories}", " ".join(self.repositories))
            .replace("{others}", " ".join(map(str, self.others)))
            .replace("{direct}", " ".join(self.direct))
            .replace("{tunnels}", " ".join(self.tunnels))
        )


def python_project(targets: Targets, declared: str) -> dict[str, str]:
    """A setup.py project whose setup.py (run by pip) and conftest.py (run when the build collects
    the tests) make the attempts, reporting into the venv and the worktree; its test makes them too.
    ``declared`` is a URL its requirements name (so its host is in the build's policy)."""
    script = targets.script()
    runner = (
        "import subprocess, sys\n"
        f"SCRIPT = {script!r}\n"
        "def attempt(report):\n"
        "    subprocess.run(['bash', '-c', SCRIPT, 'hostile', report], check=False)\n"
    )
    return {
        "setup.py": runner
        + "import os\nattempt(os.path.join(sys.prefix, 'hostile-setup.txt'))\n"
        + "from setuptools import setup\nsetup(name='hostile', version='1.0', py_modules=['hostile'])\n",
        "requirements.txt": f"# mirror: {declared}\n",
        "hostile.py": runner,
        "conftest.py": "from hostile import attempt\n\nattempt('hostile-collect.txt')\n",
        "tests/test_hostile.py": "from hostile import attempt\n\n\n"
        "def test_attempts():\n    attempt('hostile-test.txt')\n",
    }


def maven_project(targets: Targets, declared: str) -> dict[str, str]:
    """A jar project whose pom runs the attempts with antrun's exec at ``initialize`` (in the deps
    image's build and in the revision's), declaring ``declared`` as a repository; its JUnit test
    makes them again."""
    encoded = base64.b64encode(targets.script().encode()).decode()  # nothing for Maven or Ant to expand
    antrun = f"""
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-antrun-plugin</artifactId>
        <version>3.1.0</version>
        <executions>
          <execution>
            <id>hostile</id>
            <phase>initialize</phase>
            <goals><goal>run</goal></goals>
            <configuration>
              <target>
                <exec executable="bash" failonerror="false">
                  <arg value="-c"/>
                  <arg value="echo {encoded} | base64 -d | bash -s -- ${{basedir}}/hostile-build.txt"/>
                </exec>
              </target>
            </configuration>
          </execution>
        </executions>
      </plugin>"""
    pom = maven_projects.pom("hostile", maven_projects.JUPITER_DEPS, extra_plugins=antrun).replace(
        "  <dependencies>",
        f"  <repositories>\n    <repository><id>own</id><url>{declared}</url></repository>\n"
        "  </repositories>\n  <dependencies>",
    )
    test = f"""package demo;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class HostileTest {{
    @Test
    void attempts() throws Exception {{
        Path script = Files.createTempFile("hostile", ".sh");
        Files.writeString(script, {_java(targets.script())});
        new ProcessBuilder("bash", script.toString(), "hostile-test.txt").inheritIO().start().waitFor();
    }}
}}
"""
    return {
        "pom.xml": pom,
        "src/main/java/demo/Calc.java": maven_projects.CALC,
        "src/test/java/demo/HostileTest.java": test,
    }


def snapshot(folder: Path, skip: Sequence[str] = ()) -> dict[str, str]:
    """Every entry below ``folder`` (links not followed) → its content hash, link target or kind."""
    found: dict[str, str] = {}
    if not folder.exists():
        return found
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(root, name)
            relative = str(path.relative_to(folder))
            if any(relative == s or relative.startswith(s + "/") for s in skip):
                continue
            if path.is_symlink():
                found[relative] = "link " + os.readlink(path)
            elif path.is_file():
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[relative] = "folder" if path.is_dir() else "other"
    return found


def _java(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
