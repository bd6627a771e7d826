"""Evaluation: the ``m3gym eval`` runner, frozen test splits, summaries, HTML/Markdown reports."""

from m3gym.agents.errors import InfrastructureError
from m3gym.deprecation import renamed_names
from m3gym.eval.config import EpisodeSpec, EvalAbort, EvalConfig
from m3gym.eval.episodes_jsonl import UnreadableLine, read_episode_rows, read_episode_rows_checked
from m3gym.eval.plan import plan_episodes
from m3gym.eval.replay import replay_trace
from m3gym.eval.runner import EvalResult, run_eval
from m3gym.eval.splits import check_manifest, split_entries, write_manifest
from m3gym.eval.summary import print_summary, summarize

__all__ = ["EpisodeSpec", "EvalAbort", "EvalConfig", "EvalResult", "InfrastructureError",
           "UnreadableLine", "check_manifest", "plan_episodes", "print_summary",
           "read_episode_rows", "read_episode_rows_checked", "replay_trace", "run_eval",
           "split_entries", "summarize", "write_manifest"]


__getattr__ = renamed_names(__name__, {
    "read_records": ("m3gym.eval.episodes_jsonl.read_episode_rows", lambda: read_episode_rows),
    "read_records_checked": ("m3gym.eval.episodes_jsonl.read_episode_rows_checked",
                             lambda: read_episode_rows_checked),
})
"""The old names ``read_records`` / ``read_records_checked`` (``records`` is the user's data)."""
