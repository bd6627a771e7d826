"""Every config m3gym reads fails with one precise ConfigError: file, line, key, problem.

Reward YAML, curriculum settings and state files, agent arguments, a run's config.json,
``--m3-weights`` and ``--curriculum`` JSON. The CLI prints one ``m3gym: error:`` line and exits
with status 2, never a traceback; library calls raise :class:`ConfigError` (a ``ValueError``).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import m3gym
from m3gym.cli import main
from m3gym.config_errors import ConfigError, parse_json_text, parse_yaml_text, read_yaml_file
from m3gym.curriculum import Curriculum, make_curriculum
from m3gym.eval.runner import check_agent_args
from m3gym.reward import load_reward_config

EVAL = ["eval", "--env", "M3Bench-L1", "--agent", "random", "--episodes", "1", "--quiet"]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("m3gym: error: ")
    return err.removeprefix("m3gym: error: ")


# ------------------------------------------------------------------------------ reward YAML
@pytest.mark.parametrize("text, expected", [
    ("answer: 1\ngamma: 0.5: 3\n",
     "line 2, column 11: could not parse YAML: mapping values are not allowed here"),
    ("answer: abc\n", "line 1, column 1: key 'answer': expected a number, got 'abc'"),
    ("answer: 1\nm3_weights:\n  multi_hop: [2]\n",
     "line 3, column 3: key 'm3_weights.multi_hop': expected a number, got [2]"),
    ("answer: 1\nwieghts: 2\n", "line 2, column 1: unknown reward config keys ['wieghts']; "
     "known: ['answer', "),
    ("m3_weights: {multi_hopp: 1}\n", "line 1, column 14: unknown key 'm3_weights.multi_hopp' "
     "(known: multi_hop, multi_modal, multi_threaded)"),
    ("answer: 1\nanswer: 2\n", "line 2, column 1: key 'answer': duplicate key"),
    ("gamma: 2\n", "line 1, column 1: key 'gamma': gamma must be in (0, 1], got 2.0"),
    ("gate_process_by_answer: 1\n",
     "line 1, column 1: key 'gate_process_by_answer': expected true or false, got 1"),
    ("progress_terminal: always\n",
     "line 1, column 1: key 'progress_terminal': progress_terminal must be 'zero' or"),
    ("", "expected a mapping of reward settings, got nothing"),
    ("- answer\n", "expected a mapping of reward settings, got ['answer']"),
    ("answer: 2001-02-30\n", "could not parse YAML: day is out of range for month"),
])
def test_bad_reward_yaml_names_file_line_key(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_reward_config(str(path))
    assert str(info.value).startswith(f"{path}: {expected}"), str(info.value)


def test_env_with_a_bad_reward_file_raises_config_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("answer: [1\n")
    with pytest.raises(ConfigError, match=rf"^{path}: line 2, column 1: could not parse YAML"):
        gym.make(m3gym.resolve_env_id("M3Bench-L1"), reward=str(path))


def test_bad_reward_dict_names_the_key():
    with pytest.raises(ConfigError, match=r"^key 'm3': expected a number, got 'x'$"):
        load_reward_config({"m3": "x"})
    with pytest.raises(ConfigError, match=r"^key 'name': expected a string, got 3$"):
        load_reward_config({"name": 3})
    assert load_reward_config({"answer": 2, "m3_weights": {"multi_hop": 3}}).answer == 2.0


@pytest.mark.parametrize("text, needle", [
    ("answer: 1\n  gamma: : 2\n", "line 2"),     # syntax error
    ("answer: abc\n", "key 'answer': expected a number, got 'abc'"),  # wrong type
    ("wieghts: 1\n", "unknown reward config keys ['wieghts']"),       # unknown key
])
def test_cli_bad_reward_is_one_line_exit_2(tmp_path, capsys, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = tmp_path / "run"
    assert main([*EVAL, "--reward", str(path), "--out", str(out)]) == 2
    err = _one_error_line(capsys)
    assert err.startswith(f"{path}: ") and needle in err
    assert not out.exists()  # refused before anything is written


def test_console_script_prints_no_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("answer: 1\ngamma: 0.5: 3\n")
    proc = subprocess.run([sys.executable, "-m", "m3gym.cli", *EVAL, "--reward", str(path),
                           "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"m3gym: error: {path}: line 2, column 11: could not parse "
                                   "YAML: mapping values are not allowed here")


# ------------------------------------------------------------------------------ curriculum
def _saved_state(tmp_path: Path) -> dict:
    Curriculum(["tiny_text"], bins=2).save(tmp_path / "cur.json")
    return json.loads((tmp_path / "cur.json").read_text())


@pytest.mark.parametrize("edit, expected", [
    (lambda s: s["config"].__setitem__("bins", "two"),
     "key 'config.bins': expected an integer, got 'two'"),
    (lambda s: s["config"].__setitem__("bnis", 2), "unknown key 'config.bnis' (known: band, "),
    (lambda s: s["arms"][1][2].__setitem__("count", "x"),
     "key 'arms[1][2].count': expected an integer, got 'x'"),
    (lambda s: s.__setitem__("version", 9), "key 'version': unsupported curriculum state"),
    (lambda s: s.pop("rng"), "key 'rng': missing"),
    (lambda s: s.__setitem__("rng", {"bit_generator": "MT19937"}),
     "key 'rng': not a state of the curriculum's generator"),
    (lambda s: s["config"].__setitem__("fast", 0.001), "need 0 < slow < fast <= 1"),
])
def test_bad_curriculum_state_file_names_file_and_key(tmp_path, edit, expected):
    state = _saved_state(tmp_path)
    edit(state)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(state))
    with pytest.raises(ConfigError) as info:
        Curriculum.load(path)
    assert str(info.value).startswith(f"{path}: {expected}"), str(info.value)
    with pytest.raises(ConfigError, match=f"^{path}: "):  # through a dict's ``state:`` too
        make_curriculum({"families": ["tiny_text"], "bins": 2, "state": str(path)}, [])


def test_curriculum_state_that_is_not_json_names_line_and_column(tmp_path):
    path = tmp_path / "cur.json"
    path.write_text('{"version": 1,\n "config": {,}}')
    with pytest.raises(ConfigError, match=rf"^{path}: line 2, column 13: could not parse JSON: "
                                          "Expecting property name"):
        Curriculum.load(path)


def test_a_refused_state_changes_nothing(tmp_path):
    cur = Curriculum(["tiny_text"], bins=2)
    cur.update("tiny_text", 0.1, True)
    before = cur.state_dict()
    state = json.loads(json.dumps(before))
    state["config"]["mode"] = "band"
    state["arms"].append(["tiny_text", 7, state["arms"][0][2]])
    with pytest.raises(ConfigError, match=r"^key 'arms\[2\]': arm \('tiny_text', 7\) is not"):
        cur.load_state_dict(state)
    assert cur.state_dict() == before


@pytest.mark.parametrize("spec, expected", [
    ({"bins": "x"}, "curriculum: key 'bins': expected an integer, got 'x'"),
    ({"mdoe": "band"}, "curriculum: unknown key 'mdoe' (known: band, bins, epsilon, families, "
                       "fast, mode, outside, seed, slow, state)"),
    ({"band": [0.1]}, "curriculum: key 'band': expected [lo, hi], got [0.1]"),
    ({"families": ["nope"]}, "curriculum: unknown task family 'nope'"),
    ({"mode": "greedy"}, "curriculum: mode must be one of"),
])
def test_bad_curriculum_settings_name_the_key(spec, expected):
    with pytest.raises(ConfigError) as info:
        make_curriculum(spec, ["tiny_text"])
    assert str(info.value).startswith(expected), str(info.value)


def test_cli_bad_curriculum_json_is_one_line_exit_2(tmp_path, capsys):
    assert main(["export", "verl", "--curriculum", '{"bins": 2', "--out", str(tmp_path)]) == 2
    assert _one_error_line(capsys) == ("--curriculum: line 1, column 11: could not parse JSON: "
                                       "Expecting ',' delimiter")
    assert main(["export", "verl", "--curriculum", "nofile.json", "--out", str(tmp_path)]) == 2
    assert _one_error_line(capsys).startswith("--curriculum nofile.json: no such file")


# ------------------------------------------------------------------------------ agent args
@pytest.mark.parametrize("agent, args, expected", [
    ("random", ["answer_prob=abc"], "key 'answer_prob': expected a number, got 'abc'"),
    ("random", ["max_steps=2.5"], "key 'max_steps': expected an integer, got 2.5"),
    ("random", ["foo=1"], "unknown key 'foo' (known: answer_prob, max_steps)"),
    ("random", ["seed=3"], "key 'seed': set by the run (--seed), not an agent argument"),
    ("heuristic", ["use_tools=maybe"], "key 'use_tools': expected true or false, got 'maybe'"),
    ("openai", ["tool_mode=xml"], "key 'tool_mode': expected one of 'native', 'text', got 'xml'"),
    ("openai", ["modle=x"], "unknown key 'modle' (known: api_key, backoff, "),
])
def test_bad_agent_args_name_the_key(tmp_path, capsys, agent, args, expected):
    out = tmp_path / "run"
    argv = [*EVAL, "--agent", agent, "--out", str(out)]
    for a in args:
        argv += ["--agent-arg", a]
    assert main(argv) == 2
    assert _one_error_line(capsys).startswith(f"agent_args of agent {agent!r}: {expected}")
    assert not out.exists()


def test_agent_args_of_a_factory_with_kwargs_pass_by_name():
    check_agent_args("m3gym.agents.base:make_agent", {"anything": 1})  # **kwargs: not checked
    with pytest.raises(ConfigError, match="unknown key 'x'"):
        check_agent_args("oracle", {"x": 1})
    check_agent_args("random", {"answer_prob": 1, "max_steps": 3})
    check_agent_args("openai", {"model": 7, "max_tokens": None})  # coerced / optional


@pytest.mark.parametrize("arg, expected", [
    ("foo=1", "unknown key 'foo' (known: allow_outside, backgrounds, curriculum, "),
    ("max_tool_calls=abc", "key 'max_tool_calls': expected an integer, got 'abc'"),
    ("show_choices=3", "key 'show_choices': expected true or false, got 3"),
    ("reward=sparse", "key 'reward': set by the run (--reward), not an env argument"),
])
def test_bad_env_args_name_the_key_before_anything_is_written(tmp_path, capsys, arg, expected):
    out = tmp_path / "run"
    assert main([*EVAL, "--env-arg", arg, "--out", str(out)]) == 2
    assert _one_error_line(capsys).startswith(f"env_args of env 'M3Bench-L1': {expected}")
    assert not out.exists()


# ------------------------------------------------------------------------------ run files
def test_resume_with_a_corrupt_config_json_names_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*EVAL, "--out", str(out)]) == 0
    (out / "config.json").write_text('{"agent": "random",\n  "seed": }')
    capsys.readouterr()
    assert main([*EVAL, "--out", str(out), "--resume"]) == 2
    assert _one_error_line(capsys) == (f"{out / 'config.json'}: line 2, column 11: could not "
                                       "parse JSON: Expecting value")
    assert main(["report", str(out)]) == 2
    assert _one_error_line(capsys).startswith(f"{out / 'config.json'}: line 2")


def test_rescore_bad_inputs_exit_2(tmp_path, capsys):
    from m3gym.eval.rescore import main as rescore_main

    trace = tmp_path / "t.json"
    trace.write_text('{"steps": 1')
    assert rescore_main([str(trace)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {trace}: line 1, column 12: could not "
                                               "parse JSON: Expecting ',' delimiter")
    assert rescore_main([str(trace), "--m3-weights", '{"multi_hopp": 1}']) == 2
    assert capsys.readouterr().err.strip() == ("error: --m3-weights: unknown key 'multi_hopp' "
                                               "(known: multi_hop, multi_modal, multi_threaded)")
    trace.write_text('{"steps": 1}')
    assert rescore_main([str(trace)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {trace}: not an m3gym trace JSON "
                                               "(no 'recreate')")


# ------------------------------------------------------------------------------ the error type
def test_config_error_is_a_value_error_and_pickles():
    exc = ConfigError("a.yaml", "expected a number, got 'x'", key="w.a", line=3, column=5)
    assert isinstance(exc, ValueError)
    assert str(exc) == "a.yaml: line 3, column 5: key 'w.a': expected a number, got 'x'"
    copy = pickle.loads(pickle.dumps(exc))
    assert (str(copy), copy.key, copy.line, copy.column, copy.source) == \
        (str(exc), "w.a", 3, 5, "a.yaml")
    unknown = ConfigError(None, "unknown key 'z'", key="z", show_key=False)
    assert str(pickle.loads(pickle.dumps(unknown))) == "unknown key 'z'"


def test_yaml_and_json_readers(tmp_path):
    data, marks = parse_yaml_text("a: 1\nb:\n  c: [x, y]\n", "f.yaml")
    assert data == {"a": 1, "b": {"c": ["x", "y"]}}
    assert marks == {"a": (1, 1), "b": (2, 1), "b.c": (3, 3), "b.c[0]": (3, 7),
                     "b.c[1]": (3, 10)}
    with pytest.raises(ConfigError, match=r"^g\.json: key 'k': duplicate key"):
        parse_json_text('{"k": 1, "k": 2}', "g.json")
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"a: \xe9\n")
    with pytest.raises(ConfigError, match=rf"^{path}: not UTF-8 text \(byte 3\)$"):
        read_yaml_file(path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_yaml_file(tmp_path / "missing.yaml")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_yaml_text_parses_or_raises_config_error(text):
    try:
        parse_yaml_text(text, "x.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("x.yaml: ")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40),
                 st.dictionaries(st.text(max_size=8),
                                 st.one_of(st.none(), st.booleans(), st.integers(),
                                           st.floats(allow_nan=False), st.text(max_size=5),
                                           st.lists(st.integers(), max_size=2)), max_size=4)))
def test_any_reward_mapping_loads_or_raises_config_error(data):
    """No input reaches a raw TypeError/KeyError: it loads or names what is wrong."""
    try:
        load_reward_config(data if isinstance(data, dict) else {"answer": data})
    except ConfigError as exc:
        assert exc.problem
