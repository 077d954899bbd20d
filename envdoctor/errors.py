"""Errors that reach the user as one line and a documented exit code.

Exit codes (documented in README and docs/cli.md):
  0  no error found (warnings allowed)
  1  the doctor found an error (with --strict: also a warning)
  2  bad usage or bad input, or envdoctor itself failed
"""
from __future__ import annotations

from typing import Sequence

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class EnvdoctorError(Exception):
    """A failure to report as one line, never as a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
        # every problem behind the one line (gate's malformed inputs: the CLI prints them first, a caller of the
        # Python API or an MCP client reads them here); the message is the last of them
        self.details = tuple(details) or (message,)


class BadInput(EnvdoctorError):
    """A file, path or interpreter the user named cannot be used."""


# The package index's failures: defined here, with the other kinds, so that the Python API exports them without
# importing the index client (envdoctor.knowledge.index raises them and re-exports them).
class IndexUnavailable(EnvdoctorError):
    """The package index cannot be used (offline, refused, timed out, HTTP error, garbage)."""


class NoIndexConfigured(EnvdoctorError):
    """Neither pip's configuration nor the command line names an index."""


class Aborted(Exception):
    """click's Abort, for envdoctor.entry.finish: Ctrl-C (``__cause__`` is the KeyboardInterrupt) or the end of stdin.
    Here, not in the entry, so that envdoctor.cli raises it without importing the module that imports it."""
