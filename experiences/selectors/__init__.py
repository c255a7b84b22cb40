"""Reads of experiences and failure patterns, by subdomain: experience_list (the filters, the
API's lists, the library's pages, one experience), detail (the detail page), merges (the
proposal queue, word diffs, the merge history), kb (the knowledge-base page) and stats. Every
dashboard list reads a fixed number of queries whatever its length (asserted in
tests/experiences/views).

Every read is also importable from here (`from experiences import selectors`), as the API and
the views do.
"""

from experiences.selectors.detail import ExperienceDetail, experience_detail
from experiences.selectors.experience_list import (
    LIBRARY_DEFER,
    SCOPE_FIELDS,
    ExperienceFilters,
    LibraryFilters,
    LibraryPage,
    experience_filter,
    experience_for_user,
    experience_get,
    experience_library_page,
    experience_list,
    experience_mark_votes,
    experiences_of_project,
    failure_pattern_list,
)
from experiences.selectors.kb import KbOverview, kb_article_for_user, kb_overview
from experiences.selectors.merges import (
    DiffPart,
    ProposalQueue,
    ProposalRow,
    advice_diff,
    merge_for_user,
    merge_history,
    merge_of_proposal,
    proposal_for_user,
    proposal_queue,
    proposal_row,
)
from experiences.selectors.stats import experience_stats

__all__ = [
    "LIBRARY_DEFER",
    "SCOPE_FIELDS",
    "DiffPart",
    "ExperienceDetail",
    "ExperienceFilters",
    "KbOverview",
    "LibraryFilters",
    "LibraryPage",
    "ProposalQueue",
    "ProposalRow",
    "advice_diff",
    "experience_detail",
    "experience_filter",
    "experience_for_user",
    "experience_get",
    "experience_library_page",
    "experience_list",
    "experience_mark_votes",
    "experience_stats",
    "experiences_of_project",
    "failure_pattern_list",
    "kb_article_for_user",
    "kb_overview",
    "merge_for_user",
    "merge_history",
    "merge_of_proposal",
    "proposal_for_user",
    "proposal_queue",
    "proposal_row",
]
