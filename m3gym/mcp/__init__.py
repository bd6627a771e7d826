"""m3gym over the Model Context Protocol: ``m3gym mcp`` (needs the ``mcp`` extra).

:mod:`m3gym.mcp.episode_table` (the server-side episode table) is plain Python;
:mod:`m3gym.mcp.server` builds the server with the official ``mcp`` SDK, imported only there.
"""

CLIENT_EVENT_LIMIT = 1024 * 1024
"""Bytes of one server-sent event the official MCP Python client accepts at default settings."""

DEFAULT_RESPONSE_BYTES = 768 * 1024
"""Default cap on one reply as sent (JSON: text, structured content, base64 images): 3/4 of
:data:`CLIENT_EVENT_LIMIT`, so the JSON-RPC envelope and SSE framing leave 256 KiB of headroom."""

IMAGE_FORMATS = ("auto", "png", "jpeg", "webp")
"""``--image-format`` values: ``auto`` sends PNG when it fits and JPEG otherwise."""
