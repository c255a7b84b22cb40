"""Writes: one module per subdomain (ingest, streaming, api keys, audit, review hand-over)."""
