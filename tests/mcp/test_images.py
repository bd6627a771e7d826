"""Images in MCP replies: each encoded within its byte budget, saying how it was sent."""

import cv2
import numpy as np

from m3gym.mcp.images import encode_image


def test_encoder_fits_any_budget_and_says_how() -> None:
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, size=(512, 512, 3), dtype=np.uint8)
    enc = encode_image(noise, 40_000, index=3, full_size=(2048, 2048))
    assert len(enc.data) <= 40_000 and enc.mime_type == "image/jpeg" and enc.quality is not None
    assert cv2.imdecode(np.frombuffer(enc.data, np.uint8), cv2.IMREAD_COLOR).shape[:2] == \
        (enc.height, enc.width)
    assert enc.downscaled and enc.width < 512
    ratio = 2048 / enc.width
    assert f"1 px here = {ratio:.3g} px of its 2048x2048 full-resolution image" in enc.note()
    assert encode_image(noise, 10) is None
    flat = np.full((300, 400, 3), 200, np.uint8)
    png = encode_image(flat, 100_000)
    assert png.mime_type == "image/png" and (png.width, png.height) == (400, 300)
    assert not png.downscaled and png.quality is None
    webp = encode_image(noise, 60_000, fmt="webp", quality=70)
    assert webp.mime_type == "image/webp" and webp.quality <= 70 and len(webp.data) <= 60_000
    assert encode_image(flat, 100_000, fmt="jpeg").mime_type == "image/jpeg"
