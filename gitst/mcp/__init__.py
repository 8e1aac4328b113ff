"""``git st mcp``: gitst's agent loop as a Model Context Protocol server (docs/mcp.md).

:mod:`gitst.mcp.tools` holds the tools as plain functions over the library;
:mod:`gitst.mcp.server` registers them with the ``mcp`` SDK (the optional extra
``gitst[mcp]``), the only module of gitst that imports it.
"""
