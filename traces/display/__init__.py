"""What the trace pages show, built as text and HTML: untrusted text made visible, Markdown,
the inspector's step item."""
