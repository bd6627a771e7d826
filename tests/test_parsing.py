import json

from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.parsing import MAX_CALLS_PER_STEP, ToolCall, parse_action


def test_dict_call():
    p = parse_action({"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 10, 10]}})
    assert p.errors == [] and p.answer is None
    assert p.calls == [ToolCall("crop", {"image_index": 0, "bbox_2d": [0, 0, 10, 10]})]


def test_toolcall_dataclass_and_list_is_parallel():
    p = parse_action([ToolCall("grayscale", {"image_index": 0}), ToolCall("invert", {"image_index": 0})])
    assert [c.name for c in p.calls] == ["grayscale", "invert"] and not p.errors


def test_openai_tool_calls_with_json_string_arguments():
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "rotate", "arguments": json.dumps({"image_index": 0, "angle": 90})}},
        {"id": "call_2", "type": "function", "function": {"name": "flip", "arguments": "{}"}},
    ]}
    p = parse_action(msg)
    assert not p.errors
    assert p.calls[0] == ToolCall("rotate", {"image_index": 0, "angle": 90}, "call_1")
    assert p.calls[1].id == "call_2" and p.calls[1].arguments == {}
    # a bare list of OpenAI tool_calls entries works too
    assert len(parse_action(msg["tool_calls"]).calls) == 2


def test_hermes_text_blocks_and_answer():
    text = ('I will zoom.\n<tool_call>{"name": "crop", "arguments": {"image_index": 0, '
            '"bbox_2d": [1, 2, 300, 400]}}</tool_call>\n<tool_call>{"name": "grayscale", '
            '"arguments": {"image_index": 0}}</tool_call>')
    p = parse_action(text)
    assert [c.name for c in p.calls] == ["crop", "grayscale"] and not p.errors
    p = parse_action("The code is visible now. <answer> K7-4F2 </answer>")
    assert p.answer == "K7-4F2" and not p.calls and not p.errors


def test_answer_tool_forms():
    assert parse_action({"name": "answer", "arguments": {"text": "12"}}).answer == "12"
    assert parse_action({"name": "answer", "arguments": '{"text": "x"}'}).answer == "x"


def test_acting_and_answering_in_one_step_is_refused():
    p = parse_action('<tool_call>{"name": "invert", "arguments": {"image_index": 0}}</tool_call>'
                     "<answer>5</answer>")
    assert p.calls == [] and p.answer is None
    assert "acting and answering in the same step" in p.errors[0]


def test_malformed_inputs_give_precise_errors():
    assert "not valid JSON" in parse_action({"name": "crop", "arguments": "{bad"}).errors[0]
    assert "invalid JSON" in parse_action("<tool_call>{nope}</tool_call>").errors[0]
    assert "missing tool 'name'" in parse_action({"arguments": {}}).errors[0]
    assert "must be a JSON object" in parse_action({"name": "crop", "arguments": [1, 2]}).errors[0]
    assert "unsupported action type" in parse_action(3.5).errors[0]
    assert "empty action" in parse_action([]).errors[0]
    assert "no <tool_call>" in parse_action("just thinking").errors[0]
    assert "'text'" in parse_action({"name": "answer", "arguments": {}}).errors[0]
    too_many = [{"name": "invert", "arguments": {"image_index": 0}}] * (MAX_CALLS_PER_STEP + 1)
    assert "parallel calls" in parse_action(too_many).errors[0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, st.text(max_size=200), st.lists(json_values, max_size=4),
                 st.builds(lambda n, a: {"name": n, "arguments": a}, st.text(max_size=10), json_values)))
def test_parse_never_raises(action):
    p = parse_action(action)
    assert isinstance(p.errors, list)
    assert not (p.calls and p.answer is not None)
    if not p.calls and p.answer is None:
        assert p.errors
