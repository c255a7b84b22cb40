"""The OTLP/HTTP trace receiver: OpenTelemetry spans in, trajectories out.

decoding.py reads an export request (protobuf or JSON, maybe gzip) and writes the answer;
conventions.py maps one span's attributes (GenAI semantic conventions, OpenInference) to what
a step needs; services.py buffers the spans of a trace and, once it is complete, stores it
through the streaming ingest (open, append, complete). Its own app (label `otlp`) so its
buffer tables have their own migrations.
"""
