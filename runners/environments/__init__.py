"""Environments: what a revision needs (EnvSpec, detected from its files), its files (worktrees,
histories), the images it builds in, the revision built once in an environment, and runs of one
revision's tests on another's build (sides, with test files cut down to some methods: pruning).

``envspec``, ``worktree``, ``images`` and ``environment`` (the Environment type) sit below each
language's ``toolchain`` module, which uses them; ``revisions`` and ``sides`` sit above, and
set up, build and run a language's revisions only through :mod:`runners.toolchains`. Uses
:mod:`runners.sandbox`, the shared types at the top of :mod:`runners`, and :mod:`miner`'s parsers."""
