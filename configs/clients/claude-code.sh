#!/bin/sh
# Register memserver with Claude Code. Replace /path/to/repo with the project root
# (index it first: `memserver index /path/to/repo`).
#
# Default scope is "local" (you, this project). `--scope project` writes .mcp.json in
# the repository instead, to share the server with everyone who checks it out.
claude mcp add memserver -- memserver serve --root /path/to/repo
