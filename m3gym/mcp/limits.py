"""The bounds of one MCP server (:class:`McpLimits`): episodes, memory, and reply size."""

from __future__ import annotations

from dataclasses import dataclass

from m3gym.mcp import DEFAULT_RESPONSE_BYTES, IMAGE_FORMATS


@dataclass(frozen=True)
class McpLimits:
    """Bounds of one MCP server.

    Attributes:
        max_episodes: episodes in progress at once (finished ones no longer count).
        idle_s: an episode untouched this long is evicted (its env is freed).
        max_images: images one episode may hold (the env's image-state bound).
        max_episode_bytes: bytes of image data one episode may hold.
        max_response_bytes: bytes of one reply as sent (its JSON: text, structured content and
            base64 images). Images are re-encoded (lossy, then downscaled, the scale stated in
            the text) to fit, and left out with a note only when even a small one cannot.
        image_format: ``auto`` (PNG when it fits, else JPEG), ``png``, ``jpeg`` or ``webp``.
        image_quality: the first JPEG/WebP quality tried (1-100); lower ones follow if needed.
        finished_kept: finished or evicted episodes remembered for reports and precise errors.
        finished_bytes: bytes (as JSON) of the traces of those remembered episodes.
        max_pooled_envs: idle envs kept for reuse, over all env ids together (they keep no
            episode's images).
        max_busy: env resets and steps that run at once (others wait their turn): bounds the
            transient memory of many sessions rendering at the same moment.
    """

    max_episodes: int = 32
    idle_s: float = 900.0
    max_images: int = 48
    max_episode_bytes: int = 192 * 1024 * 1024
    max_response_bytes: int = DEFAULT_RESPONSE_BYTES
    image_format: str = "auto"
    image_quality: int = 85
    finished_kept: int = 256
    finished_bytes: int = 32 * 1024 * 1024
    max_pooled_envs: int = 4
    max_busy: int = 4

    def validate(self) -> None:
        """Raise ``ValueError`` for a bound that cannot work."""
        for name in ("max_episodes", "max_images", "max_episode_bytes", "finished_kept",
                     "finished_bytes", "max_busy"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_pooled_envs < 0:
            raise ValueError("max_pooled_envs must be >= 0")
        if self.max_response_bytes < MIN_RESPONSE_BYTES:
            raise ValueError(f"max_response_bytes must be >= {MIN_RESPONSE_BYTES} (room for the "
                             f"text of a reply), got {self.max_response_bytes}")
        if self.image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format must be one of {list(IMAGE_FORMATS)}, got "
                             f"{self.image_format!r}")
        if not 1 <= self.image_quality <= 100:
            raise ValueError(f"image_quality must be in [1, 100], got {self.image_quality}")
        if not self.idle_s > 0:
            raise ValueError("idle_s must be > 0")


MIN_RESPONSE_BYTES = 64 * 1024
"""Smallest ``max_response_bytes``: a reply's text (a fetched page, a verdict) must fit."""
