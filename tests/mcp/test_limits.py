"""The bounds of an MCP server: a bound that cannot work is refused with its name."""

import pytest

from m3gym.mcp.limits import McpLimits


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_response_bytes": 1000}, "max_response_bytes must be >= 65536"),
    ({"image_format": "gif"}, "image_format must be one of"),
    ({"image_quality": 0}, r"image_quality must be in \[1, 100\]"),
    ({"max_pooled_envs": -1}, "max_pooled_envs must be >= 0"),
])
def test_bad_limits_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        McpLimits(**kwargs).validate()
