"""Reads of trajectories, by subdomain: trace_list (filters, the list page, one trace), access
(projects, members, keys), inspector (a trace with steps, reviews and machine opinions), queue,
audit, compare and stats. Display-ready fields are traces.presentation's."""
