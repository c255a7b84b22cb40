"""Dashboard pages: trace list, inspector and relabelling, queue, audit, settings, stats.

Every view and every partial checks access itself: a partial can be requested on its own. A user
sees only the projects they are a member of (superusers: all); another project's objects are 404.
"""
