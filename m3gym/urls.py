"""URL normalization shared by the offline world (page lookup) and scoring (url comparison)."""

from __future__ import annotations

from typing import Any


def normalize_url(url: Any) -> str:
    """Return the comparison form of a url.

    Trimmed, case-folded, without ``http://`` / ``https://``, a leading ``www.`` or a trailing
    slash, so that two spellings of the same page compare equal and any other page does not.
    """
    u = str(url).strip().casefold()
    for prefix in ("https://", "http://"):
        if u.startswith(prefix):
            u = u[len(prefix):]
            break
    if u.startswith("www."):
        u = u[4:]
    return u.rstrip("/")
