"""Scoring: agents and their workspaces, judge trees, the success rules, why a test fails
(causes), the gold check, the judge and the leaderboard.

Uses every other part of :mod:`runners`, and :mod:`miner`'s parsers."""
