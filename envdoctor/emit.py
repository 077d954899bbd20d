"""Writing a command's output (no click): to stdout, or to -o FILE by envdoctor.outfile's rules, always through
the one redactor unless the user said --no-redact."""
from __future__ import annotations

import sys
from typing import Any, Optional

from envdoctor.outfile import write_output


def write_stdout(text: str) -> None:
    """`text` on stdout, ending in one newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def emit(text: str, output: Optional[str], force: bool = False, redact: bool = True, snapshot: Any = None) -> None:
    """Print a command's output, or write it to -o FILE (force: a dangling symlink's target is made), through the
    one redactor unless `redact` is False (--no-redact)."""
    if redact:
        from envdoctor.redact import redact_output  # only when redacting (start-up speed)

        text = redact_output(text, snapshot)
    if output:
        write_output(output, text, force=force)
    else:
        write_stdout(text)
