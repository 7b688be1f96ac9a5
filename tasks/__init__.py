"""The data model and the store that every stage reads and writes."""

from .errors import CoevoError
from .models import (
    AwareDateTime,
    Candidate,
    CommitOutcome,
    FocalLink,
    LinkProvenance,
    MethodChange,
    MethodChangeKind,
    MinedCommit,
    MiningRun,
    Repository,
    RevisionPair,
    RunStatus,
    Skip,
    TestChangeKind,
    utcnow,
)
from .queries import CandidateListing, CandidateView, FocalView, UnknownRepository, list_candidates
from .store import DB_ENV, DEFAULT_DB, Store, StoreError, database_url, open_store

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "AwareDateTime",
    "Candidate",
    "CandidateListing",
    "CandidateView",
    "CoevoError",
    "CommitOutcome",
    "FocalLink",
    "FocalView",
    "LinkProvenance",
    "MethodChange",
    "MethodChangeKind",
    "MinedCommit",
    "MiningRun",
    "Repository",
    "RevisionPair",
    "RunStatus",
    "Skip",
    "Store",
    "StoreError",
    "TestChangeKind",
    "UnknownRepository",
    "database_url",
    "list_candidates",
    "open_store",
    "utcnow",
]
