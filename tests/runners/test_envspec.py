"""EnvSpec detection from build files: Java releases, Maven modules, Python versions and installs."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runners import BrokenBuildFile, EnvSpec, FolderTree, GitTree, NoBuildFound, detect_env
from runners.environments.envspec import maven_build_files, resolve_python
from tests.miner.histories import java_history

POM = """<?xml version="1.0"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  {parent}
  <groupId>demo</groupId><artifactId>{artifact}</artifactId><version>1.0</version>
  {body}
</project>
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> FolderTree:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return FolderTree(tmp_path)


def _pom(artifact: str = "calc", body: str = "", parent: str = "") -> str:
    return POM.format(artifact=artifact, body=body, parent=parent)


@pytest.mark.parametrize(
    ("body", "release"),
    [
        ("<properties><maven.compiler.release>21</maven.compiler.release></properties>", "21"),
        (
            "<properties><java.version>1.8</java.version>"
            "<maven.compiler.source>${java.version}</maven.compiler.source></properties>",
            "8",
        ),
        (
            "<build><plugins><plugin><artifactId>maven-compiler-plugin</artifactId>"
            "<configuration><source>11</source><target>11</target></configuration>"
            "</plugin></plugins></build>",
            "11",
        ),
        ("", "17"),
    ],
)
def test_java_release(tmp_path: Path, body: str, release: str) -> None:
    spec = detect_env(_tree(tmp_path, {"pom.xml": _pom(body=body)}), "java")
    assert (spec.language, spec.language_version, spec.build_tool, spec.base) == (
        "java",
        release,
        "maven",
        f"java{release}",
    )


def test_multi_module_with_release_inherited_from_the_parent(tmp_path: Path) -> None:
    parent = (
        "<modules><module>core</module><module>app</module></modules>"
        "<build><pluginManagement><plugins><plugin><artifactId>maven-compiler-plugin</artifactId>"
        "<configuration><release>${jdk}</release></configuration></plugin></plugins></pluginManagement></build>"
        "<properties><jdk>11</jdk></properties>"
    )
    child = "<parent><groupId>demo</groupId><artifactId>root</artifactId><version>1.0</version></parent>"
    tree = _tree(
        tmp_path,
        {
            "pom.xml": _pom("root", parent),
            "core/pom.xml": _pom("core", parent=child),
            "app/pom.xml": _pom("app", parent=child),
            "mvnw": "#!/bin/sh\n",
        },
    )
    spec = detect_env(tree, "java")
    assert spec.language_version == "11"
    (tmp_path / "app/pom.xml").write_text(_pom("app", "<properties><jdk>17</jdk></properties>", child))
    # app overrides the property the parent's compiler configuration reads; one JDK serves all modules.
    assert detect_env(tree, "java").language_version == "17"
    assert spec.build_tool == "maven-wrapper"
    assert spec.modules == ("", "core", "app")
    assert spec.module_for("core/src/test/java/demo/CoreTest.java") == "core"
    assert spec.module_for("src/test/java/RootTest.java") == ""
    assert spec.module_for("application/X.java") == ""


@pytest.mark.parametrize(
    ("body", "level"),
    [
        ("<properties><maven.compiler.source>1.6</maven.compiler.source>"
         "<maven.compiler.target>1.6</maven.compiler.target></properties>",
         ("maven.compiler.source", "maven.compiler.target")),
        ("<properties><maven.compiler.release>8</maven.compiler.release></properties>",
         ("maven.compiler.release", "maven.compiler.source", "maven.compiler.target")),
        ("<properties><jdk>1.5</jdk><java.version>1.5</java.version></properties>"
         "<build><plugins><plugin><artifactId>maven-compiler-plugin</artifactId><configuration>"
         "<source>${jdk}</source><target>${java.version}</target></configuration></plugin></plugins></build>",
         ("maven.compiler.source", "maven.compiler.target", "jdk")),
        ("", ()),
    ],
    ids=["source-target", "release", "plugin-properties", "undeclared"],
)  # fmt: skip
def test_the_properties_that_carry_the_compiler_level(
    tmp_path: Path, body: str, level: tuple[str, ...]
) -> None:
    """What coevo sets to raise a level; ``java.*`` are the JVM's own properties too, never set."""
    assert detect_env(_tree(tmp_path, {"pom.xml": _pom(body=body)}), "java").java_level == level


def test_broken_and_missing_poms_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(BrokenBuildFile, match=r"^pom.xml is not well-formed XML: .*line 2"):
        detect_env(_tree(tmp_path, {"pom.xml": "<project>\n<oops></project>"}), "java")
    with pytest.raises(NoBuildFound, match=r"no pom\.xml"):
        detect_env(_tree(tmp_path / "empty", {}), "java")


@pytest.mark.parametrize(
    ("files", "version", "install"),
    [
        (
            {"pyproject.toml": '[project]\nname="p"\nrequires-python=">=3.8"\n'
             '[project.optional-dependencies]\ntest=["pytest"]\ndocs=["sphinx"]\n'},
            "3.11",
            [("-e", ".[test]")],
        ),
        (
            {"pyproject.toml": '[project]\nname="p"\nrequires-python=">=3.8,<3.11"\n'},
            "3.10",
            [("-e", ".")],
        ),
        ({"requirements.txt": "requests\n", "tox.ini": "[tox]\nenvlist = py39, py310\n"}, "3.10",
         [("-r", "requirements.txt")]),
        (
            {"setup.py": "setup(name='p', python_requires='>=3.12', extras_require={'testing': ['x']})\n",
             "requirements-dev.txt": "black\n"},
            "3.12",
            [("-e", ".[testing]"), ("-r", "requirements-dev.txt")],
        ),
        (
            {"setup.cfg": "[metadata]\nclassifiers =\n    Programming Language :: Python :: 3.9\n"},
            "3.9",
            [("-e", ".")],
        ),
        (
            {"requirements.txt": "attrs\n", ".github/workflows/ci.yml":
             "jobs:\n  t:\n    strategy:\n      matrix:\n        python-version: ['3.8', \"3.9\", '3.10']\n"},
            "3.10",
            [("-r", "requirements.txt")],
        ),
        (
            {"requirements.txt": "attrs\n", ".travis.yml": "language: python\npython:\n  - 2.7\n  - 3.9\n"},
            "3.9",
            [("-r", "requirements.txt")],
        ),
    ],
)  # fmt: skip
def test_python_version_and_install(
    tmp_path: Path, files: dict[str, str], version: str, install: list[tuple[str, ...]]
) -> None:
    spec = detect_env(_tree(tmp_path, files), "python")
    assert spec.language_version == version
    assert list(spec.install) == install  # coevo's own test tools are the venv's business
    assert (spec.build_tool, spec.packages_before) == ("pip", None)


def test_broken_pyproject_and_no_python_build(tmp_path: Path) -> None:
    with pytest.raises(BrokenBuildFile, match=r"pyproject\.toml is not valid TOML"):
        detect_env(_tree(tmp_path, {"pyproject.toml": "[project\n"}), "python")
    with pytest.raises(NoBuildFound):
        detect_env(_tree(tmp_path / "empty", {"README.md": "hi"}), "python")


def test_git_revision_is_read_without_a_checkout(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    tree = GitTree(repo.path, repo.shas["initial"])
    spec = detect_env(tree, "java")
    assert spec == EnvSpec(
        language="java",
        language_version="17",
        build_tool="maven",
        modules=("",),
        java_level=("maven.compiler.release", "maven.compiler.source", "maven.compiler.target"),
    )
    assert "java 17 from pom.xml property maven.compiler.release" in spec.notes
    assert tree.list_dir("src/main/java/demo") == ["Calculator.java"]
    assert tree.list_dir("no/such/folder") == []
    assert list(maven_build_files(tree, spec)) == ["pom.xml"]


def test_maven_build_files_are_the_module_poms_and_maven_settings(tmp_path: Path) -> None:
    child = "<parent><groupId>demo</groupId><artifactId>root</artifactId><version>1.0</version></parent>"
    files = {
        "pom.xml": _pom("root", "<modules><module>core</module></modules>"),
        "core/pom.xml": _pom("core", parent=child),
        "core/src/main/java/demo/Core.java": "class Core {}",
        ".mvn/maven.config": "-Dx=1\n",
        "src/it/sample/pom.xml": _pom("sample"),  # not a module: its dependencies are not the build's
    }
    tree = _tree(tmp_path, files)
    found = maven_build_files(tree, detect_env(tree, "java"))
    assert sorted(found) == [".mvn/maven.config", "core/pom.xml", "pom.xml"]
    assert found["core/pom.xml"] == files["core/pom.xml"].encode()


# --- Python of its era, dependencies as of its date ---------------------------------------------


@pytest.mark.parametrize(
    ("files", "committed", "version", "declared"),
    [
        # Declared 3.6+: the newest released before the commit (3.10 came out on 2021-10-04).
        ({"setup.py": "setup(name='p', python_requires='>=3.6')\n"}, "2021-06-15T23:30:00-05:00", "3.9",
         ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")),
        # requires-python narrowed to what the classifiers list.
        ({"setup.cfg": "[metadata]\nclassifiers =\n    Programming Language :: Python :: 3.7\n"
                       "    Programming Language :: Python :: 3.8\n[options]\npython_requires = >=3.6\n"},
         "2023-05-01T00:00:00Z", "3.8", ("3.7", "3.8")),
        # Nothing declared: the newest Python released before the day.
        ({"requirements.txt": "six\n"}, "2022-10-24T12:00:00Z", "3.10", ()),
        ({"requirements.txt": "six\n"}, "2022-10-25T00:00:00Z", "3.11", ()),
        # Older than anything declared: the oldest declared.
        ({"pyproject.toml": '[project]\nname="p"\nrequires-python=">=3.12"\n'}, "2020-01-01T00:00:00Z",
         "3.12", ("3.12", "3.13", "3.14")),
    ],
)  # fmt: skip
def test_a_dated_revision_asks_for_the_python_of_its_era(
    tmp_path: Path, files: dict[str, str], committed: str, version: str, declared: tuple[str, ...]
) -> None:
    moment = datetime.fromisoformat(committed)
    spec = detect_env(_tree(tmp_path, files), "python", moment)
    assert (spec.language_version, spec.python_declared) == (version, declared)
    # The day in UTC: 23:30 at UTC-5 is the next day there.
    assert spec.packages_before == f"{moment.astimezone(UTC).date().isoformat()}T00:00:00Z"
    assert spec.notes[0].startswith(f"python {version}: ")
    assert spec.notes[1].startswith(f"dependencies: as of {spec.packages_before[:10]}")


def test_the_backend_chooses_among_its_own_pythons_and_says_why(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"setup.py": "setup(name='p', python_requires='>=3.6')\n"})
    spec = detect_env(tree, "python", datetime(2022, 3, 1, tzinfo=UTC))
    assert spec.language_version == "3.10"
    docker = resolve_python(spec, {"3.9", "3.11", "3.13"}, "Docker")
    assert docker.language_version == "3.9"
    assert docker.notes[-1] == (
        "python 3.9 (Docker): the newest released before 2022-03-01 of 3.6-3.14"
        " (setup.py python_requires '>=3.6'); 3.10 is not here"
    )
    assert resolve_python(spec, {"3.6", "3.7", "3.10", "3.11"}, "host").language_version == "3.10"
    # None of the declared versions here: the closest to what it asks for.
    only = dataclasses.replace(spec, python_declared=("3.7",), python_declared_by="tox.ini envlist")
    closest = resolve_python(only, {"3.9", "3.11"}, "Docker")
    assert closest.language_version == "3.9"
    assert "the closest here to 3.7" in closest.notes[-1]
    # As close below as above: the one released before the revision (flask in April 2024 asks
    # for 3.12; cffi 1.16 of that day has no wheel for 3.13, which came out in October).
    flask = dataclasses.replace(
        spec, python_declared=("3.8", "3.10", "3.12"), packages_before="2024-04-07T00:00:00Z"
    )
    assert resolve_python(flask, {"3.9", "3.11", "3.13"}, "Docker").language_version == "3.11"
    # Both released before it and in the declared range: the newer of two as close.
    tested = dataclasses.replace(
        flask, python_declared=("3.8", "3.10"), packages_before="2023-06-01T00:00:00Z"
    )
    assert resolve_python(tested, {"3.9", "3.11"}, "Docker").language_version == "3.11"
    # Below the oldest declared is the last resort: requires-python '>=3.12' in 2026 gets 3.13.
    modern = dataclasses.replace(flask, python_declared=("3.12",), packages_before="2026-06-01T00:00:00Z")
    assert resolve_python(modern, {"3.9", "3.11", "3.13"}, "Docker").language_version == "3.13"
    assert (
        resolve_python(
            dataclasses.replace(spec, packages_before=None), {"3.9", "3.11"}, "host"
        ).language_version
        == "3.11"
    )
