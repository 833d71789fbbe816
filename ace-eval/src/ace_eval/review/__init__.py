"""Review queues: a review run's staged edits as candidates a person accepts or rejects (`ace-eval review`)."""

from ace_eval.review._decide import (
    Accepted,
    ReviewError,
    accept_candidates,
    apply_candidate,
    find_candidates,
    load_published,
    reject_candidates,
)
from ace_eval.review._grouping import NEAR_DUPLICATE_RATIO, Proposal, ReviewCounts, Stager, normalize_issue
from ace_eval.review._model import (
    QUEUE_VERSION,
    Candidate,
    Decision,
    Edit,
    QueueFile,
    QueueFormatError,
    SkillText,
    SourceRef,
    queue_path,
    read_queue,
)
from ace_eval.review._provenance import CollectionHashes, provenance_problems, trace_sha256
from ace_eval.review._queue import QueueBusyError, ReviewQueue

__all__ = [
    "NEAR_DUPLICATE_RATIO",
    "QUEUE_VERSION",
    "Accepted",
    "Candidate",
    "CollectionHashes",
    "Decision",
    "Edit",
    "Proposal",
    "QueueBusyError",
    "QueueFile",
    "QueueFormatError",
    "ReviewCounts",
    "ReviewError",
    "ReviewQueue",
    "SkillText",
    "SourceRef",
    "Stager",
    "accept_candidates",
    "apply_candidate",
    "find_candidates",
    "load_published",
    "normalize_issue",
    "provenance_problems",
    "queue_path",
    "read_queue",
    "reject_candidates",
    "trace_sha256",
]
