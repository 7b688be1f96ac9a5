"""Environments: what a revision needs (EnvSpec), its images, its files (worktrees, histories), the
revision built once in an environment, and runs of one revision's tests on another's build (sides).

Uses :mod:`runners.java`, :mod:`runners.python` and :mod:`runners.sandbox` through
:mod:`runners.toolchains` and their modules."""
