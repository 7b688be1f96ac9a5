"""Python: interpreters, venvs and dated installs, the tests' declared dependencies, the pytest tool
(pytest with coverage.py's per-test contexts, run in one process).

Uses :mod:`runners.environments` (EnvSpec, a revision's files), :mod:`runners.sandbox`, the shared
types at the top of :mod:`runners`."""
