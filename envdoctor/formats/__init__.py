"""Findings formats shared by `check` and `gate`: one interface (interface.py), one module per format, a registry
that imports a format's module only when it is used (registry.py), and the marks and colours in one place (marks.py).

Adding a format is one module with ``name``, ``description`` and ``render(doc, options) -> str`` plus one line in
``registry.FORMATS``; neither command changes.
"""
