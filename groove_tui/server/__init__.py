"""`groove-tui serve`: groove's MCP server over groove-tui's engine, a front end like the explorer.

`surface` holds what a client sees of groove's surface (tool schemas, argument checks, limits, prompts,
`kb://` URIs); `kb` answers each tool and resource synchronously over one open `Engine`; `mcp` wires both
into the official MCP SDK's low-level server and runs it over stdio or streamable HTTP. Nothing here
imports the explorer or the commands: `groove_tui.commands.serve` opens the engine with the settings
every other command uses and hands it over.
"""
