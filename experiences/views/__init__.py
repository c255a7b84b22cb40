"""Curation pages: the experience library, one experience, the merge queue, the knowledge base.

Access works as on the trace pages (traces.views): a user sees the projects they belong to; another
project's objects are 404. Admins act (edit, scope, status, bulk, merge, undo, rebuild); reviewers
read and vote. Every view and every partial checks this itself, since a partial can be requested
on its own. Writes go through experiences.services, which audit them.
"""
