"""Environments: what a revision needs (EnvSpec, detected from its files), its files (worktrees,
histories), the images it builds in, the revision built once in an environment, and runs of one
revision's tests on another's build (sides, with test files cut down to some methods: pruning).

Uses :mod:`runners.java` and :mod:`runners.python` (through :mod:`runners.toolchains`, and the
JDK and Python choices), :mod:`runners.sandbox`, the shared types at the top of :mod:`runners`,
and :mod:`miner`'s parsers. :mod:`runners.java` and :mod:`runners.python` use only its EnvSpec
and file readers (``envspec``, ``worktree``)."""
