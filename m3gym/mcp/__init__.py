"""m3gym over the Model Context Protocol: ``m3gym mcp`` (needs the ``mcp`` extra).

:mod:`m3gym.mcp.episodes` (the server-side episode table) is plain Python;
:mod:`m3gym.mcp.server` builds the server with the official ``mcp`` SDK, imported only there.
"""
