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

from m3gym.tools.catalogue import code_attribute_ops, code_call_ops

CALL_OPS: dict[str, str] = code_call_ops()
"""Called names (functions or methods) and the atomic operation they amount to: each tool's own
name and its ``code_names`` facet (the built-in catalogue at import; :func:`static_ops` reads
:func:`~m3gym.tools.catalogue.code_call_ops` live, so registered tools count too)."""

ATTRIBUTE_OPS: dict[str, str] = code_attribute_ops()
"""Names used without a call (filter constants) and their operation (``code_attributes``)."""


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
    calls, attributes = code_call_ops(), code_attribute_ops()
    for node in ast.walk(tree):
        op = None
        if isinstance(node, ast.Call):
            op = calls.get(_called_name(node) or "")
        elif isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None),
                                                                ast.Store):
            op = attributes.get(node.attr)
        elif isinstance(node, ast.Subscript) and _is_spatial_slice(node):
            op = "crop"
        if op is not None:
            found.append((node.lineno, node.col_offset, op))
    out: list[str] = []
    for _, _, op in sorted(found):
        if op not in out:
            out.append(op)
    return out
