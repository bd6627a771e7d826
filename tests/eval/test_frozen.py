"""Eval refuses a changed frozen task, and every run records what it ran on."""

from __future__ import annotations

import json

import pytest

from m3gym.cli import main
from m3gym.eval.frozen import ChangedTasksError, check_frozen_tasks, task_hash
from m3gym.eval.report import comparability_warnings, load_runs, render_markdown
from m3gym.eval.runner import EvalConfig, read_episode_rows, run_eval
from m3gym.eval.splits import dump_manifest, load_manifest, manifest_hashes
from m3gym.fingerprint import pixel_library_versions

L1 = ("M3Bench-L1",)


@pytest.fixture(scope="module")
def manifest():
    data = load_manifest("test")
    assert data is not None
    return data


def _first_l1(manifest, n=2):
    return manifest["levels"]["1"][:n]


def _changed_manifest(manifest, tmp_path, task_id, **extra):
    broken = json.loads(json.dumps(manifest))
    for e in broken["levels"]["1"]:
        if e["task_id"] == task_id:
            e["hash"] = "0" * 64
    broken.update(extra)
    path = tmp_path / "changed.json"
    path.write_text(dump_manifest(broken))
    return path


def test_a_changed_task_stops_the_run_before_any_episode(manifest, tmp_path, capsys):
    victim = _first_l1(manifest)[1]["task_id"]
    path = _changed_manifest(manifest, tmp_path, victim,
                             built_with=pixel_library_versions())  # builds match: code changed
    out = tmp_path / "run"
    rc = main(["eval", "--env", "M3Bench-L1", "--episodes", "2", "--agent", "random",
               "--manifest", str(path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert victim in err and "1 of 2 frozen task(s)" in err
    assert "--manifest" in err and "--allow-changed-tasks" in err  # the fix
    assert "opencv" in err and "pillow" in err  # the library builds
    assert not out.exists()  # nothing written, no episode ran


def test_the_error_names_the_library_builds_that_differ(manifest, tmp_path):
    victim = _first_l1(manifest)[0]["task_id"]
    other = {**pixel_library_versions(), "opencv": "4.14.0"}
    path = _changed_manifest(manifest, tmp_path, victim, built_with=other)
    cfg = EvalConfig(envs=L1, agent="random", episodes=1, manifest=str(path))
    with pytest.raises(ChangedTasksError, match=r"opencv: manifest 4\.14\.0, here "):
        run_eval(cfg, tmp_path / "run")


def test_allow_changed_tasks_runs_and_records_them(manifest, tmp_path):
    victim = _first_l1(manifest)[0]["task_id"]
    path = _changed_manifest(manifest, tmp_path, victim)
    cfg = EvalConfig(envs=L1, agent="random", episodes=2, manifest=str(path),
                     allow_changed_tasks=True)
    run_eval(cfg, tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["frozen_tasks"] == {"manifest": str(path), "version": manifest["version"],
                                      "checked": 2, "changed": [victim],
                                      "allowed_changed_tasks": True}
    warnings = comparability_warnings(load_runs([tmp_path / "run"]))
    assert any(victim in w and "--allow-changed-tasks" in w for w in warnings)


def test_every_run_records_versions_and_task_hashes(manifest, tmp_path):
    run_eval(EvalConfig(envs=L1, agent="random", episodes=2), tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    versions = config["versions"]
    for key in ("m3gym", "manifest", "python", "gymnasium", "numpy", "opencv", "pillow",
                "freetype"):
        assert versions[key], key
    assert versions["manifest"] == manifest["version"]
    assert config["frozen_tasks"]["checked"] == 2 and config["frozen_tasks"]["changed"] == []
    expected = manifest_hashes(manifest)
    rows = read_episode_rows(tmp_path / "run" / "episodes.jsonl")
    assert len(rows) == 2
    for row in rows:
        assert row["task_hash"] == expected[row["task_id"]]


def test_the_agents_model_and_endpoint_are_recorded(tmp_path):
    cfg = EvalConfig(envs=L1, agent="openai", episodes=1,
                     agent_args={"model": "my-model", "base_url": "http://127.0.0.1:9/v1",
                                 "api_key": "x"}, max_consecutive_infra=1)
    with pytest.raises(Exception):  # noqa: B017 - the endpoint is unreachable: the run aborts
        run_eval(cfg, tmp_path / "run")
    versions = json.loads((tmp_path / "run" / "config.json").read_text())["versions"]
    assert versions["agent_model"] == "my-model"
    assert versions["agent_base_url"] == "http://127.0.0.1:9/v1"


def test_report_warns_when_runs_differ_in_what_changes_tasks(tmp_path):
    run_eval(EvalConfig(envs=L1, agent="random", episodes=1), tmp_path / "a")
    run_eval(EvalConfig(envs=L1, agent="random", episodes=1), tmp_path / "b")
    assert comparability_warnings(load_runs([tmp_path / "a", tmp_path / "b"])) == []
    cfg_b = tmp_path / "b" / "config.json"
    config = json.loads(cfg_b.read_text())
    config["versions"]["pillow"] = "9.9.9"
    config["versions"]["python"] = "3.99.0"  # does not change tasks: no warning
    cfg_b.write_text(json.dumps(config))
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    warnings = comparability_warnings(runs)
    assert len(warnings) == 1 and "pillow" in warnings[0] and "9.9.9" in warnings[0]
    md = render_markdown(runs)
    assert "## Warnings" in md and "## Versions" in md and "9.9.9" in md


def test_a_bad_manifest_file_is_a_precise_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    rc = main(["eval", "--env", "M3Bench-L1", "--episodes", "1", "--agent", "random",
               "--manifest", str(bad), "--out", str(tmp_path / "run"), "--quiet"])
    assert rc == 2 and "is not valid JSON" in capsys.readouterr().err
    bad.write_text(json.dumps({"levels": {"1": [{"family": "tiny_text"}]}}))
    rc = main(["eval", "--env", "M3Bench-L1", "--episodes", "1", "--agent", "random",
               "--manifest", str(bad), "--out", str(tmp_path / "run"), "--quiet"])
    assert rc == 2 and "lacks task_seed, task_id, hash" in capsys.readouterr().err


def test_check_only_builds_what_the_manifest_holds(manifest):
    entries = _first_l1(manifest, 2)
    pairs = [(e["family"], e["task_seed"]) for e in entries] + [("tiny_text", 5)]
    expected = {e["task_id"]: e["hash"] for e in entries}
    built = []

    def spy(fn, items):
        built.extend(items)
        return map(fn, items)

    check = check_frozen_tasks(pairs, expected, "m", 2, map_fn=spy)
    assert check.checked == 2 and check.changed == []
    assert ("tiny_text", 5) not in built
    assert task_hash(("no_such_family", 1)).startswith("error: ")


def test_mcp_run_folders_record_versions_too(tmp_path):
    from m3gym.mcp.episode_table import RunFolder

    RunFolder(tmp_path / "mcp-run")
    config = json.loads((tmp_path / "mcp-run" / "config.json").read_text())
    assert config["agent"] == "mcp"
    assert config["versions"]["opencv"] == pixel_library_versions()["opencv"]
    assert config["versions"]["manifest"] == load_manifest("test")["version"]
