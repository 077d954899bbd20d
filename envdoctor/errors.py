"""Errors that reach the user as one line and a documented exit code.

Exit codes (documented in README and docs/cli.md):
  0  no error found (warnings allowed)
  1  the doctor found an error (with --strict: also a warning)
  2  bad usage or bad input, or envdoctor itself failed
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class EnvdoctorError(Exception):
    """A failure to report as one line, never as a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class BadInput(EnvdoctorError):
    """A file, path or interpreter the user named cannot be used."""
