"""The MCP server of ``envdoctor mcp`` on stdio, over the official Python SDK's low-level server (the tools bring
their own JSON schemas, envdoctor's report and snapshot schemas among them, so no schema is derived from Python
signatures here). The only module of envdoctor that imports the SDK; envdoctor.mcpserver.cli imports it when the
command runs.

Each call runs in a worker thread (the core blocks on the commands it runs) within ``--call-timeout`` seconds: past
it, the call answers a tool error and the commands it started are killed, so its thread ends soon after. Any
failure of a call, envdoctor's own or not, is answered as a tool error (``isError``); the server goes on.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from envdoctor import __version__
from envdoctor.mcpserver import tools

INSTRUCTIONS = ("envdoctor answers whether torch / tensorflow / jax on a machine will really use its GPU, and what "
                "exactly to install when not. `check` judges the machine (findings with IDs, evidence and fixes); "
                "`explain` tells what a finding's rule means; `lock` pins builds that fit; `gate` judges "
                "requirements files before an install. Nothing is installed, and no file is written unless a "
                "tool's argument names one.")


def _tool(t: tools.Tool) -> types.Tool:
    return types.Tool(name=t.name, description=t.description, input_schema=t.input_schema(),
                      output_schema=t.output_schema(),
                      annotations=types.ToolAnnotations(read_only_hint=t.read_only, destructive_hint=not t.read_only,
                                                        idempotent_hint=t.read_only, open_world_hint=t.open_world))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def answer(name: str, arguments: Optional[Dict[str, Any]], limit: float) -> types.CallToolResult:
    """Tool `name`'s answer to `arguments`, within `limit` seconds; every failure as a tool error."""
    try:
        with anyio.fail_after(limit):
            data, text = await anyio.to_thread.run_sync(tools.call, name, arguments, abandon_on_cancel=True)
    except TimeoutError:
        from envdoctor import subproc

        subproc.kill_all()
        return _error(f"{name} took longer than {limit:g} s (envdoctor mcp --call-timeout); the commands it ran "
                      "were killed")
    except tools.ToolError as exc:
        return _error(str(exc))
    except Exception as exc:  # noqa: BLE001 - a call's failure is the client's to read, never the server's end
        return _error(f"internal error in {name}: {type(exc).__name__}: {exc}")
    return types.CallToolResult(content=[types.TextContent(text=text),
                                         types.TextContent(text=json.dumps(data, ensure_ascii=False))],
                                structured_content=data)


def build(call_timeout: float) -> Server[Any]:
    listed = [_tool(t) for t in tools.listing()]

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: Optional[types.PaginatedRequestParams]) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return await answer(params.name, params.arguments, call_timeout)

    return Server("envdoctor", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def serve(call_timeout: float, keep_cache: bool = False) -> None:
    """Serve on stdin / stdout until the client closes the connection."""
    if not keep_cache:
        os.environ["ENVDOCTOR_NO_CACHE"] = "1"  # read-only: the probes' answers are not kept on disk
    server = build(call_timeout)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
