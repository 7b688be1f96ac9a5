"""Python: interpreters, venvs and dated installs, the tests' declared dependencies, and the pytest
tool (pytest under coverage.py's per-test contexts, in one process).

Uses the EnvSpec and file readers of :mod:`runners.environments`, :mod:`runners.sandbox`, and the
shared types at the top of :mod:`runners`."""
