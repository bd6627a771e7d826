"""The worker's affine helpers (:mod:`m3gym.sandbox.traced`) agree with :mod:`m3gym.geometry`.

The worker cannot import ``m3gym`` (it sees only its runtime folder), so ``traced`` keeps its own
6-tuple affines; these tests pin them to the package's one geometry.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym import geometry
from m3gym.sandbox import traced

SIDES = st.integers(1, 3000)


def as_matrix(affine: traced.Affine) -> np.ndarray:
    """Return a 6-tuple affine as geometry's 2x3 array."""
    return np.asarray(affine, dtype=np.float64).reshape(2, 3)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=12, max_size=12))
def test_compose_is_geometry_compose_affine(values) -> None:
    outer, inner = tuple(values[:6]), tuple(values[6:])
    expected = geometry.compose_affine(as_matrix(outer), as_matrix(inner))
    np.testing.assert_allclose(as_matrix(traced.compose(outer, inner)), expected, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.floats(-720, 720, allow_nan=False), SIDES, SIDES)
def test_rotation_is_geometry_rotation_affine(angle, w, h) -> None:
    ow, oh = geometry.rotated_size(angle, w, h)
    expected = geometry.rotation_affine(angle, w, h, ow, oh)
    np.testing.assert_allclose(as_matrix(traced.rotation_affine(angle, w, h, ow, oh)), expected,
                               atol=1e-6)


@pytest.mark.parametrize("k", range(-1, 5))
@pytest.mark.parametrize(("w", "h"), [(7, 3), (640, 480), (1, 1)])
def test_quarter_turns_are_geometry_rotations_by_multiples_of_90(k, w, h) -> None:
    ow, oh = geometry.rotated_size(90.0 * k, w, h)
    expected = geometry.rotation_affine(90.0 * k, w, h, ow, oh)
    np.testing.assert_array_equal(as_matrix(traced.quarter_turn(k, w, h)), expected)


@pytest.mark.parametrize("direction", ["horizontal", "vertical", "both"])
def test_flips_map_the_image_onto_itself_mirrored(direction) -> None:
    w, h = 7, 3
    affine = as_matrix(traced.flip_affine(direction, w, h))
    corners = geometry.box_corners((0, 0, w, h))
    mapped = geometry.apply_affine(affine, corners)
    assert geometry.mapped_extent(affine, (0, 0, w, h)) == (0, 0, w, h)
    mirrored_x = direction in ("horizontal", "both")
    mirrored_y = direction in ("vertical", "both")
    np.testing.assert_array_equal(mapped[0], [w if mirrored_x else 0, h if mirrored_y else 0])


def test_scale_maps_the_image_corners_to_the_output_corners() -> None:
    affine = as_matrix(traced.scale_affine(40, 30, 100, 15))
    assert geometry.mapped_extent(affine, (0, 0, 40, 30)) == (0, 0, 100, 15)
