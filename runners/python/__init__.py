"""Python: interpreters, venvs and dated installs, the tests' declared dependencies, the pytest
tool (pytest under coverage.py's per-test contexts, in one process), Cosmic Ray's mutants
(``mutants``), and Python's row of the toolchain table (``toolchain``: its environments, cross
runs and mutation).

Uses :mod:`runners.environments`' EnvSpec and file readers (``toolchain`` also its images and
Environment type), :mod:`runners.sandbox`, and the shared types at the top of :mod:`runners`."""
