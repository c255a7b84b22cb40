"""Experience: scene features -> advice, with provenance; failure patterns for warnings.

One module per subdomain: `experience` (the experience, its recall time, provenance, versions
and the library's keyword frequencies), `families` (task families), `patterns` (failure
patterns), `recall_log` and `curation` (merges, proposals, votes, KB articles). Every model
is imported here, where Django and the rest of the code look for them
(`from experiences.models import Experience`).
"""

from experiences.models.curation import ExperienceMerge, ExperienceVote, KbArticle, MergeProposal
from experiences.models.experience import (
    EMBEDDING_DIM,
    Experience,
    ExperienceDedupDue,
    ExperienceRecall,
    ExperienceSource,
    ExperienceVersion,
    KeywordFrequency,
)
from experiences.models.families import TaskFamily
from experiences.models.patterns import FailurePattern
from experiences.models.recall_log import RecallLog

__all__ = [
    "EMBEDDING_DIM",
    "Experience",
    "ExperienceDedupDue",
    "ExperienceMerge",
    "ExperienceRecall",
    "ExperienceSource",
    "ExperienceVersion",
    "TaskFamily",
    "ExperienceVote",
    "FailurePattern",
    "KbArticle",
    "KeywordFrequency",
    "MergeProposal",
    "RecallLog",
]
