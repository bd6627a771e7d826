"""Tests of the discrete wrapper's action space (:mod:`m3gym.wrappers.actions`)."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym import geometry
from m3gym.wrappers.actions import REGION_NAMES, TOOL_OPTIONS, box_iou, nearest_option, region_box


def test_box_iou_and_nearest_option_by_hand() -> None:
    assert box_iou(np.array([0, 0, 10, 10]), np.array([5, 5, 15, 15])) == pytest.approx(25 / 175)
    assert box_iou(np.array([0, 0, 1, 1]), np.array([2, 2, 3, 3])) == 0.0
    rotate = TOOL_OPTIONS["rotate"]  # 90, 180, 270
    assert nearest_option(rotate, {"angle": -90}) == 2
    assert nearest_option(rotate, {"angle": 100}) == 0
    assert nearest_option(rotate, {"angle": 540}) == 1
    assert nearest_option(TOOL_OPTIONS["flip"], {"direction": "vertical"}) == 1
    assert nearest_option(TOOL_OPTIONS["autocontrast"], {"cutoff": 1.2}) == 2  # 1.0 %


def test_the_wrapper_uses_the_one_box_iou_of_the_package() -> None:
    assert box_iou is geometry.box_iou
    point = np.array([5.0, 5.0, 5.0, 5.0])
    assert box_iou(point, point) == 1.0  # identical boxes, zero-area ones included
    assert box_iou(point, np.array([0.0, 0.0, 10.0, 10.0])) == 0.0


def test_a_zero_area_reference_box_maps_to_the_full_image() -> None:
    # Every region has area, so a zero-area box overlaps none: the expert's argmax is region 0.
    box = np.array([250.0, 250.0, 250.0, 250.0])
    ious = [box_iou(box, np.asarray(region_box(r)[0])) for r in range(len(REGION_NAMES))]
    assert all(area > 0 for area in (geometry.box_area(region_box(r)[0])
                                     for r in range(len(REGION_NAMES))))
    assert int(np.argmax(ious)) == 0
