"""The MCP server: tools, resources and transports over the engine (the sole `mcp` importer).

Nothing is imported here, so `memserver --help` can load `cli_command` without the SDK:

- `backend`      the engine behind a lock, loaded in the background (no MCP types)
- `app`          `build_server`: the MCPServer, its lifespan, tools and resources
- `transports`   stdio, SSE and streamable HTTP, with Host/Origin checks and a bearer token
- `cli_command`  `serve_command()`: the `memserver serve` click command
"""
