"""Production changes outside methods — a constant, a field, a module-level assignment — are
focal units: mined as changes, and focal when the test names them or runs code that does."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from miner.java import parse_java
from miner.python import parse_python
from runners.scoring.workspace import prompt_text
from tasks import MethodChange, Task, open_store
from tests.curation.small import mined_and_curated
from tests.gitrepo import GitRepo

TLS_V1 = 'DEFAULT_CIPHERS = "RSA"\n\n\ndef ciphers():\n    return DEFAULT_CIPHERS\n'
TLS_V2 = 'DEFAULT_CIPHERS = "ECDHE:RSA"\n\n\ndef ciphers():\n    return DEFAULT_CIPHERS\n'
HELP_V1 = 'URL = "http://example.org/help"\n'
HELP_V2 = 'URL = "https://example.org/docs/help"\n'


def test_parsers_list_code_outside_methods_as_units() -> None:
    java = parse_java(
        b'package a;\nclass C {\n  static final String URL = "x", B = "y";\n  static { init(); }\n'
        b"  static final Object A = new Object() {\n    int f() { return 1; }\n  };\n"
        b"  int g() { return 1; }\n}\n"
    )
    assert [(u.key, u.unit, u.start_line) for u in java.fields] == [
        ("C.URL", "field", 3), ("C.B", "field", 3), ("C.<static>", "field", 4),
    ]  # fmt: skip
    assert [m.key for m in java.methods] == ["C.A.f()", "C.g()"]  # the anonymous class's own
    python = parse_python(
        b"import os\nA = 1\nB: int = 2\nclass C:\n    D = 3\n    def f(self):\n        E = 4\n"
    )
    assert [(u.key, u.unit) for u in python.fields] == [("A", "module"), ("B", "module"), ("C.D", "field")]
    assert [m.key for m in python.methods] == ["C.f"]


def test_a_changed_constant_is_a_focal_unit_of_the_test_that_checks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "", "calc/tls.py": TLS_V1,
        "calc/help.py": HELP_V1,
        "tests/test_tls.py": (
            "from calc.tls import ciphers\n\n\ndef test_ciphers():\n    assert ciphers() == 'RSA'\n"
        ),
        "tests/test_help.py": (
            "from calc import help\n\n\ndef test_url():\n    assert help.URL.startswith('http://')\n"
        ),
    })  # fmt: skip
    repo.commit("constants", "2024-06-02T09:00:00+00:00", {
        "calc/tls.py": TLS_V2,
        "calc/help.py": HELP_V2,
        "tests/test_tls.py": (
            "from calc.tls import ciphers\n\n\ndef test_ciphers():\n    assert ciphers() == 'ECDHE:RSA'\n"
        ),
        "tests/test_help.py": (
            "from calc import help\n\n\ndef test_url():\n    assert help.URL.startswith('https://')\n"
        ),
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    with open_store(db).session() as s:
        changes = {(c.file, c.method, c.unit) for c in s.exec(select(MethodChange)).all()}
        tasks = {t.test_file: t for t in s.exec(select(Task)).all()}
    assert changes == {("calc/tls.py", "DEFAULT_CIPHERS", "module"), ("calc/help.py", "URL", "module")}
    assert {f: t.track for f, t in tasks.items()} == {
        "tests/test_tls.py": "update",
        "tests/test_help.py": "update",
    }
    # ciphers() runs the line that names the constant; test_url names it itself.
    tls = tasks["tests/test_tls.py"].focal_methods
    assert [(f["method"], f["unit"], f["provenance"]) for f in tls] == [
        ("DEFAULT_CIPHERS", "module", "coverage_use")
    ]
    url = tasks["tests/test_help.py"].focal_methods
    assert [(f["method"], f["unit"], f["provenance"]) for f in url] == [("URL", "module", "reference")]
    prompt = prompt_text(tasks["tests/test_tls.py"], repo.path, b"")
    assert "DEFAULT_CIPHERS (module-level)" in prompt and 'DEFAULT_CIPHERS = "ECDHE:RSA"' in prompt
