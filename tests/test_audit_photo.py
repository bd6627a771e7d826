"""Leak probes, reward audit and the photo-scene benchmark on photographic scene variants.

The probes and the audit take an optional scene config (``{"scenes": "photo"}``) that reaches
every ``make_task`` / ``gym.make`` they call; without it they build the default (flat) tasks.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import m3gym.audit.leaks as leaks
from m3gym.audit.leaks import (
    ProbeResult,
    choice_records,
    choices_only_probe,
    iter_tasks_with_choices,
    view_only_probe,
)
from m3gym.cli import build_parser, main
from m3gym.tasks.registry import family_names, get_family

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_photo_scenes.py"
FAMILY = "tiny_text"  # photo scenes on every draw, choices, answer drawn in the image
PHOTO = {"scenes": "photo"}


def scene_kind(task) -> str:
    """Return the photo scene's kind recorded in ``task.metadata["photo_scene"]`` ("-" if none)."""
    scene = task.metadata.get("photo_scene")
    return scene.get("kind", "-") if isinstance(scene, dict) else "-"


@pytest.fixture
def scene_kinds(monkeypatch):
    """Record the scene kind of every task the probes build (through leaks.make_task)."""
    kinds: list[str] = []
    real = leaks.make_task

    def spy(family, seed, config=None, *args, **kwargs):
        task = real(family, seed, config, *args, **kwargs)
        kinds.append(scene_kind(task))
        return task

    monkeypatch.setattr(leaks, "make_task", spy)
    return kinds


def test_the_probed_family_has_photo_scenes():
    assert get_family(FAMILY).photo_scenes


def test_iter_tasks_with_choices_builds_photo_tasks_with_a_config():
    photo = list(iter_tasks_with_choices(FAMILY, range(2), PHOTO))
    flat = list(iter_tasks_with_choices(FAMILY, range(2)))
    assert [scene_kind(t) for t in photo] == ["photo", "photo"]
    assert all(scene_kind(t) != "photo" for t in flat)
    assert [t.task_id for t in photo] == [t.task_id for t in flat]
    assert not (photo[0].images[0].shape == flat[0].images[0].shape
                and (photo[0].images[0] == flat[0].images[0]).all())


def test_choice_records_pass_the_config(scene_kinds):
    records = choice_records(FAMILY, range(2), PHOTO)
    assert len(records) == 2 and scene_kinds == ["photo", "photo"]


def test_choices_only_probe_on_photo_tasks(scene_kinds):
    r = choices_only_probe(FAMILY, held_out=2, train_tasks=4, config=PHOTO)
    assert isinstance(r, ProbeResult) and r.probe == "choices-only"
    assert r.n == 2 and 0.0 < r.chance < 1.0
    assert scene_kinds == ["photo"] * 6  # 4 training tasks and 2 held-out


def test_view_only_probe_on_photo_tasks(scene_kinds):
    r = view_only_probe(FAMILY, held_out=2, config=PHOTO)
    assert isinstance(r, ProbeResult) and r.probe == "view-only"
    assert r.n == 2 and r.unexplained is not None
    assert scene_kinds and set(scene_kinds) == {"photo"}


def test_probes_without_a_config_build_the_default_tasks(scene_kinds):
    choices_only_probe(FAMILY, held_out=1, train_tasks=2)
    assert scene_kinds and "photo" not in scene_kinds


def test_audit_leaks_parses_the_scene_flags(tmp_path):
    args = build_parser().parse_args(["audit-leaks", "--scenes", "photo"])
    assert args.scenes == "photo" and args.backgrounds is None
    args = build_parser().parse_args(["audit-leaks", "--backgrounds", str(tmp_path)])
    assert args.backgrounds == str(tmp_path) and args.scenes is None
    args = build_parser().parse_args(["audit-leaks"])
    assert args.scenes is None and args.backgrounds is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit-leaks", "--scenes", "glossy"])


def test_audit_reward_parses_the_scene_flags(tmp_path):
    args = build_parser().parse_args(["audit-reward", "--scenes", "photo",
                                      "--backgrounds", str(tmp_path)])
    assert args.scenes == "photo" and args.backgrounds == str(tmp_path)
    args = build_parser().parse_args(["audit-reward"])
    assert args.scenes is None and args.backgrounds is None


@pytest.fixture
def fake_probes(monkeypatch):
    """Replace the probes the CLI calls by stubs that record (family, config)."""
    import m3gym.audit.leaks_cli as cli

    calls: list[tuple[str, str, object]] = []

    def fake(probe):
        def run(family, *args):
            calls.append((family, probe, args[-1]))  # (tasks, [train_tasks,] config)
            return ProbeResult(family, probe, 10, 1, 0.25, 0.03)
        return run

    monkeypatch.setattr(cli, "choices_only_probe", fake("choices-only"))
    monkeypatch.setattr(cli, "view_only_probe", fake("view-only"))
    return calls


def test_audit_leaks_photo_probes_only_photo_families_by_default(capsys, fake_probes):
    assert main(["audit-leaks", "--scenes", "photo", "--tasks", "10"]) == 0
    out = capsys.readouterr().out
    photo = [f for f in family_names(suite=None) if get_family(f).photo_scenes]
    assert out.startswith("Scenes: photo (the bundled photographs); probing only the families "
                          "with photo scenes")
    assert f"{len(photo)} families" in out
    assert sorted({f for f, _, _ in fake_probes}) == sorted(photo)
    assert all(config == PHOTO for _, _, config in fake_probes)
    assert len(photo) < len(family_names(suite=None))


def test_audit_leaks_default_output_has_no_scene_header(capsys, fake_probes):
    assert main(["audit-leaks", "--family", FAMILY]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| family | probe |") and "Scenes" not in out
    assert [c for _, _, c in fake_probes] == [None, None]


def test_audit_leaks_photo_with_named_families(capsys, fake_probes):
    assert main(["audit-leaks", "--scenes", "photo", "--family", FAMILY,
                 "--probe", "view-only"]) == 0
    assert "the families asked for: 1 family" in capsys.readouterr().out
    assert fake_probes == [(FAMILY, "view-only", PHOTO)]


def test_audit_leaks_rejects_a_bad_backgrounds_folder(tmp_path, capsys, fake_probes):
    assert main(["audit-leaks", "--backgrounds", str(tmp_path / "missing")]) == 2
    assert "m3gym: error:" in capsys.readouterr().err
    assert fake_probes == []


def test_reward_audit_passes_scenes_to_every_gym_make(monkeypatch):
    import gymnasium as gym

    from m3gym.audit.reward_audit import audit_env, episode_tasks, scene_kwargs

    assert scene_kwargs() == {}
    assert scene_kwargs("photo", None) == {"scenes": "photo"}
    made: list[dict] = []
    real = gym.make

    def spy(env_id, **kwargs):
        made.append(kwargs)
        return real(env_id, **kwargs)

    monkeypatch.setattr(gym, "make", spy)
    tasks = episode_tasks("M3Bench-L1", 1, 0, scenes="photo")
    audit_env("M3Bench-L1", "sparse", 1, policies=["answer_now"], tasks=tasks, scenes="photo")
    assert len(made) == 2 and all(k.get("scenes") == "photo" for k in made)
    made.clear()
    episode_tasks("M3Bench-L1", 1, 0)
    assert made == [{}]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_photo_scenes", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_photo_scenes_help():
    out = subprocess.run([sys.executable, str(BENCH), "--help"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert "--seeds" in out and "--json" in out and "--family" in out


def test_bench_photo_scenes_rejects_a_flat_only_family():
    flat = next(f for f in family_names(suite=None) if not get_family(f).photo_scenes)
    with pytest.raises(SystemExit):
        _bench().main(["--family", flat, "--seeds", "1"])


@pytest.mark.slow
def test_bench_photo_scenes_one_seed_one_family(tmp_path, capsys):
    import json

    out = tmp_path / "bench.json"
    assert _bench().main(["--family", FAMILY, "--seeds", "1", "--repeats", "1",
                          "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"| {FAMILY} | 1 |" in printed and "OCR auto -> " in printed
    data = json.loads(out.read_text())
    row = data["families"][0]
    assert row["family"] == FAMILY and row["seeds"] == 1
    assert 0.0 <= row["acc_flat"] <= 1.0 and 0.0 <= row["acc_photo"] <= 1.0
    assert row["reset_ms_flat"] > 0 and row["reset_ms_photo"] > 0
    assert data["ocr"] in ("tesseract", "glyph")
