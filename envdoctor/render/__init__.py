"""Output formats: text for people, JSON for machines, Markdown for bug reports."""
