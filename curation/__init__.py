"""Curation by execution: the 4-way test matrix, classification, drop reasons and the funnel."""

from .classify import DEFAULT_KINDS, FAILING, TRACKS, Verdict, cells_for, classify
from .curate import (
    DEFAULT_MAX_SPAN_HOURS,
    CurateProgress,
    CurateReport,
    CurateRequest,
    curate,
    curate_pair,
    task_id,
)
from .funnel import Funnel, funnel
from .revalidate import (
    DEFAULT_SAMPLE,
    Health,
    RevalidateProgress,
    RevalidateReport,
    RevalidateRequest,
    health_verdict,
    revalidate,
    select_tasks,
)

__all__ = [
    "DEFAULT_KINDS",
    "DEFAULT_MAX_SPAN_HOURS",
    "DEFAULT_SAMPLE",
    "FAILING",
    "TRACKS",
    "CurateProgress",
    "CurateReport",
    "CurateRequest",
    "Funnel",
    "Health",
    "RevalidateProgress",
    "RevalidateReport",
    "RevalidateRequest",
    "Verdict",
    "cells_for",
    "classify",
    "curate",
    "curate_pair",
    "funnel",
    "health_verdict",
    "revalidate",
    "select_tasks",
    "task_id",
]
