"""Procedural scene rendering shared by every task family (``from m3gym.tasks import render as R``).

Everything here is fast (OpenCV on whole arrays, small per-object patches, no Python loops over
pixels) and deterministic: the only source of randomness is the ``np.random.Generator`` passed in.
Images are ``uint8`` RGB ``(H, W, 3)``; boxes are ``(x0, y0, x1, y1)`` pixel coordinates with
exclusive ``x1``/``y1``.

The package is split along its seams; every public name is re-exported here:

* :mod:`~m3gym.tasks.render.util` — types (``Box``, ``Color``), :func:`pick`, :func:`shuffled`,
  colours, :func:`solid_image`;
* :mod:`~m3gym.tasks.render.geometry` — :func:`find_free_spot`, :func:`position_phrase`,
  :func:`box_to_bbox1000`, :func:`bbox1000_to_box`, :func:`crop_zoom_for`, :func:`view_scale`;
* :mod:`~m3gym.tasks.render.backgrounds` — :func:`background` (gradient, noise, paper, wood,
  brick, asphalt, sky, fabric with lighting and vignette);
* :mod:`~m3gym.tasks.render.text` — :func:`render_text` at a *glyph height* (the ink height of a
  capital letter, pixels) in a TrueType face of :data:`READABLE_FACES` / :data:`ALL_FACES` (bold
  and slanted variants) into a :class:`TextPatch`, :func:`paste_text` /
  :func:`draw_text` returning a :class:`PlacedText` (exact box and ink mask);
* :mod:`~m3gym.tasks.render.fonts` — TrueType text (FreeType via Pillow) into the same
  :class:`TextPatch`: :func:`truetype_text`, :data:`FONT_FACES`, :func:`pick_font`;
* :mod:`~m3gym.tasks.render.content` — realistic fictional text with Faker: :func:`fake` and
  :func:`fake_person`, :func:`fake_company`, :func:`fake_address`, :func:`fake_product`,
  :func:`fake_date`, :func:`fake_id`;
* :mod:`~m3gym.tasks.render.clutter` — :func:`add_clutter`, :func:`add_distractor_labels`;
* :mod:`~m3gym.tasks.render.codes` — :func:`random_code`, :func:`code_choices`,
  :func:`value_window`, :func:`window_choices`, ...;
* :mod:`~m3gym.tasks.render.degradations` — :func:`compress_dynamic_range`,
  :func:`add_sensor_noise`, :func:`mild_blur`, :func:`jpeg_artifacts`, :func:`faded_color`;
* :mod:`~m3gym.tasks.render.camera` — perspective placement (:func:`perspective_quad`,
  :func:`warp_patch`), :func:`uneven_lighting`, :func:`soft_shadow`, :func:`sheet_shadow`
  (both through :func:`shade_polygon`), :func:`lens_blur`, :func:`motion_blur` and
  :func:`camera_pipeline`;
* :mod:`~m3gym.tasks.render.measures` — :func:`to_gray` (from :mod:`m3gym.pixels`),
  :func:`ink_surround_contrast`, :func:`autocontrast_pil` / :func:`autocontrast_luts` (PIL's
  algorithm), :func:`region_evidence`, :func:`freeze`.
"""

from __future__ import annotations

from m3gym.tasks.render.backgrounds import (
    BACKGROUND_DETAIL,
    BACKGROUND_KINDS,
    background,
    lighting_field,
    vignette_field,
)
from m3gym.tasks.render.camera import (
    MAX_ROLL_DEG,
    MAX_TILT_DEG,
    camera_pipeline,
    homography,
    lens_blur,
    motion_blur,
    patch_corners,
    perspective_quad,
    quad_box,
    shade_polygon,
    sheet_shadow,
    soft_shadow,
    uneven_lighting,
    warp_alpha,
    warp_patch,
)
from m3gym.tasks.render.clutter import (
    CLUTTER_KINDS,
    DISTRACTOR_WORDS,
    add_clutter,
    add_distractor_labels,
    fake_photo,
)
from m3gym.tasks.render.codes import (
    CODE_DIGITS,
    CODE_LETTERS,
    CODE_PATTERNS,
    CONFUSABLE_CYCLES,
    code_choices,
    code_variants,
    confusable_edits,
    confusable_neighbours,
    near_miss_codes,
    pivot_choices,
    random_code,
    single_edits,
    value_window,
    window_choices,
)
from m3gym.tasks.render.content import (
    FAKER_LOCALES,
    ascii_fold,
    fake,
    fake_address,
    fake_company,
    fake_date,
    fake_id,
    fake_person,
    fake_product,
)
from m3gym.tasks.render.degradations import (
    NOISE_TILE_SHAPE,
    add_sensor_noise,
    compress_dynamic_range,
    faded_color,
    jpeg_artifacts,
    mild_blur,
)
from m3gym.tasks.render.fonts import (
    FONT_FACES,
    draw_truetype,
    font_covers,
    pick_font,
    truetype_lines,
    truetype_text,
)
from m3gym.tasks.render.geometry import (
    VIEW_SIZE,
    bbox1000_to_box,
    box_to_bbox1000,
    boxes_overlap,
    crop_zoom_for,
    embed_mask,
    find_free_spot,
    grow_box,
    position_phrase,
    view_scale,
)
from m3gym.tasks.render.measures import (
    autocontrast_luts,
    autocontrast_pil,
    freeze,
    ink_surround_contrast,
    region_evidence,
    to_gray,
)
from m3gym.tasks.render.photo_scene import surface
from m3gym.tasks.render.text import (
    ALL_FACES,
    READABLE_FACES,
    PlacedText,
    TextPatch,
    cap_height_at_unit_scale,
    draw_text,
    paste_text,
    random_font,
    render_text,
)
from m3gym.tasks.render.util import (
    NAMED_COLORS,
    Box,
    Color,
    ink_for,
    jitter_color,
    luminance,
    pick,
    rand_color,
    shuffled,
    solid_image,
    warp_perspective,
)

__all__ = [
    "FAKER_LOCALES", "FONT_FACES", "MAX_ROLL_DEG", "MAX_TILT_DEG", "ascii_fold", "camera_pipeline",
    "draw_truetype", "fake", "fake_address", "fake_company", "fake_date", "fake_id", "fake_person",
    "fake_product", "font_covers", "homography", "lens_blur", "motion_blur", "patch_corners",
    "perspective_quad", "pick_font", "quad_box", "shade_polygon", "sheet_shadow", "soft_shadow",
    "surface", "truetype_lines", "truetype_text", "uneven_lighting", "warp_alpha", "warp_patch",
    "warp_perspective",
    "ALL_FACES", "BACKGROUND_DETAIL", "BACKGROUND_KINDS", "CLUTTER_KINDS", "CODE_DIGITS",
    "CODE_LETTERS", "CODE_PATTERNS", "CONFUSABLE_CYCLES", "DISTRACTOR_WORDS", "NAMED_COLORS",
    "NOISE_TILE_SHAPE", "READABLE_FACES", "VIEW_SIZE", "Box", "Color", "PlacedText", "TextPatch",
    "add_clutter", "add_distractor_labels", "add_sensor_noise", "autocontrast_luts",
    "autocontrast_pil", "background", "bbox1000_to_box", "box_to_bbox1000", "boxes_overlap",
    "cap_height_at_unit_scale", "code_choices", "code_variants", "compress_dynamic_range",
    "confusable_edits", "confusable_neighbours", "crop_zoom_for", "draw_text", "embed_mask",
    "faded_color", "fake_photo", "find_free_spot", "freeze", "grow_box", "ink_for",
    "ink_surround_contrast",
    "jitter_color", "jpeg_artifacts", "lighting_field", "luminance", "mild_blur", "near_miss_codes",
    "paste_text", "pick", "pivot_choices", "position_phrase", "rand_color", "random_code",
    "random_font", "region_evidence", "render_text", "shuffled", "single_edits", "solid_image",
    "to_gray", "value_window", "view_scale", "vignette_field", "window_choices",
]
