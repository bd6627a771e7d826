"""Old public names still resolve at their old import paths, with a DeprecationWarning."""

from __future__ import annotations

import importlib

import pytest

from m3gym.deprecation import renamed_names
from m3gym.tasks.registry import TRAIN_SEED_LIMIT


def test_renamed_names_warns_and_returns_the_new_object() -> None:
    getattr_ = renamed_names("pkg.mod", {"Old": ("pkg.mod.New", lambda: 42)})
    with pytest.warns(DeprecationWarning, match=r"pkg\.mod\.Old is deprecated; use pkg\.mod\.New"):
        assert getattr_("Old") == 42
    with pytest.raises(AttributeError, match="has no attribute 'Other'"):
        getattr_("Other")


def test_the_training_seed_range_is_the_registry_limit() -> None:
    env = importlib.import_module("m3gym.env")
    with pytest.warns(DeprecationWarning, match="TRAIN_SEED_LIMIT"):
        assert env.TRAIN_SEED_RANGE == (0, TRAIN_SEED_LIMIT)


def test_the_records_env_imports_from_its_old_wrappers_path() -> None:
    from m3gym import records_env
    from m3gym.wrappers import records as old

    with pytest.warns(DeprecationWarning, match=r"use m3gym\.records_env\.RecordsEnv"):
        assert old.RecordsEnv is records_env.RecordsEnv
    with pytest.warns(DeprecationWarning):
        assert old.RECORDS_ENV_ID == records_env.RECORDS_ENV_ID == "M3Bench-Records-v4"
    with pytest.raises(AttributeError):
        old.NotThere  # noqa: B018


def test_a_gym_entry_point_written_for_the_old_path_still_loads_the_env() -> None:
    from gymnasium.envs.registration import load_env_creator

    from m3gym.records_env import RecordsEnv

    with pytest.warns(DeprecationWarning):
        assert load_env_creator("m3gym.wrappers.records:RecordsEnv") is RecordsEnv


@pytest.mark.parametrize(("old", "new", "names"), [
    ("m3gym.scoring.episode", "m3gym.scoring.episode_score", ("METRIC_KEYS", "score_episode")),
    ("m3gym.eval.episode", "m3gym.eval.episode_loop", ("EpisodeRecorder", "record_episode",
                                                        "AGENT_STEP_KEYS", "json_safe")),
    ("m3gym.mcp.episodes", "m3gym.mcp.episode_table", ("EpisodeTable", "EpisodeError",
                                                        "McpLimits", "RunFolder", "verdict")),
    ("m3gym.render_frame", "m3gym.env_frame", ("FRAME_SHAPE", "EpisodeSnapshot", "episode_frame",
                                               "episode_text")),
])
def test_a_renamed_module_serves_its_names_at_the_old_path(old: str, new: str,
                                                           names: tuple[str, ...]) -> None:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        with pytest.warns(DeprecationWarning, match=rf"use {new.replace('.', r'[.]')}[.]{name}"):
            assert getattr(old_module, name) is getattr(new_module, name)
    with pytest.raises(AttributeError):
        old_module.NotThere  # noqa: B018


def test_the_trace_call_class_imports_under_its_old_name() -> None:
    from m3gym import trace

    with pytest.warns(DeprecationWarning, match=r"use m3gym\.trace\.TraceCall"):
        assert trace.CallRecord is trace.TraceCall


@pytest.mark.parametrize("module", ["m3gym.eval", "m3gym.eval.episodes_jsonl", "m3gym.eval.runner"])
def test_the_episode_row_readers_import_under_their_old_names(module: str) -> None:
    from m3gym.eval import episodes_jsonl

    old = importlib.import_module(module)
    for name, new in (("read_records", "read_episode_rows"),
                      ("read_records_checked", "read_episode_rows_checked")):
        with pytest.warns(DeprecationWarning, match=rf"use m3gym[.]eval[.]episodes_jsonl[.]{new}"):
            assert getattr(old, name) is getattr(episodes_jsonl, new)
    with pytest.raises(AttributeError):
        old.NotThere  # noqa: B018


@pytest.mark.parametrize("module", ["m3gym.eval.report_plots", "m3gym.eval.report"])
def test_level_records_imports_under_its_old_name(module: str) -> None:
    from m3gym.eval.report_plots import level_rows

    with pytest.warns(DeprecationWarning, match=r"use m3gym[.]eval[.]report_plots[.]level_rows"):
        assert importlib.import_module(module).level_records is level_rows


def test_the_episode_rows_attributes_read_under_their_old_names(tmp_path) -> None:
    from pathlib import Path

    from m3gym.eval.config import EpisodeOutcome
    from m3gym.eval.report_runs import Run
    from m3gym.eval.run_folder_write import PreparedFolder
    from m3gym.eval.runner import EvalResult
    from m3gym.mcp.recording import RunFolder

    rows = [{"episode_id": "a", "status": "ok"}]
    objects = {"m3gym.eval.report_runs.Run": Run("r", Path("."), {}, rows, {}),
               "m3gym.eval.runner.EvalResult": EvalResult(Path("."), rows, {}, ran=1, skipped=0),
               "m3gym.eval.run_folder_write.PreparedFolder": PreparedFolder(rows),
               "m3gym.mcp.recording.RunFolder": RunFolder(tmp_path / "mcp")}
    for owner, obj in objects.items():
        with pytest.warns(DeprecationWarning, match=rf"{owner.replace('.', '[.]')}[.]records is "
                                                    rf"deprecated; use .*[.]rows"):
            assert obj.records is obj.rows
    outcome = EpisodeOutcome(rows[0], {})
    with pytest.warns(DeprecationWarning, match=r"EpisodeOutcome[.]record is deprecated; use .*[.]row"):
        assert outcome.record is outcome.row
    with pytest.raises(AttributeError):
        outcome.record = {}  # read-only
