"""coevo's own templates (``runners/templates``: Dockerfiles, Maven settings, the per-test coverage
listener, PIT's pom) and the one jinja2 environment that renders them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).parent / "templates"
"""The folder of coevo's templates and the files it copies as they are."""


@functools.cache
def _environment() -> Any:
    import jinja2  # only where something is rendered

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, **values: Any) -> str:
    """``template`` (a name in :data:`TEMPLATES`) rendered with ``values``; a value it names but is
    not given is an error, never an empty string."""
    return str(_environment().get_template(template).render(**values))
