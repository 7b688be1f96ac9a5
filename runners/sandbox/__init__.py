"""Sandboxes: where coevo runs commands (on the host, or in a Docker container), what a run may
reach on the network (egress), its scratch folders, and the leftovers of killed runs.

Uses nothing else of :mod:`runners` but its test results' types (:mod:`runners.results`) and
where coevo's templates are (:mod:`runners.rendering`: the Maven settings the egress proxy serves)."""
