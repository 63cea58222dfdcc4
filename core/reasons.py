"""Stable strings of a decision record: reason codes, statuses, conversation states and routes;
users, logs, dashboards and stored records depend on them."""

from enum import StrEnum


class Reason(StrEnum):
    """Why a turn was refused (or held); members are their own names, so they compare, hash
    and serialise as the plain strings users and dashboards already rely on."""

    NO_MATCHING_SOURCE = "NO_MATCHING_SOURCE"
    LOW_CONFIDENCE = "LOW_CONFIDENCE"
    OFF_TOPIC = "OFF_TOPIC"
    INSUFFICIENT_CONTEXT = "INSUFFICIENT_CONTEXT"
    LOW_GENERATION_CONFIDENCE = "LOW_GENERATION_CONFIDENCE"
    MISSING_CITATIONS = "MISSING_CITATIONS"
    INVALID_CITATIONS = "INVALID_CITATIONS"
    UNSUPPORTED_CLAIMS = "UNSUPPORTED_CLAIMS"
    LLM_UNAVAILABLE = "LLM_UNAVAILABLE"
    INPUT_REJECTED = "INPUT_REJECTED"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    NOT_ANSWERED_BY_SOURCES = "NOT_ANSWERED_BY_SOURCES"
    REVIEW_REJECTED = "REVIEW_REJECTED"
    CHAT_NOT_SET_UP = "CHAT_NOT_SET_UP"
    AMBIGUOUS_QUESTION = "AMBIGUOUS_QUESTION"
    INDEX_UNAVAILABLE = "INDEX_UNAVAILABLE"  # the knowledge base could not be searched: an outage, not a gap
    INTERNAL_ERROR = "INTERNAL_ERROR"  # the turn failed on a bug; its traceback is in the log
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"  # what the turn needed from the transcript database could not be read


class Status(StrEnum):
    """The verifier's verdict, and the decision's status."""

    PASS = "PASS"
    WARN = "WARN"
    REFUSE = "REFUSE"


class State(StrEnum):
    """Where a conversation's turn is; the resting ones are persisted between turns
    (core/turn/conversation.py drives them)."""

    IDLE = "idle"
    RETRIEVING = "retrieving"
    GATING = "gating"
    GENERATING = "generating"
    VERIFYING = "verifying"
    REPLIED = "replied"
    REFUSED = "refused"
    AWAITING_REFINEMENT = "awaiting_refinement"
    PENDING_REVIEW = "pending_review"


class Route(StrEnum):
    """What happens to an answer the verifier did not refuse (core/turn/risk.py)."""

    REPLY = "reply"
    TEMPLATE = "template"
    HOLD = "hold"
    REFUSE = "refuse"  # no answer to route (a refusal); the decision record still says so
    REVIEWED = "reviewed"  # a person's decision on a held answer, sent later


NO_MATCHING_SOURCE = Reason.NO_MATCHING_SOURCE
LOW_CONFIDENCE = Reason.LOW_CONFIDENCE
OFF_TOPIC = Reason.OFF_TOPIC
INSUFFICIENT_CONTEXT = Reason.INSUFFICIENT_CONTEXT
LOW_GENERATION_CONFIDENCE = Reason.LOW_GENERATION_CONFIDENCE
MISSING_CITATIONS = Reason.MISSING_CITATIONS
INVALID_CITATIONS = Reason.INVALID_CITATIONS
UNSUPPORTED_CLAIMS = Reason.UNSUPPORTED_CLAIMS
LLM_UNAVAILABLE = Reason.LLM_UNAVAILABLE
INPUT_REJECTED = Reason.INPUT_REJECTED
NEEDS_REVIEW = Reason.NEEDS_REVIEW
NOT_ANSWERED_BY_SOURCES = Reason.NOT_ANSWERED_BY_SOURCES
REVIEW_REJECTED = Reason.REVIEW_REJECTED
CHAT_NOT_SET_UP = Reason.CHAT_NOT_SET_UP
AMBIGUOUS_QUESTION = Reason.AMBIGUOUS_QUESTION
INDEX_UNAVAILABLE = Reason.INDEX_UNAVAILABLE
INTERNAL_ERROR = Reason.INTERNAL_ERROR
DATABASE_UNAVAILABLE = Reason.DATABASE_UNAVAILABLE
# refusals on a failure of groundbot's own (an outage, a bug), not on what the documents hold: counted
# apart from the knowledge base's gaps, and not for a user to flag as answerable
FAILURES = (Reason.INDEX_UNAVAILABLE, Reason.DATABASE_UNAVAILABLE, Reason.INTERNAL_ERROR)
