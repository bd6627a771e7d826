"""What the MCP episode table answers: the start text and a finished episode's verdict."""

from m3gym.eval.config import EpisodeOutcome
from m3gym.mcp.replies import StepReply, start_text, verdict


def test_start_text_has_everything_a_text_only_client_needs() -> None:
    data = {"episode_id": "ep-1", "prompt": "Read the label.", "choices": ["A", "B"],
            "max_tool_calls": 15, "max_rounds": 12}
    text = start_text(data)
    assert text.startswith("episode_id: ep-1\n\nRead the label.\n")
    assert "Choices: A; B" in text
    assert "Budget: 15 tool calls, 12 rounds." in text
    assert "Choices" not in start_text({**data, "choices": []})


def test_verdict_is_the_record_s_scores() -> None:
    assert verdict(None) == {}
    record = {"status": "ok", "answer": "42", "answer_correct": True, "reward": 1.5,
              "metrics": {"acc": 1.0}, "failure_mode": None, "episode_id": "e"}
    got = verdict(EpisodeOutcome(record, {}))
    assert got == {k: record[k] for k in ("status", "answer", "answer_correct", "reward",
                                          "metrics", "failure_mode")}
    reply = StepReply("text")
    assert reply.images == [] and not reply.is_error and not reply.done
