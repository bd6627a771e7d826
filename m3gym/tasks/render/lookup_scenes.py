"""Scene drawing of the level-3 lookup families, gathered under its first name.

The drawing lives in one module per part: :mod:`~m3gym.tasks.render.scene_primitives`
(gradients, cards, extruded boxes, placed patches), :mod:`~m3gym.tasks.render.faint_labels`
(the evidence), :mod:`~m3gym.tasks.render.scene_dressing` (stickers, props, the surface) and one
scene per family: :mod:`~m3gym.tasks.render.product_package` (``code_lookup``),
:mod:`~m3gym.tasks.render.logo_hosts` (``logo_lookup``) and :mod:`~m3gym.tasks.render.facade`
(``privacy_safe_lookup``). This module re-exports their names, so ``lookup_scenes as S`` keeps
working.
"""

from __future__ import annotations

from m3gym.tasks.render.facade import BADGE_TITLES, badge_card, draw_badge, draw_facade
from m3gym.tasks.render.faint_labels import (
    EVIDENCE_TILT,
    PLATE_COLORS,
    FaintLabel,
    draw_decoy_labels,
    draw_faint_label,
    evidence_patch,
    label_pads,
    label_size,
)
from m3gym.tasks.render.logo_hosts import draw_jersey, draw_logo_host, draw_storefront, paste_logo
from m3gym.tasks.render.product_package import draw_neighbour_boxes, draw_package, draw_shelf
from m3gym.tasks.render.scene_dressing import (
    STICKER_KINDS,
    add_props,
    add_stickers,
    finish_scene,
    place,
    scene_base,
    sticker_lines,
)
from m3gym.tasks.render.scene_primitives import (
    DISPLAY_FACES,
    EVIDENCE_FACES,
    barcode,
    camera_shot,
    card_patch,
    draw_box3d,
    fill_gradient,
    paste_center,
    paste_tilted,
    place_patch,
    quad_inner_box,
    shade,
    stroke_rect,
    text_patch,
    vertical_gradient,
)

__all__ = [
    "BADGE_TITLES", "DISPLAY_FACES", "EVIDENCE_FACES", "EVIDENCE_TILT", "PLATE_COLORS",
    "STICKER_KINDS", "FaintLabel", "add_props", "add_stickers", "badge_card", "barcode",
    "camera_shot", "card_patch", "draw_badge", "draw_box3d", "draw_decoy_labels", "draw_facade",
    "draw_faint_label", "draw_jersey", "draw_logo_host", "draw_neighbour_boxes", "draw_package",
    "draw_shelf", "draw_storefront", "evidence_patch", "fill_gradient", "finish_scene",
    "label_pads", "label_size", "paste_center", "paste_logo", "paste_tilted", "place",
    "place_patch", "quad_inner_box", "scene_base", "shade", "sticker_lines", "stroke_rect",
    "text_patch", "vertical_gradient",
]
