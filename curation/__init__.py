"""Curation by execution: the 4-way test matrix, classification, drop reasons and the funnel."""

from .classify import FAILING, TRACKS, Verdict, cells_for, classify
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

__all__ = [
    "DEFAULT_MAX_SPAN_HOURS",
    "FAILING",
    "TRACKS",
    "CurateProgress",
    "CurateReport",
    "CurateRequest",
    "Funnel",
    "Verdict",
    "cells_for",
    "classify",
    "curate",
    "curate_pair",
    "funnel",
    "task_id",
]
