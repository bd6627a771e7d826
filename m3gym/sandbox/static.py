"""The AST pass: which atomic operations a cell's code names, for what run time cannot see.

Run-time tracing (:mod:`m3gym.sandbox.traced`) follows values; it loses them when the code
leaves the traced types (``np.array(pil_image)`` copies, arithmetic that changes the shape, a
helper that rebuilds an array). :func:`static_ops` reads the cell's syntax tree instead and lists,
in order of first appearance, the atomic operations its calls and slices amount to
(``img.crop(...)``, ``cv2.GaussianBlur(...)``, ``arr[y0:y1, x0:x1]``, ...). The list labels the
``code`` ops the cell records (``arguments["static_ops"]``); it is a description, never a claim
that scoring trusts: only verified run-time traces become canonical calls.
"""

from __future__ import annotations

import ast

CALL_OPS: dict[str, str] = {
    "crop": "crop", "resize": "resize", "thumbnail": "resize", "rotate": "rotate",
    "rot90": "rotate", "warpAffine": "rotate", "flip": "flip", "fliplr": "flip",
    "flipud": "flip", "mirror": "flip", "transpose": "flip", "grayscale": "grayscale",
    "cvtColor": "grayscale", "convert": "grayscale", "autocontrast": "autocontrast",
    "normalize": "autocontrast", "invert": "invert", "bitwise_not": "invert",
    "equalize": "equalize", "equalizeHist": "equalize", "createCLAHE": "equalize",
    "threshold": "threshold", "adaptiveThreshold": "threshold", "GaussianBlur": "blur",
    "blur": "blur", "medianBlur": "denoise", "bilateralFilter": "denoise",
    "fastNlMeansDenoising": "denoise", "fastNlMeansDenoisingColored": "denoise",
    "sharpen": "sharpen", "UnsharpMask": "sharpen", "filter2D": "sharpen", "Canny": "edge_detect",
    "Sobel": "edge_detect", "Laplacian": "edge_detect", "edge_detect": "edge_detect",
    "denoise": "denoise", "enhance": "enhance", "Contrast": "enhance", "Brightness": "enhance",
    "web_search": "web_search", "image_search": "image_search",
    "fetch_webpage": "fetch_webpage", "download_image": "download_image",
}
"""Called names (functions or methods) and the atomic operation they amount to."""

ATTRIBUTE_OPS: dict[str, str] = {"SHARPEN": "sharpen", "FIND_EDGES": "edge_detect",
                                 "GaussianBlur": "blur", "EDGE_ENHANCE": "sharpen"}
"""Names used without a call (filter constants) and their operation."""


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_spatial_slice(node: ast.Subscript) -> bool:
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return bool(parts) and all(isinstance(p, ast.Slice) for p in parts[:2]) and \
        any(p.lower is not None or p.upper is not None for p in parts[:2]
            if isinstance(p, ast.Slice))


def static_ops(code: str) -> list[str]:
    """Return the atomic operations ``code`` names, in order of first appearance.

    Code that does not parse gives ``[]``.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        op = None
        if isinstance(node, ast.Call):
            op = CALL_OPS.get(_called_name(node) or "")
        elif isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None),
                                                                ast.Store):
            op = ATTRIBUTE_OPS.get(node.attr)
        elif isinstance(node, ast.Subscript) and _is_spatial_slice(node):
            op = "crop"
        if op is not None:
            found.append((node.lineno, node.col_offset, op))
    out: list[str] = []
    for _, _, op in sorted(found):
        if op not in out:
            out.append(op)
    return out
