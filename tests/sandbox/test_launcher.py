"""Code mode fails closed, and the answer cannot be read out of the env's process.

* Without a working bubblewrap, ``isolation="auto"``/``"bwrap"`` refuse with a message that says
  how to install it or opt out; ``isolation="none"`` warns and is recorded in every info.
* The OS layer alone (no audit hook at all): a process started exactly as a worker is (the same
  privileges, limits and, with bubblewrap, namespaces) cannot read ``/proc/<env>/mem`` or
  ``environ``, nor signal the env.
* The answer-extraction attack that once read 0.75 of L1 answers out of the env's memory (find
  the CPython string objects equal to each choice, answer the one with the highest refcount) is
  at chance: through ``run_python`` with the one-line guard bypass, and as a raw process with
  the worker's privileges. Where it cannot read memory it abstains.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

from m3gym.env import M3BenchEnv
from m3gym.sandbox import IsolationUnavailable, UnisolatedCodeWarning, launcher
from m3gym.sandbox.launcher import SandboxLimits, bwrap_command, limit_setter
from tests.sandbox_options import ISOLATIONS

ATTACK_TASKS = 60
"""Tasks of the statistical answer-extraction test."""

MEMORY_ATTACK = r'''
import json, os, sys
target, choices = int(sys.argv[1]), json.loads(sys.argv[2])
try:
    maps = open("/proc/%d/maps" % target).read().splitlines()
    mem = open("/proc/%d/mem" % target, "rb", buffering=0)
except Exception as exc:
    print(json.dumps({"read": 0, "error": "%s: %s" % (type(exc).__name__, exc)}))
    raise SystemExit(0)
keys = [c.encode() for c in choices]
best = [0] * len(keys)
read = 0
for line in maps:
    addr, perms = line.split()[:2]
    lo, hi = (int(x, 16) for x in addr.split("-"))
    if not perms.startswith("rw") or hi - lo > 1 << 28:
        continue
    try:
        mem.seek(lo)
        data = mem.read(hi - lo)
    except Exception:
        continue
    read += len(data)
    for i, k in enumerate(keys):  # compact ASCII str: refcnt, type, length, hash, state, wstr, data
        p = data.find(k + b"\0", 48)
        while p >= 0:
            o = p - 48
            if int.from_bytes(data[o + 16:o + 24], "little") == len(k):
                ref = int.from_bytes(data[o:o + 8], "little")
                if ref < 1 << 20:
                    best[i] = max(best[i], ref)
            p = data.find(k + b"\0", p + 1)
answer = choices[max(range(len(keys)), key=best.__getitem__)] if read and max(best) else None
print(json.dumps({"read": read, "answer": answer}))
'''
"""Read the target's writable memory; answer the choice whose str object has most references."""

def _cell_attack(choices: list[str]) -> str:
    """The memory attack as one cell: the old guard bypass, then the same scan."""
    body = MEMORY_ATTACK.split("try:\n", 1)[1]
    return ("raw = next(c.cell_contents for c in __builtins__['__import__'].__closure__ "
            "if callable(c.cell_contents))\n"
            "g = raw('sys')._getframe().f_back.f_globals\n"
            "os = g['os']\n"
            "os.path.realpath = lambda p, *a, **k: os.getcwd()\n"
            "import json\n"
            f"target, choices = os.getppid(), {choices!r}\n"
            "try:\n" + body.replace("raise SystemExit(0)",
                                      "raise RuntimeError('no memory: %s' % exc)"))


def hide_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make bubblewrap unavailable for this test (an empty PATH; the probe's cache cleared)."""
    monkeypatch.setenv("PATH", tempfile.mkdtemp(prefix="m3gym-nobin-"))
    launcher.bwrap_problem.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_bwrap_probe() -> None:
    """Every test sees the real bubblewrap probe again afterwards."""
    yield
    launcher.bwrap_problem.cache_clear()


# ------------------------------------------------------------------ fail closed
@pytest.mark.parametrize("isolation", ["auto", "bwrap"])
def test_code_mode_refuses_without_isolation(monkeypatch: pytest.MonkeyPatch,
                                             isolation: str) -> None:
    """No bubblewrap: the env refuses to start code mode and says how to fix or opt out."""
    hide_bwrap(monkeypatch)
    sandbox = {} if isolation == "auto" else {"isolation": isolation}
    with pytest.raises(IsolationUnavailable) as info:
        M3BenchEnv(family="tiny_text", interface="code", sandbox=sandbox)
    message = str(info.value)
    assert "bubblewrap (bwrap) is not installed" in message
    assert "apt-get install bubblewrap" in message
    assert "'isolation': 'none'" in message and "--code-isolation none" in message


def test_atomic_mode_needs_no_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only code mode runs agent code: atomic envs start without bubblewrap."""
    hide_bwrap(monkeypatch)
    env = M3BenchEnv(family="tiny_text")
    _, info = env.reset(seed=0)
    assert "code_isolation" not in info and env.code_isolation is None


def test_opting_out_warns_and_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """``isolation="none"`` runs, warns, and marks every info and the untrusted reward terms."""
    hide_bwrap(monkeypatch)
    with pytest.warns(UnisolatedCodeWarning, match="WITHOUT an isolation layer"):
        env = M3BenchEnv(family="tiny_text", interface="code", sandbox={"isolation": "none"})
    try:
        _, info = env.reset(seed=0)
        assert info["code_isolation"] == "none"
        _, _, _, _, info = env.step({"name": "run_python", "arguments": {"code": "print(1)"}})
        assert info["code_isolation"] == "none" and "untrusted_reward_terms" not in info
        _, _, done, _, info = env.step({"name": "answer", "arguments": {"text": "x"}})
        assert done and info["code_isolation"] == "none"
        assert "answer" in info["untrusted_reward_terms"]
        assert set(info["untrusted_reward_terms"]) <= set(info["reward_components"])
    finally:
        env.close()


@pytest.mark.skipif("bwrap" not in ISOLATIONS, reason="bubblewrap not installed or not usable")
def test_isolated_episodes_are_recorded_as_such() -> None:
    """With bubblewrap the default is isolated, recorded as ``bwrap``, and nothing is untrusted."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnisolatedCodeWarning)
        env = M3BenchEnv(family="tiny_text", interface="code")
    try:
        _, info = env.reset(seed=0)
        assert info["code_isolation"] == "bwrap"
        _, _, _, _, info = env.step({"name": "answer", "arguments": {"text": "x"}})
        assert info["code_isolation"] == "bwrap" and "untrusted_reward_terms" not in info
    finally:
        env.close()


# ------------------------------------------------------------------ the OS layer alone
def worker_privileges_of(env: M3BenchEnv) -> launcher.WorkerPrivileges:
    """Start ``env``'s worker (one cell) and return its privileges."""
    env.reset(seed=0)
    env.step({"name": "run_python", "arguments": {"code": "pass"}})
    worker = env._code._worker  # the live worker: its privileges are what we copy
    assert worker is not None and worker.env_protected
    return worker.privileges


def run_like_a_worker(isolation: str, privileges: launcher.WorkerPrivileges, code: str,
                      *args: str) -> dict:
    """Run ``code`` as a process started like a worker (no audit hook); return its JSON line."""
    python = str(Path(sys.executable).resolve())
    cmd = [python, "-I", "-S", "-c", code, *args]
    cwd = None
    if isolation == "bwrap":
        cmd = bwrap_command(8) + cmd
    else:
        cwd = tempfile.mkdtemp(prefix="m3gym-attack-")
        if privileges.uid is not None:
            os.chown(cwd, privileges.uid, privileges.gid or privileges.uid)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=cwd,
                             start_new_session=True,
                             preexec_fn=limit_setter(SandboxLimits(), privileges))
    finally:
        if cwd is not None:
            shutil.rmtree(cwd, ignore_errors=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(params=ISOLATIONS)
def code_env(request: pytest.FixtureRequest) -> tuple[M3BenchEnv, str]:
    """An L1 code-mode env per isolation available here."""
    env = M3BenchEnv(level=1, interface="code", show_choices=True,
                     sandbox={"isolation": request.param})
    yield env, request.param
    env.close()


def test_worker_privileges_cannot_read_or_signal_the_env(code_env: tuple[M3BenchEnv, str]
                                                         ) -> None:
    """Past every Python-level check: the env's memory, environment and signals are closed."""
    env, isolation = code_env
    probe = ("import json, os, signal, sys\nt = int(sys.argv[1])\nout = {}\n"
             "for name in ('mem', 'environ', 'maps'):\n"
             "    try:\n        open('/proc/%d/%s' % (t, name), 'rb').read(1)\n"
             "        out[name] = 'read'\n"
             "    except Exception as e:\n        out[name] = type(e).__name__\n"
             "try:\n    os.kill(t, 0)\n    out['signal'] = 'sent'\n"
             "except Exception as e:\n    out['signal'] = type(e).__name__\n"
             "out['caps'] = [l.split()[1] for l in open('/proc/self/status') "
             "if l.startswith('CapEff')][0]\n"
             "print(json.dumps(out))")
    result = run_like_a_worker(isolation, worker_privileges_of(env), probe, str(os.getpid()))
    assert result["mem"] != "read" and result["environ"] != "read", result
    assert int(result["caps"], 16) == 0, result
    if isolation == "bwrap":  # a PID namespace: the env is not even there
        assert result["signal"] == "ProcessLookupError" and result["maps"] != "read", result


def test_memory_attack_is_at_chance_through_run_python(code_env: tuple[M3BenchEnv, str]) -> None:
    """The one-line guard bypass plus the memory scan, in a cell, on 60 tasks: no better than
    chance (it abstains when it reads nothing), and every attempt was refused."""
    env, _ = code_env
    correct, chance = 0, 0.0
    for seed in range(ATTACK_TASKS):
        _, info = env.reset(seed=seed)
        choices = list(info["choices"])
        _, _, _, _, step = env.step({"name": "run_python",
                                     "arguments": {"code": _cell_attack(choices)}})
        cell = step["code_cells"][0]
        assert not cell["ok"] and "may not read" in cell["error"], cell
        _, _, _, _, final = env.step({"name": "answer", "arguments": {"text": ""}})
        correct += bool(final["answer_correct"])
        chance += 1 / len(choices)
    assert correct / ATTACK_TASKS <= chance / ATTACK_TASKS + 0.03


def test_memory_attack_is_at_chance_with_worker_privileges(code_env: tuple[M3BenchEnv, str]
                                                           ) -> None:
    """The same scan as a raw process with the worker's privileges (no audit hook at all)."""
    env, isolation = code_env
    privileges = worker_privileges_of(env)
    correct, chance, read = 0, 0.0, 0
    for seed in range(ATTACK_TASKS):
        env.reset(seed=seed)
        choices = list(env.task.choices)
        result = run_like_a_worker(isolation, privileges, MEMORY_ATTACK, str(os.getpid()),
                                   json.dumps(choices))
        read += result["read"]
        correct += result.get("answer") == env.task.answer.value
        chance += 1 / len(choices)
    assert read == 0
    assert correct / ATTACK_TASKS <= chance / ATTACK_TASKS + 0.03


# ------------------------------------------------------------------ eval runs record it
def test_eval_refuses_unisolated_code_before_writing(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """``m3gym eval --interface code`` without bubblewrap stops with the message, writing nothing."""
    from m3gym.cli import main

    hide_bwrap(monkeypatch)
    rc = main(["eval", "--env", "M3Bench-L1", "--agent", "oracle", "--episodes", "1",
               "--interface", "code", "--out", str(tmp_path / "run"), "--quiet"])
    assert rc == 2 and not (tmp_path / "run").exists()


def test_unisolated_eval_is_recorded_per_episode_and_warned_in_the_report(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The opt-out runs; every episode row says so and the report warns."""
    from m3gym.eval.report import load_runs, report_warnings
    from m3gym.eval.runner import EvalConfig, read_episode_rows, run_eval

    hide_bwrap(monkeypatch)
    cfg = EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=2,
                     env_args={"interface": "code", "sandbox": {"isolation": "none"}})
    run_eval(cfg, tmp_path / "run")
    rows = read_episode_rows(tmp_path / "run" / "episodes.jsonl")
    assert len(rows) == 2
    assert all(r["code_isolation"] == "none" and "answer" in r["untrusted_reward_terms"]
               for r in rows)
    warnings_ = report_warnings(load_runs([tmp_path / "run"]))
    assert any("2 episodes ran agent code WITHOUT isolation" in w for w in warnings_), warnings_
