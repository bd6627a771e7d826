import json
import os
from collections import Counter

import pytest

from m3gym.eval.splits import (
    TASKS_PER_LEVEL,
    check_manifest,
    dump_manifest,
    generate_split_entries,
    load_manifest,
    manifest_digest,
    manifest_path,
    sample_entries,
    split_config,
    split_entries,
)
from m3gym.tasks.registry import TRAIN_SEED_LIMIT, family_names, make_task
from m3gym.versions import (
    MANIFEST_DIGESTS,
    MANIFEST_VERSION,
    PHOTO_MANIFEST_DIGESTS,
    PHOTO_MANIFEST_VERSION,
)


@pytest.fixture(scope="module")
def manifest():
    data = load_manifest("test")
    assert data is not None, "run `m3gym split-manifest --write`"
    return data


def test_manifest_shape(manifest):
    assert manifest["split"] == "test" and manifest["tasks_per_level"] == TASKS_PER_LEVEL
    ids = set()
    for level in ("1", "2", "3"):
        entries = manifest["levels"][level]
        assert len(entries) == TASKS_PER_LEVEL
        for e in entries:
            assert e["task_seed"] >= TRAIN_SEED_LIMIT  # disjoint from training seeds
            assert e["task_id"] == f"{e['family']}/{e['task_seed']}"
            assert e["family"] in family_names(int(level))
            assert len(e["hash"]) == 64
            ids.add(e["task_id"])
        counts = Counter(e["family"] for e in entries)
        assert max(counts.values()) - min(counts.values()) <= 1  # spread over the families
    assert len(ids) == 3 * TASKS_PER_LEVEL


def test_manifest_file_is_stable_text(manifest):
    assert manifest_path("test").read_text() == dump_manifest(manifest)
    assert json.loads(dump_manifest(manifest)) == manifest


def test_split_entries_come_from_manifest(manifest):
    entries = split_entries("test", 2)
    assert [(e.family, e.task_seed) for e in entries] == \
        [(e["family"], e["task_seed"]) for e in manifest["levels"]["2"]]
    rule = generate_split_entries("test", 2, 5)
    assert [e.task_seed for e in rule] == [1_020_000_000 + i for i in range(5)]
    with pytest.raises(ValueError, match="unknown split"):
        split_entries("nope", 1)


def test_sample_entries_takes_first_per_family():
    entries = generate_split_entries("test", 1, 12)
    sample = sample_entries(entries, 2)
    assert Counter(e.family for e in sample) == {f: 2 for f in family_names(1)}
    assert sample_entries(entries, None) == entries


def test_sampled_hashes_match(manifest):
    per_family = None if os.environ.get("M3GYM_FULL_SPLIT_CHECK") else 3
    bad = check_manifest("test", per_family=per_family)
    if bad:
        pytest.fail(f"{len(bad)} frozen test tasks changed (first: {bad[0].task_id}); "
                    "regenerate with `m3gym split-manifest --write`")


def test_hash_detects_change(tmp_path, manifest):
    e = manifest["levels"]["1"][0]
    assert make_task(e["family"], e["task_seed"]).content_hash() == e["hash"]
    broken = json.loads(json.dumps(manifest))
    broken["levels"] = {"1": [dict(e, hash="0" * 64)]}
    path = tmp_path / "m.json"
    path.write_text(dump_manifest(broken))
    bad = check_manifest("test", per_family=None, path=path)
    assert [m.task_id for m in bad] == [e["task_id"]]


SPLIT_VERSIONS = [("test", MANIFEST_DIGESTS, MANIFEST_VERSION, "MANIFEST_DIGESTS"),
                  ("test-photo", PHOTO_MANIFEST_DIGESTS, PHOTO_MANIFEST_VERSION,
                   "PHOTO_MANIFEST_DIGESTS")]
"""Each committed split, its released digests, its version and the name of the digest table."""


@pytest.mark.parametrize("split, digests, version, table", SPLIT_VERSIONS)
def test_manifest_tasks_change_only_with_a_version_bump(split, digests, version, table):
    """The committed tasks are exactly those of their version: a changed task needs a new one."""
    data = load_manifest(split)
    assert data is not None, f"the {split} manifest is not in the package"
    assert data.get("config", {}) == split_config(split)
    assert data["version"] == version == max(digests)
    assert manifest_digest(data) == digests[version], (
        f"the frozen {split} tasks changed without a version bump: add version {version + 1} to "
        f"{table} (m3gym/versions.py) with the new digest {manifest_digest(data)}, and a "
        "CHANGELOG.md entry")


def test_photo_split_holds_only_photo_families_in_held_out_seeds():
    from m3gym.tasks.registry import TRAIN_SEED_LIMIT, get_family

    photo = load_manifest("test-photo")
    flat = load_manifest("test")
    flat_ids = {e["task_id"] for v in flat["levels"].values() for e in v}
    for level, entries in photo["levels"].items():
        fams = {e["family"] for e in entries}
        assert fams == {f for f in family_names(int(level)) if get_family(f).photo_scenes}
        assert all(e["task_seed"] >= TRAIN_SEED_LIMIT for e in entries)
        assert not flat_ids & {e["task_id"] for e in entries}  # other seeds than the flat split


def test_photo_manifest_tasks_are_photographic_and_rebuild():
    """A sample of the photo split rebuilds to its hashes with the split's config (photos in it)."""
    photo = load_manifest("test-photo")
    assert check_manifest("test-photo", per_family=1) == []
    entry = photo["levels"]["1"][0]
    task = make_task(entry["family"], entry["task_seed"], split_config("test-photo"))
    assert task.metadata["photo_scene"]["kind"] == "photo"
    assert make_task(entry["family"], entry["task_seed"]).content_hash() != entry["hash"]


def test_digest_moves_with_any_task_hash_and_only_with_tasks(manifest):
    changed = json.loads(json.dumps(manifest))
    changed["levels"]["3"][7]["hash"] = "f" * 64
    assert manifest_digest(changed) != manifest_digest(manifest)
    relabelled = dict(json.loads(json.dumps(manifest)), built_with={"opencv": "x"})
    assert manifest_digest(relabelled) == manifest_digest(manifest)


@pytest.mark.parametrize("split, digests, version, table", SPLIT_VERSIONS)
def test_every_manifest_version_has_a_changelog_entry(split, digests, version, table):
    changelog = (manifest_path("test").parents[3] / "CHANGELOG.md")
    if not changelog.is_file():
        pytest.skip("CHANGELOG.md is not beside an installed (non-editable) package")
    text = changelog.read_text()
    for v in digests:
        assert f"{split} manifest version {v}" in text


def test_manifest_records_the_library_builds_it_was_written_with(manifest):
    built = manifest["built_with"]
    for key in ("numpy", "opencv", "pillow", "freetype"):
        assert built[key]


BLAS_TASK = ("code_lookup", 1030000000)
"""A frozen task whose spec once hashed differently under an AVX-512 and an AVX2 BLAS kernel."""


def _task_hash_under(coretype: str | None) -> str:
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    code = ("from m3gym.tasks.registry import make_task\n"
            f"print(make_task({BLAS_TASK[0]!r}, {BLAS_TASK[1]}, {{}}).content_hash())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True)
    return out.stdout.strip().splitlines()[-1]


def _has_avx2() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return False
    return bool(__cpu_features__.get("AVX2")) and bool(__cpu_features__.get("FMA3"))


@pytest.mark.skipif(not _has_avx2(), reason="needs an x86-64 CPU with AVX2 to force BLAS kernels")
def test_task_hashes_do_not_depend_on_the_blas_kernel(manifest):
    """The frozen task hashes the same with the machine's own OpenBLAS kernel, the AVX2 (Haswell)
    one and the generic SSE3 (Prescott) one, and matches the manifest."""
    family, seed = BLAS_TASK
    expected = next(e["hash"] for e in manifest["levels"]["3"]
                    if e["task_id"] == f"{family}/{seed}")
    assert {_task_hash_under(c) for c in (None, "Haswell", "Prescott")} == {expected}


def test_spec_floats_are_hashed_rounded():
    """Two specs that differ only in a float's last bit hash alike; a real change does not."""
    from m3gym.spec import rounded_floats

    a, b = 8.86347037415058, 8.863470374150578
    assert rounded_floats({"g": [a, (1, a)]}) == rounded_floats({"g": [b, (1, b)]})
    assert rounded_floats({"g": a}) != rounded_floats({"g": a * (1 + 1e-8)})
    assert rounded_floats({"s": "x", "n": 3, "inf": float("inf")}) == \
        {"s": "x", "n": 3, "inf": float("inf")}
