"""What every app stands on and nothing of theirs: domain errors, the dashboard's request type,
keyset pagination, input checks of bodies and query strings, task publishing. Imports nothing
from traces, experiences or hindsight_site (tests/hindsight_site/test_layers.py)."""
