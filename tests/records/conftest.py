"""Fixtures shared by the records tests."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from tests.records.helpers import FONT, H, W, base_record, text_image, write_jsonl


@pytest.fixture
def fixture_set(tmp_path: Path) -> Path:
    """A 12-record set: plain crops, a rotated and a mirrored code, two boxes, a number."""
    recs = [base_record(tmp_path, f"r{i}") for i in range(8)]
    box = text_image(tmp_path / "rot.png", "AB-1234", (300, 300), quarter=1, seed=9)
    recs.append({"id": "rot", "images": ["rot.png"], "question": "Which code?",
                 "answer": {"value": "AB-1234"},
                 "evidence": [{"box": box, "op": {"op": "rotate", "angle": -90}}]})
    img = cv2.imread(str(tmp_path / "r0.png"))
    cv2.imwrite(str(tmp_path / "mirror.png"), cv2.flip(img, 1))
    b = recs[0]["evidence"][0]["box"]
    recs.append({"id": "mirror", "images": ["mirror.png"], "question": "Code?",
                 "answer": {"value": "QX-4817"},
                 "evidence": [{"box": [W - b[2], b[1], W - b[0], b[3]],
                               "op": {"op": "flip", "direction": "horizontal"}}]})
    b2 = text_image(tmp_path / "two.png", "12", (200, 900), seed=3)
    img = cv2.imread(str(tmp_path / "two.png"))
    (tw, th), base = cv2.getTextSize("30", FONT, 0.45, 1)
    cv2.putText(img, "30", (1300, 200 + th), FONT, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.imwrite(str(tmp_path / "two.png"), img)
    recs.append({"id": "two", "images": ["two.png"], "question": "Sum of the two numbers?",
                 "answer": {"value": 42, "match": "number", "tolerance": 0.5},
                 "evidence": [{"box": b2, "id": "left"},
                              {"box": [1298, 198, 1302 + tw, 204 + th + base], "id": "right"}]})
    recs.append({"id": "norm", "images": ["r1.png"], "question": "Code?",
                 "answer": {"value": "QX-4817", "variants": ["QX4817"]},
                 "evidence": [{"box": [b[0] * 1000 / W, b[1] * 1000 / H, b[2] * 1000 / W,
                                       b[3] * 1000 / H], "units": "norm1000"}],
                 "judge_checkpoints": [{"id": "j1", "axis": "V", "question": "Is the tag shown?"}]})
    return write_jsonl(tmp_path / "records.jsonl", recs)
