"""``envdoctor mcp``: serve envdoctor's commands as MCP tools on stdin / stdout (envdoctor.mcpserver.server).

Exit codes: 0 the client closed the connection; 2 the MCP SDK is not installed (``pip install 'envdoctor[mcp]'``)
or bad usage. The SDK is imported when the command runs, never when it is registered.
"""
from __future__ import annotations

import click

from envdoctor.cli_options import Seconds
from envdoctor.errors import EnvdoctorError


@click.command(name="mcp")
@click.option("--call-timeout", type=Seconds(1, 3600), default=300.0, show_default=True,
              help="Seconds one tool call may take in all; past it the call answers a tool error and its commands "
                   "are killed.")
@click.option("--cache", "keep_cache", is_flag=True,
              help="Keep answers in envdoctor's cache folder as the commands do (by default the server writes no "
                   "file unless a tool's argument names one).")
def mcp(call_timeout: float, keep_cache: bool) -> None:
    """Serve check, probe, explain, lock, gate and rules as tools of an MCP server on stdio, for AI assistants
    (needs the optional extra: pip install 'envdoctor[mcp]')."""
    try:
        from envdoctor.mcpserver import server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "anyio"):  # the SDK and its async library
            raise
        raise EnvdoctorError("envdoctor mcp needs the MCP SDK, which is not installed: "
                             "pip install 'envdoctor[mcp]'") from None
    server.serve(call_timeout=call_timeout, keep_cache=keep_cache)
