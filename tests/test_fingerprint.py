"""Cache keys that cannot go stale: every module a builder imports and every pixel library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from m3gym import fingerprint
from m3gym.fingerprint import (
    artefact_key,
    code_fingerprint,
    import_closure,
    library_versions,
    pixel_library_versions,
)
from m3gym.web import store


def test_closure_follows_imports_out_of_the_builders_folder():
    closure = import_closure(["m3gym.web.world"])
    # the logos are drawn with a helper outside m3gym/web (the stale key the old folder hash had)
    assert "m3gym.pixels" in closure
    assert {"m3gym.web.world", "m3gym.web.logos", "m3gym.web.store"} <= set(closure)
    assert all(name.startswith("m3gym") for name in closure)
    assert list(closure) == sorted(closure)


def test_closure_sees_imports_inside_functions():
    # measures.py imports nothing lazily, but the env imports its task registry lazily in places;
    # a module whose only use of another is in a function still counts
    src = Path(fingerprint.__file__).read_text()
    assert "import cv2" in src  # fingerprint imports cv2 only inside functions
    assert import_closure(["m3gym.fingerprint"]) == ("m3gym.fingerprint",)
    closure = import_closure(["m3gym.eval.runner"])
    assert "m3gym.eval.summary" in closure  # imported inside run_eval only


def test_closure_ignores_unknown_and_third_party_names():
    assert import_closure(["numpy", "m3gym.no_such_module"]) == ()


def _patched_source(monkeypatch, tmp_path, module: str, extra: bytes) -> None:
    real = fingerprint._module_path

    def fake(name: str):
        path = real(name)
        if name == module and path is not None:
            copy = tmp_path / path.name
            copy.write_bytes(path.read_bytes() + extra)
            return copy
        return path

    monkeypatch.setattr(fingerprint, "_module_path", fake)


def test_a_change_to_any_module_in_the_closure_gives_a_new_key(monkeypatch, tmp_path):
    before = code_fingerprint(["m3gym.web.world"])
    _patched_source(monkeypatch, tmp_path, "m3gym.pixels", b"\n# changed\n")
    assert code_fingerprint(["m3gym.web.world"]) != before
    # a module outside the closure does not move it
    monkeypatch.undo()
    _patched_source(monkeypatch, tmp_path, "m3gym.cli", b"\n# changed\n")
    assert code_fingerprint(["m3gym.web.world"]) == before


def test_the_world_store_key_follows_the_code_it_is_drawn_with(monkeypatch, tmp_path):
    store.code_hash.cache_clear()
    before = store.entry_name("0-train", [1, 2], "m3gym.web.world")
    _patched_source(monkeypatch, tmp_path, "m3gym.pixels", b"\n# changed\n")
    store.code_hash.cache_clear()
    try:
        assert store.entry_name("0-train", [1, 2], "m3gym.web.world") != before
    finally:
        monkeypatch.undo()
        store.code_hash.cache_clear()
    assert store.entry_name("0-train", [1, 2], "m3gym.web.world") == before


def test_versions_name_every_pixel_library():
    versions = pixel_library_versions()
    for name in ("numpy", "opencv", "opencv_jpeg", "pillow", "freetype", "raqm", "libjpeg",
                 "zlib", "faker", "fonttools"):
        assert name in versions
    for name in ("numpy", "opencv", "pillow", "freetype"):
        assert versions[name]
    run = library_versions()
    assert run["python"] and run["gymnasium"] and run["m3gym"]
    assert run["pillow"] == versions["pillow"]


@pytest.mark.parametrize("library", sorted(pixel_library_versions()))
def test_a_new_build_of_any_pixel_library_gives_a_new_key(monkeypatch, library):
    before = artefact_key(["m3gym.web.world"])
    changed = {**pixel_library_versions(), library: "9.9.9-other-build"}
    monkeypatch.setattr(fingerprint, "pixel_library_versions", lambda: changed)
    assert artefact_key(["m3gym.web.world"]) != before


def test_pixel_probe_digests_every_call_and_diffs_two_installs(tmp_path, capsys):
    from scripts import pixel_probe

    here = pixel_probe.probe()
    assert here == pixel_probe.probe()  # deterministic on one install
    assert {"warpAffine_LINEAR", "putText_AA", "gauss_f32", "jpeg_encode"} <= set(here)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(here))
    b.write_text(json.dumps({**here, "remap": "0" * 10}))
    assert pixel_probe.main(["--diff", str(a), str(b)]) == 0
    assert capsys.readouterr().out.split() == ["remap"]
