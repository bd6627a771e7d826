"""Versions: the package's, and the frozen test manifest's (which every env id carries).

This module sits below every layer, so the env ids (:mod:`m3gym.registration`), the wrappers and
the frozen splits (:mod:`m3gym.eval.splits`) read the same numbers without importing each other.
Changing a frozen task means a new entry in :data:`MANIFEST_DIGESTS` (``m3gym split-manifest
--write`` prints the digest) and a CHANGELOG entry.
"""

from __future__ import annotations

__version__ = "0.1.0"
"""The package version (also in pyproject.toml)."""

MANIFEST_DIGESTS: dict[int, str] = {
    2: "73f324961f2928b8c842a7359eaacd8a56a3cc98b0fcae6b3c2e14c99f4f9e04",
    3: "2058e709549b4b351c02165ecbb2ddd7979a96407993d1aa818be633a8adf1cb",
    4: "aeef8767661ef3c15881fc8a45becea67cddad53b4f9d1ec8b24d20c5d33594e",
}
""":func:`manifest_digest` of each released version of the ``test`` manifest's task list.

Version 1 was regenerated eleven times without a bump (its tasks also depended on the installed
OpenCV and Pillow); version 2 is the first whose number is tied to its tasks. Version 3 has the
same images and specs; its hashes round the specs' floats (:func:`~m3gym.spec.
rounded_floats`), which differed in the last bit between BLAS kernels (AVX-512 or not). Version 4
is benchmark v4: every family's tool adds evidence the view lacks (CHANGELOG)."""

MANIFEST_VERSION: int = max(MANIFEST_DIGESTS)
"""Version of the committed ``test`` manifest (a new one whenever a frozen task changes)."""

PHOTO_MANIFEST_DIGESTS: dict[int, str] = {
    1: "62727905de7427a9eb63710d62054d7b6c34cd242bb821ff445b6e395c1dd66c",
    2: "14ef5a4312e1c50ef4508933cab940a350de0cb0283b21e60bbbfd21bde5edbc",
}
""":func:`~m3gym.eval.splits.manifest_digest` of each version of the ``test-photo`` manifest (the
procedural scenes drawn into the bundled photographs). Its tasks change with the flat families'
generators *and* with the photo compositing, so it is versioned on its own: a new entry (and a
CHANGELOG line) whenever its tasks change. Version 2 is benchmark v4 (faint_text has no photo scenes
any more, so the split's L1 deals over tiny_text and rotated_text)."""

PHOTO_MANIFEST_VERSION: int = max(PHOTO_MANIFEST_DIGESTS)
"""Version of the committed ``test-photo`` manifest."""
