"""Trust boundaries of records, Agentic-MME folders and background photos (issue 40).

The hostile probes, kept as tests: image paths that leave their folder (absolute, ``..``, a
symlinked file, a symlinked folder) are refused with a named error unless ``allow_outside=True``
(``--allow-outside``); ``records check`` decodes every image, so a truncated or header-only file
is named there; a decompression bomb (huge dimensions in a tiny file) is refused from its header
before anything is decoded; one deeply nested Agentic-MME task is skipped, the others written.
No message quotes a file's content.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import pytest

import m3gym.records.task as records_task
from m3gym.records import RecordsError, check_records, load_records
from m3gym.records.amme import AmmeError, import_amme
from m3gym.records.family import cached_records
from m3gym.records.guard import (
    DEFAULT_IMAGE_PIXELS,
    OutsideFolderError,
    PixelBudget,
    PixelBudgetError,
    header_size,
)
from m3gym.records.load import records_fingerprint
from m3gym.records_env import RECORDS_ENV_ID
from m3gym.tasks.render.photos import PhotoSourceError, photo_folder, photo_source
from tests.records.helpers import base_record, write_jsonl
from tests.records.test_amme import TASK_1, _image
from tests.records.test_amme import dataset as dataset  # noqa: F401 (fixture)

SECRET = "TOPSECRET-7f3a"
"""Text inside the files outside the folder: no message may quote it."""

needs_symlinks = pytest.mark.skipif(not hasattr(Path, "symlink_to"), reason="no symlinks")


def _cli(argv: list[str]) -> int:
    from m3gym.cli import main

    return main(["records", *argv])


def png_header(width: int, height: int, idat: bool = False) -> bytes:
    """Return a PNG whose IHDR claims ``width x height`` (RGB) with no (or empty) pixel data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = chunk(b"IDAT", zlib.compress(b"")) if idat else b""
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + body + chunk(b"IEND", b"")


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A records folder ``recs/`` with one good record, and a folder ``outside/`` beside it.

    ``outside/`` holds a real image (``secret.png``, a copy of the record's) and a text file
    disguised as an image (``text.png``, holding :data:`SECRET`).
    """
    recs, outside = tmp_path / "recs", tmp_path / "outside"
    recs.mkdir()
    outside.mkdir()
    rec = base_record(recs)
    shutil.copy(recs / "r1.png", outside / "secret.png")
    (outside / "text.png").write_text(SECRET)
    write_jsonl(recs / "records.jsonl", [rec])
    return {"recs": recs, "outside": outside, "jsonl": recs / "records.jsonl"}


def _escape(layout: dict[str, Path], how: str) -> str:
    """Make ``layout``'s record image leave the folder ``how``; return the path as written."""
    recs, outside = layout["recs"], layout["outside"]
    if how == "absolute":
        written = str(outside / "secret.png")
    elif how == "dotdot":
        written = "../outside/secret.png"
    elif how == "symlinked file":
        (recs / "link.png").symlink_to(outside / "secret.png")
        written = "link.png"
    else:  # a symlinked folder
        (recs / "photos").symlink_to(outside, target_is_directory=True)
        written = "photos/secret.png"
    rec = json.loads(layout["jsonl"].read_text())
    rec["images"] = [written]
    write_jsonl(layout["jsonl"], [rec])
    return written


ESCAPES = ["absolute", "dotdot", "symlinked file", "symlinked folder"]


# ------------------------------------------------------------------------------ path escapes


@needs_symlinks
@pytest.mark.parametrize("how", ESCAPES)
def test_records_refuse_an_image_outside_their_folder(layout: dict[str, Path], how: str) -> None:
    written = _escape(layout, how)
    with pytest.raises(RecordsError) as err:
        load_records(layout["jsonl"])
    (problem,) = err.value.problems
    assert problem.startswith(f"line 1 (id r1): image {written!r} leaves the folder "
                              f"{layout['recs'].resolve()}")
    assert "allow_outside=True" in problem
    assert SECRET not in str(err.value)


@needs_symlinks
@pytest.mark.parametrize("how", ESCAPES)
def test_allow_outside_lets_each_escape_through_with_a_warning(layout: dict[str, Path],
                                                               how: str) -> None:
    _escape(layout, how)
    with pytest.warns(UserWarning, match=r"allow_outside=True .*\(1 image path\(s\) do\)"):
        records = load_records(layout["jsonl"], allow_outside=True)
    assert records.allow_outside
    assert records_fingerprint(records)["allow_outside"] is True
    task = records.task("r1")
    assert task.images[0].shape[:2] == (1200, 1600)


def test_paths_inside_the_folder_pass_however_written(layout: dict[str, Path]) -> None:
    recs = layout["recs"]
    (recs / "sub").mkdir()
    shutil.copy(recs / "r1.png", recs / "sub" / "a.png")
    (recs / "inner.png").symlink_to(recs / "sub" / "a.png")
    rows = []
    for i, written in enumerate([str(recs / "r1.png"), "sub/../r1.png", "inner.png"]):
        rows.append({**base_record(recs, f"r{i}"), "images": [written]})
    write_jsonl(layout["jsonl"], rows)
    records = load_records(layout["jsonl"])
    assert [r.id for r in records] == ["r0", "r1", "r2"]
    assert "allow_outside" not in records_fingerprint(records)


def test_python_records_stay_inside_base_dir_or_the_working_directory(
        layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    rec = {**base_record(layout["recs"]), "images": [str(layout["outside"] / "secret.png")]}
    with pytest.raises(RecordsError, match="leaves the folder"):
        load_records([rec], base_dir=layout["recs"])
    monkeypatch.chdir(layout["recs"])
    with pytest.raises(RecordsError, match="leaves the folder"):
        load_records([rec])
    assert load_records([rec], base_dir=layout["outside"]).by_id("r1")


def test_a_file_swapped_for_a_link_after_loading_is_refused_at_build(
        layout: dict[str, Path]) -> None:
    records = load_records(layout["jsonl"])
    image = layout["recs"] / "r1.png"
    image.unlink()
    image.symlink_to(layout["outside"] / "text.png")
    with pytest.raises(OutsideFolderError, match="'r1.png' leaves the folder") as err:
        records.task("r1")
    assert SECRET not in str(err.value)


def test_the_env_takes_allow_outside_and_the_cache_never_leaks_the_opt_out(
        layout: dict[str, Path]) -> None:
    _escape(layout, "dotdot")
    with pytest.warns(UserWarning, match="allow_outside"):
        env = gym.make(RECORDS_ENV_ID, records=str(layout["jsonl"]), allow_outside=True,
                       disable_env_checker=True)
    env.reset(seed=0)
    assert env.unwrapped.records.allow_outside
    assert env.unwrapped.family_config["allow_outside"] is True
    env.close()
    with pytest.raises(RecordsError, match="leaves the folder"):  # loaded with it, not without
        gym.make(RECORDS_ENV_ID, records=str(layout["jsonl"]), disable_env_checker=True)
    with pytest.raises(RecordsError, match="leaves the folder"):
        cached_records(str(layout["jsonl"]))


def test_check_cli_refuses_an_escape_and_opts_out_with_the_flag(
        layout: dict[str, Path], capsys: Any) -> None:
    _escape(layout, "absolute")
    assert _cli(["check", str(layout["jsonl"])]) == 1
    out = capsys.readouterr().out
    assert "rejected line 1 (id r1): image " in out and "leaves the folder" in out
    assert _cli(["check", "--allow-outside", str(layout["jsonl"])]) == 0
    out = capsys.readouterr().out
    assert "1 accepted, 0 rejected" in out
    assert "warning records" in out and "allow_outside=True" in out


# ------------------------------------------------------------------- truncated and header-only


def _truncated(layout: dict[str, Path], kind: str) -> None:
    image = layout["recs"] / "r1.png"
    if kind == "truncated png":
        data = image.read_bytes()
        image.write_bytes(data[: len(data) // 2])
    elif kind == "truncated jpeg":
        ok, enc = cv2.imencode(".jpg", cv2.imread(str(image)))
        assert ok
        (layout["recs"] / "r1.jpg").write_bytes(enc.tobytes()[: enc.size // 2])
        rec = json.loads(layout["jsonl"].read_text())
        write_jsonl(layout["jsonl"], [{**rec, "images": ["r1.jpg"]}])
    else:  # a header only: the PNG claims the size but holds no pixel data
        image.write_bytes(png_header(1600, 1200))


@pytest.mark.parametrize("kind", ["truncated png", "truncated jpeg", "header only"])
def test_records_check_decodes_every_image(layout: dict[str, Path], kind: str,
                                           capsys: Any) -> None:
    _truncated(layout, kind)
    assert len(load_records(layout["jsonl"])) == 1  # headers only: the load does not see it
    result, _, _ = check_records(layout["jsonl"], decode=True)
    (problem,) = result.problems
    assert "its pixel data cannot be decoded" in problem
    assert _cli(["check", str(layout["jsonl"])]) == 1
    out = capsys.readouterr().out
    assert "0 accepted, 1 rejected" in out and "cannot be decoded" in out


def test_records_check_passes_good_images_and_the_demo(capsys: Any) -> None:
    from m3gym.records.family import DEMO_RECORDS

    assert _cli(["check", str(DEMO_RECORDS)]) == 0
    assert " 0 rejected" in capsys.readouterr().out


# ----------------------------------------------------------------------- decompression bombs


def _bomb(layout: dict[str, Path], width: int, height: int) -> None:
    (layout["recs"] / "r1.png").write_bytes(png_header(width, height, idat=True))


@pytest.mark.parametrize("size", [(10000, 10000), (60000, 60000)])
def test_a_bomb_is_refused_from_its_header_before_decoding(
        layout: dict[str, Path], size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """10000x10000 is over m3gym's budget, 60000x60000 over Pillow's bomb limit too."""
    def no_decode(*_: Any) -> Any:
        raise AssertionError("decoded")

    monkeypatch.setattr(records_task, "read_image", no_decode)
    monkeypatch.setattr(cv2, "imdecode", no_decode)
    _bomb(layout, *size)
    assert (layout["recs"] / "r1.png").stat().st_size < 100
    pixels = size[0] * size[1]
    with pytest.raises(RecordsError) as err:
        load_records(layout["jsonl"])
    (problem,) = err.value.problems
    assert f"asks {pixels} pixels" in problem
    assert f"budget of {DEFAULT_IMAGE_PIXELS if pixels < 10**9 else 178956970} pixels" in problem
    result, _, _ = check_records(layout["jsonl"], decode=True)
    assert f"asks {pixels} pixels" in result.problems[0]


def test_the_record_budget_counts_all_its_images(layout: dict[str, Path], capsys: Any) -> None:
    rec = json.loads(layout["jsonl"].read_text())
    write_jsonl(layout["jsonl"], [{**rec, "images": ["r1.png", "r1.png"]}])
    pixels = 1600 * 1200
    budget = PixelBudget(image=pixels, record=pixels + 1)
    with pytest.raises(RecordsError) as err:
        load_records(layout["jsonl"], budget=budget)
    assert (f"the record's images together asks {2 * pixels} pixels (from the image header), "
            f"over the budget of {pixels + 1} pixels (max_record_pixels)") in err.value.problems[0]
    assert _cli(["check", "--max-record-pixels", str(pixels + 1), str(layout["jsonl"])]) == 1
    assert "max_record_pixels" in capsys.readouterr().out
    assert _cli(["check", "--max-image-pixels", "0", str(layout["jsonl"])]) == 2


def test_the_budget_is_checked_again_before_a_task_decodes(
        layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    records = load_records(layout["jsonl"])
    _bomb(layout, 9000, 9000)
    monkeypatch.setattr(records_task, "read_image", lambda *_: pytest.fail("decoded"))
    with pytest.raises(PixelBudgetError) as err:
        records.task("r1")
    assert (err.value.pixels, err.value.budget) == (81_000_000, DEFAULT_IMAGE_PIXELS)


def test_the_env_takes_a_pixel_budget(layout: dict[str, Path]) -> None:
    with pytest.raises(RecordsError, match="over the budget of 1000 pixels"):
        gym.make(RECORDS_ENV_ID, records=str(layout["jsonl"]), max_image_pixels=1000,
                 disable_env_checker=True)


def test_a_pixel_budget_must_be_positive() -> None:
    assert PixelBudget().image == DEFAULT_IMAGE_PIXELS
    with pytest.raises(ValueError, match="positive integer"):
        PixelBudget(image=0)


def test_header_size_of_a_text_file_names_the_error_not_the_content(
        layout: dict[str, Path]) -> None:
    with pytest.raises(ValueError) as err:
        header_size(layout["outside"] / "text.png")
    assert "UnidentifiedImageError" in str(err.value) and SECRET not in str(err.value)


# ------------------------------------------------------------------------------ Agentic-MME


def _deep(depth: int) -> str:
    return json.dumps({**TASK_1, "meta": {"level": 1}})[:-1] + ', "extra": ' + \
        "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [100_000, 700])
def test_import_skips_a_deeply_nested_task_and_writes_the_rest(dataset: Path,  # noqa: F811
                                                               depth: int, capsys: Any) -> None:
    (dataset / "json" / "0006.json").write_text(_deep(depth))
    cv2.imwrite(str(dataset / "image" / "image_0006.png"), _image(300, 400, 90))
    out = dataset / "r.jsonl"
    result = import_amme(dataset, out)
    assert [r["id"] for r in result.records] == ["0001", "0002", "0003", "0004"]
    assert [name for name, _ in result.skipped] == ["0005.json", "0006.json"]
    assert "nested too deeply" in result.skipped[1][1]
    assert len(out.read_text().splitlines()) == 4
    assert _cli(["import-amme", str(dataset), str(out)]) == 1
    text = capsys.readouterr().out
    assert "4 record(s) written, 2 task(s) skipped" in text
    assert "skipped 0006.json: " in text and "Traceback" not in text


@needs_symlinks
@pytest.mark.parametrize("how", ["image file", "image folder", "task file"])
def test_import_skips_a_task_whose_file_leaves_the_dataset(
        dataset: Path, tmp_path: Path, how: str) -> None:  # noqa: F811
    outside = tmp_path / "outside"
    outside.mkdir()
    cv2.imwrite(str(outside / "image_0001.png"), _image(300, 400, 90))
    if how == "image file":
        (dataset / "image" / "image_0001.png").unlink()
        (dataset / "image" / "image_0001.png").symlink_to(outside / "image_0001.png")
        bad = "0001.json"
    elif how == "image folder":  # images/ is searched after image/: a folder link for 0006
        (dataset / "images").symlink_to(outside, target_is_directory=True)
        (outside / "image_0001.png").rename(outside / "image_0006.png")
        (dataset / "json" / "0006.json").write_text(json.dumps(TASK_1))
        bad = "0006.json"
    else:
        (outside / "0006.json").write_text(json.dumps(TASK_1))
        (dataset / "json" / "0006.json").symlink_to(outside / "0006.json")
        cv2.imwrite(str(dataset / "image" / "image_0006.png"), _image(300, 400, 90))
        bad = "0006.json"
    out = dataset / "r.jsonl"
    result = import_amme(dataset, out)
    reasons = dict(result.skipped)
    assert "leaves the dataset folder" in reasons[bad] and "--allow-outside" in reasons[bad]
    assert all(".." not in p for r in result.records for p in r["images"])
    assert len(load_records(out)) == len(result.records)
    with pytest.warns(UserWarning, match="allow_outside"):
        opened = import_amme(dataset, out, allow_outside=True)
    assert bad not in dict(opened.skipped)
    assert len(opened.records) == len(result.records) + 1


def test_import_refuses_an_output_whose_folder_does_not_hold_the_dataset(
        dataset: Path, tmp_path: Path, capsys: Any) -> None:  # noqa: F811
    out = tmp_path / "elsewhere" / "r.jsonl"
    with pytest.raises(AmmeError, match="would leave the records' folder"):
        import_amme(dataset, out)
    assert not out.exists()
    assert _cli(["import-amme", str(dataset), str(out)]) == 2
    assert "--allow-outside" in capsys.readouterr().err
    assert _cli(["import-amme", "--allow-outside", str(dataset), str(out)]) == 1  # 0005.json
    assert all(p.startswith("../") for r in map(json.loads, out.read_text().splitlines())
               for p in r["images"])
    with pytest.raises(RecordsError, match="leaves the folder"):
        load_records(out)
    with pytest.warns(UserWarning):
        assert len(load_records(out, allow_outside=True)) == 4
    up = import_amme(dataset, tmp_path / "r.jsonl")  # a folder above the dataset holds it
    assert up.records[0]["images"] == ["amme/image/image_0001.png"]


def test_unreadable_task_messages_quote_no_content(dataset: Path) -> None:  # noqa: F811
    (dataset / "json" / "0007.json").write_bytes(b"\xff" + SECRET.encode())
    (dataset / "json" / "0008.json").write_text(SECRET)
    result = import_amme(dataset, dataset / "r.jsonl")
    reasons = dict(result.skipped)
    assert reasons["0007.json"] == "not readable JSON: not UTF-8 text (byte 0)"
    assert reasons["0008.json"].startswith("not readable JSON: Expecting value")
    assert all(SECRET not in r for r in reasons.values())


# ------------------------------------------------------------------------------ backgrounds


def _photos(root: Path) -> tuple[Path, Path]:
    folder, outside = root / "photos", root / "outside"
    for d in (folder, outside):
        d.mkdir()
    rng = np.random.default_rng(3)
    for d, name in ((folder, "a.png"), (outside, "secret.png")):
        cv2.imwrite(str(d / name), rng.integers(0, 255, (300, 400, 3), dtype=np.uint8))
    return folder, outside


@needs_symlinks
@pytest.mark.parametrize("relative", [False, True])
def test_backgrounds_refuse_a_linked_photo_outside_the_folder(tmp_path: Path,
                                                              relative: bool) -> None:
    folder, outside = _photos(tmp_path)
    target = Path("../outside/secret.png") if relative else outside / "secret.png"
    (folder / "b.png").symlink_to(target)
    with pytest.raises(PhotoSourceError) as err:
        photo_folder(folder)
    assert str(err.value).startswith(f"1 of 2 photos in {folder.resolve()} lie outside it")
    assert "b.png: a link that leaves the folder" in str(err.value)
    assert "allow_outside=True" in str(err.value)
    with pytest.raises(PhotoSourceError):
        photo_source(None, folder)
    with pytest.warns(UserWarning, match="allow_outside=True lets 1 photo"):
        src = photo_source(None, folder, allow_outside=True)
    assert [p.name for p in src.photos] == ["a.png", "b.png"]
    with pytest.raises(PhotoSourceError):  # the cached source does not leak the opt-out
        photo_folder(folder)


@needs_symlinks
def test_backgrounds_ignore_a_linked_folder_and_keep_links_inside(tmp_path: Path) -> None:
    folder, outside = _photos(tmp_path)
    (folder / "more").symlink_to(outside, target_is_directory=True)
    (folder / "c.png").symlink_to(folder / "a.png")
    assert [p.name for p in photo_folder(folder).photos] == ["a.png", "c.png"]


def test_backgrounds_with_no_links_are_unchanged(tmp_path: Path) -> None:
    folder, _ = _photos(tmp_path)
    assert [p.name for p in photo_folder(folder, allow_outside=True).photos] == ["a.png"]


@needs_symlinks
def test_the_env_takes_the_backgrounds_opt_in_and_its_tasks_carry_it(tmp_path: Path) -> None:
    from m3gym.env import M3BenchEnv
    from m3gym.integrations.export import family_config
    from m3gym.tasks.registry import make_task

    folder, outside = _photos(tmp_path)
    (folder / "b.png").symlink_to(outside / "secret.png")
    with pytest.raises(PhotoSourceError, match="lie outside it"):
        M3BenchEnv(family="tiny_text", backgrounds=folder)
    with pytest.warns(UserWarning, match="allow_outside=True lets 1 photo"):
        env = M3BenchEnv(family="tiny_text", backgrounds=folder, allow_outside=True)
    assert env.family_config == {"backgrounds": str(folder.resolve()), "allow_outside": True}
    _, info = env.reset(seed=0)
    # the task the env built is the one its config rebuilds; without the opt-in it is refused
    task_seed = int(info["task_id"].rpartition("/")[2])
    assert make_task("tiny_text", task_seed, dict(env.family_config)).content_hash() == \
        env.unwrapped.task.content_hash()
    with pytest.raises(PhotoSourceError, match="lie outside it"):
        make_task("tiny_text", 0, {"backgrounds": str(folder)})
    # exported rows carry the opt-in and the records env's pixel budget
    assert family_config({"backgrounds": str(folder), "allow_outside": True}) == \
        {"backgrounds": str(folder), "allow_outside": True}
    assert family_config({"records": "r.jsonl", "max_image_pixels": 10}) == \
        {"records": "r.jsonl", "max_image_pixels": 10}
    assert family_config({"backgrounds": str(folder), "max_image_pixels": 10}) == \
        {"backgrounds": str(folder)}
    env.close()


@needs_symlinks
def test_an_mcp_server_takes_the_records_opt_in_and_budget(layout: dict[str, Path]) -> None:
    from m3gym.mcp.episode_table import check_server_env_args

    _escape(layout, "symlinked file")
    with pytest.raises(ValueError, match="leaves the folder"):
        check_server_env_args({"records": str(layout["jsonl"])})
    with pytest.warns(UserWarning, match="allow_outside"):
        check_server_env_args({"records": str(layout["jsonl"]), "allow_outside": True})
    with pytest.raises(ValueError, match="budget"):
        check_server_env_args({"records": str(layout["jsonl"]), "allow_outside": True,
                               "max_image_pixels": 1})


# ------------------------------------------------------------------------------ a recorded run


@needs_symlinks
def test_an_eval_run_records_the_opt_out_and_rescores(layout: dict[str, Path],
                                                      tmp_path: Path) -> None:
    from m3gym.eval.rescore import rescore_trace
    from m3gym.eval.runner import EvalConfig, run_eval

    _escape(layout, "symlinked file")
    cfg = EvalConfig(envs=("M3Bench-Records",), agent="oracle", episodes=1, split="train",
                     env_args={"records": str(layout["jsonl"]), "split": "all",
                               "allow_outside": True})
    with pytest.warns(UserWarning, match="allow_outside"):
        result = run_eval(cfg, tmp_path / "run")
    (ep,) = result.rows
    assert ep["status"] == "ok" and ep["answer_correct"], ep
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["env_args"]["allow_outside"] is True
    trace = json.loads((tmp_path / "run" / "traces" / f"{ep['episode_id']}.json").read_text())
    assert rescore_trace(trace)["metrics"]["S"] == 1.0
    refused = EvalConfig(envs=("M3Bench-Records",), agent="oracle", episodes=1, split="train",
                         env_args={"records": str(layout["jsonl"]), "split": "all"})
    with pytest.raises(RecordsError, match="leaves the folder"):
        run_eval(refused, tmp_path / "run2")
