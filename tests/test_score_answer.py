"""``m3gym.score_answer(answer, entry)``: bare answers scored against a prompt-dataset row with
the task's own rule (the env's), hedges refused."""

from __future__ import annotations

import pytest

import m3gym
from m3gym.integrations.datasets import answer_spec, extract_answer, prompt_rows, score_answer
from m3gym.integrations.session import EpisodeSession

ROWS = [r for env_id in ("M3Bench-L1-v4", "M3Bench-L2-v4", "M3Bench-L3-v4")
        for r in prompt_rows(env_id, 5, images=False)]


def call(name: str, **arguments: object) -> str:
    import json

    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_exported_from_the_package():
    assert m3gym.score_answer is score_answer and "score_answer" in m3gym.__all__


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["task_id"])
def test_bare_padded_tagged_and_called_answers_score(row):
    value = str(answer_spec(row).value)
    for form in (value, f" {value} ", f"{value}\n", value.lower(), f"<answer>{value}</answer>",
                 f"I checked the crop.\n<answer> {value} </answer>", call("answer", text=value)):
        assert score_answer(form, row) == 1.0, form
    for form in (None, "", "   ", "<answer></answer>", "WRONG-000", f"<answer>{value}9</answer>",
                 call("crop", image_index=0, bbox_2d=[0, 0, 10, 10])):
        assert score_answer(form, row) == 0.0, form


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["task_id"])
def test_hedges_never_score(row):
    spec = answer_spec(row)
    value = str(spec.value)
    task = m3gym.make_task(row["family"], row["task_seed"])
    others = [c for c in (task.choices or ()) if not score_answer(c, row)]
    other = others[0] if others else ("17" if value != "17" else "18")
    assert score_answer(f"{value} or {other}", row) == 0.0
    assert score_answer(f"{other} or {value}", row) == 0.0
    assert score_answer(f"<answer>{value}, {other}</answer>", row) == 0.0
    if task.choices and len(task.choices) > 1:
        assert score_answer(" | ".join(task.choices), row) == 0.0
        assert score_answer(", ".join(task.choices), row) == 0.0


def test_long_text_around_an_answer_does_not_score():
    row = next(r for r in ROWS if r["family"] == "tiny_text")
    value = answer_spec(row).value
    assert score_answer(f"After zooming in I am fairly sure the code reads {value}.", row) == 0.0
    assert score_answer(f"{value} is my answer, probably", row) == 0.0
    assert score_answer(f"The answer is {value}", row) == 1.0  # the env's rule drops this lead-in


def test_numeric_answers_use_the_task_tolerance():
    rows = prompt_rows("M3Bench-ChartValue-v4", 3, images=False)
    for row in rows:
        spec = answer_spec(row)
        assert spec.match == "numeric"
        value = float(spec.value)
        assert score_answer(f"{value + spec.tolerance / 2:.6f}", row) == 1.0
        assert score_answer(f"{value + spec.tolerance * 3:.6f}", row) == 0.0
        # a quantity in words counts (one quantity, as in the env); two quantities are a hedge
        assert score_answer(f"about {spec.value}", row) == 1.0
        assert score_answer(f"{spec.value} or {value + 5}", row) == 0.0


@pytest.mark.parametrize("row", ROWS[::3], ids=lambda r: r["task_id"])
def test_agrees_with_the_env_reward(row):
    value = str(answer_spec(row).value)
    candidates = [value, f" {value} ", value.lower(), "nope", f"{value} or 7", f"Total: {value}",
                  f"<answer>{value}</answer>"]
    session = EpisodeSession(row["env_id"])
    for text in candidates:
        session.start(row)
        session.act({"name": "answer", "arguments": {"text": extract_answer(text)}})
        assert session.metric("acc") == score_answer(text, row), text


def test_rows_of_every_shape_name_their_task():
    row = ROWS[0]
    value = answer_spec(row).value
    verl_row = {"prompt": [], "extra_info": {"family": row["family"], "task_seed": row["task_seed"]}}
    assert score_answer(value, verl_row) == 1.0
    assert score_answer(value, {"task_id": row["task_id"]}) == 1.0
    env_row = {"env_id": "M3Bench-TinyText-v4", "task_seed": 12}
    session = EpisodeSession("M3Bench-TinyText-v4")
    session.start(env_row)
    assert score_answer(session.task.answer.value, env_row) == 1.0


def test_a_row_without_a_task_is_a_clear_error():
    with pytest.raises(ValueError, match="names no task"):
        score_answer("B", {"prompt": "hi"})
    with pytest.raises(ValueError, match="mapping"):
        score_answer("B", "tiny_text/3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task_seed"):
        score_answer("B", {"family": "tiny_text", "task_seed": "x"})
