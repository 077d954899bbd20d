"""``envdoctor mcp``: envdoctor's commands as tools of a Model Context Protocol server on stdio, for AI assistants.

    tools.py    the tools (check, probe, explain, lock, gate, rules): schemas and bodies over envdoctor.api; no SDK
    server.py   the MCP server (the official Python SDK, the optional extra ``envdoctor[mcp]``): lists the tools,
                answers a call within its time, a failed call as a tool error
    cli.py      the click command (registered in envdoctor.cli.COMMANDS); it imports server.py only when it runs

Only server.py imports the SDK (tests/test_api_mcp.py holds it to that), so no other command pays for it.
"""
