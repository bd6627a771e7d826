"""Hostile code in code mode: each attack is contained, reported precisely, and the env stays usable.

The suite runs once per isolation available here: ``none`` (the explicit opt-out: the process
boundary, resource limits, a non-dumpable env and the worker's audit hook + import allow-list)
and, when bubblewrap is installed and works, ``bwrap`` (plus the namespaces and the path
allow-list). Every attack assumes the worst reachable start: the unfiltered ``__import__`` (from
the filter's closure) and the worker's own globals (walking ``f_back``, which CPython does not
audit). See tests/sandbox/test_launcher.py for the OS layer and the fail-closed refusal.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import m3gym
from m3gym.env import M3BenchEnv
from tests.sandbox_options import ISOLATIONS

ESCAPE_FILE = "/tmp/m3gym-sandbox-escape-test.txt"
PACKAGE = str(Path(m3gym.__file__).resolve().parent)
TASK_DATA = str(Path(m3gym.__file__).resolve().parent / "data" / "splits" / "test.json")

# the original __import__ from the import filter's closure: a way around the first layer
RAW_IMPORT = ("raw = next(c.cell_contents for c in __builtins__['__import__'].__closure__ "
              "if callable(c.cell_contents))\n")
WORKER_GLOBALS = RAW_IMPORT + "g = raw('sys')._getframe().f_back.f_globals\n"
STDLIB = str(Path(os.__file__).resolve().parent)
# the one-line guard bypass that worked before the hook bound its own functions
REALPATH_PATCH = WORKER_GLOBALS + "g['os'].path.realpath = lambda p, *a, **k: g['os'].getcwd()\n"

HOSTILE: dict[str, tuple[str, str]] = {
    "infinite_loop": ("while True:\n    pass", "wall-clock limit of 2 s"),
    "memory_bomb": ("x = b'x' * (16 * 1024 ** 3)", "MemoryError"),
    "numpy_memory_bomb": ("x = np.ones((200000, 200000))", "MemoryError"),
    "fork_bomb": (WORKER_GLOBALS + "while True:\n    g['os'].fork()", "os.fork is not allowed"),
    "huge_stdout": ("for i in range(20000):\n    print('x' * 100)", "characters of output dropped"),
    "write_outside": (f"open({ESCAPE_FILE!r}, 'w').write('escaped')", "may not write to"),
    "cv2_imwrite_outside": (f"cv2.imwrite({ESCAPE_FILE[:-4] + '.png'!r}, images[0])",
                            "may not write to"),
    "cv2_imread_outside": ("print(cv2.imread('/etc/passwd'))", "may not read '/etc/passwd'"),
    "cv2_video_url": ("cv2.VideoCapture('http://127.0.0.1:1/x.mp4')",
                      "cv2.VideoCapture is not available"),
    "numpy_fromfile": ("print(np.fromfile('/etc/passwd', dtype=np.uint8)[:10])",
                       "may not read '/etc/passwd'"),
    "numpy_tofile": (f"images[0].tofile({ESCAPE_FILE!r})", "may not write to"),
    "read_passwd": ("print(open('/etc/passwd').read())", "may not read '/etc/passwd'"),
    "read_task_data": (f"print(open({TASK_DATA!r}).read()[:100])", "may not read"),
    "list_root": (WORKER_GLOBALS + "print(g['os'].listdir('/'))", "may not read '/'"),
    "socket_import": ("import socket", "import of 'socket' is not allowed"),
    "socket_bypass": (RAW_IMPORT + "s = raw('socket').socket()\ns.connect(('127.0.0.1', 22))",
                      "socket.__new__ is not allowed"),
    "ctypes_import": ("import ctypes", "import of 'ctypes' is not allowed"),
    "ctypes_bypass": (RAW_IMPORT + "raw('ctypes').CDLL(None)", "ctypes.dlopen is not allowed"),
    "subprocess_import": ("import subprocess", "import of 'subprocess' is not allowed"),
    "subprocess_bypass": (RAW_IMPORT + "raw('subprocess').run(['id'])",
                          "loading _posixsubprocess is not allowed"),
    "os_system": (WORKER_GLOBALS + "g['os'].system('id')", "os.system is not allowed"),
    "subclasses_escape": (
        "w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close']"
        "[0]\nw.__init__.__globals__['system']('id')", "os.system is not allowed"),
    "globals_escape": (WORKER_GLOBALS + "g['os'].execv('/bin/sh', ['sh'])",
                       "os.exec is not allowed"),
    "gc_escape": (RAW_IMPORT + "print(len(raw('gc').get_objects()))",
                  "gc.get_objects is not allowed"),
    "frame_escape": ("try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame",
                     "tb_frame is not allowed"),
    "pickle_import": ("import pickle", "import of 'pickle' is not allowed"),
    "pickle_loads": (RAW_IMPORT + "raw('pickle').loads(b'cos\\nsystem\\n(S\"id\"\\ntR.')",
                     "pickle.find_class is not allowed"),
    "pickle_save": ("class Evil:\n    def __reduce__(self):\n        return (print, ('x',))\n"
                    "save(Evil())", "save() expects a numpy array or a PIL image"),
    "signal_parent": (WORKER_GLOBALS + "g['os'].kill(g['os'].getppid(), 9)",
                      "os.kill is not allowed"),
    "raise_limits": (WORKER_GLOBALS + "r = g['resource']\n"
                     "r.setrlimit(r.RLIMIT_AS, (r.RLIM_INFINITY, r.RLIM_INFINITY))",
                     "resource.setrlimit is not allowed"),
    "forge_protocol": (WORKER_GLOBALS + "g['os'].write(g['OUT_FD'], b'\\xff\\xff\\xff\\xffjunk')",
                       "sandbox protocol violation"),
    "big_file": ("open('big.bin', 'wb').write(b'x' * (64 * 1024 * 1024))", "Error"),
    "exit": ("raise SystemExit(3)", "SystemExit is not allowed"),
    "huge_save": ("save(np.zeros((9000, 10, 3), np.uint8))", "is too large"),
    "realpath_patch_then_parent_memory": (
        REALPATH_PATCH + "open('/proc/%d/mem' % g['os'].getppid(), 'rb').read(1)", "may not read"),
    "realpath_patch_then_passwd": (REALPATH_PATCH + "print(open('/etc/passwd').read())",
                                   "may not read '/etc/passwd'"),
    "parent_environ": (WORKER_GLOBALS + "open('/proc/%d/environ' % g['os'].getppid()).read()",
                       "may not read"),
    "parent_maps": (WORKER_GLOBALS + "open('/proc/%d/maps' % g['os'].getppid()).read()",
                    "may not read"),
    "self_mem": ("open('/proc/self/mem', 'rb')", "may not read '/proc/self/mem'"),
    "patched_builtins": (
        RAW_IMPORT + "b = raw('builtins')\nkeep = b.len, b.isinstance, b.any, b.type\n"
        "b.len = lambda x: 0\nb.isinstance = lambda *a: False\nb.any = lambda x: False\n"
        "b.type = lambda x: str\ntry:\n    open('/etc/passwd').read()\nfinally:\n"
        "    b.len, b.isinstance, b.any, b.type = keep", "may not read '/etc/passwd'"),
    "patched_guard_tables": (
        WORKER_GLOBALS + "gd = g['guard']\ngd.BLOCKED_EVENTS = frozenset()\n"
        "gd.PATH_EVENTS.clear()\ngd.make_resolver = None\ng['os'].system('id')",
        "os.system is not allowed"),
    "patched_posix": (RAW_IMPORT + "p = raw('posix')\np.lstat = p.stat = None\n"
                      "print(open('/etc/passwd').read())", "may not read '/etc/passwd'"),
    "str_subclass_path": (
        "class P(str):\n    def startswith(self, *a):\n        return True\n"
        "    def split(self, *a):\n        return []\n"
        "print(open(P('/etc/passwd')).read())", "may not read '/etc/passwd'"),
    "symlink_out": (WORKER_GLOBALS + "g['os'].symlink('/etc/passwd', 'l')",
                    "os.symlink is not allowed"),
    "chdir_out": (WORKER_GLOBALS + "g['os'].chdir('/')", "os.chdir is not allowed"),
    "hardlink_out": (WORKER_GLOBALS + "g['os'].link('/etc/passwd', 'h')",
                     "may not write to '/etc/passwd'"),
    "dir_fd_escape": (WORKER_GLOBALS + f"fd = g['os'].open({STDLIB!r}, g['os'].O_RDONLY)",
                      "may not open the directory"),
    "dir_fd_argument": (WORKER_GLOBALS + "o = g['os']\no.mkdir('d')\n"
                        "o.mkdir('x', dir_fd=o.open('d', o.O_RDONLY))",
                        "os.mkdir with dir_fd is not allowed"),
    "frame_walk_to_system": (WORKER_GLOBALS + "g['os'].system('id')", "os.system is not allowed"),
    "generator_frame": ("def gen():\n    yield 1\nx = gen()\nprint(x.gi_frame)",
                        "gi_frame is not allowed"),
    "code_replace": ("c = compile('1', '<c>', 'exec').replace(co_consts=(2, None))",
                     "code.__new__ is not allowed"),
    "set_function_code": ("save.__code__ = (lambda *a: 0).__code__",
                          "setting __code__ is not allowed"),
    "frozen_compile": ("compile('1', '<frozen importlib._bootstrap>', 'exec')",
                       "compiling as a frozen module is not allowed"),
    "marshal_loads": (RAW_IMPORT + "raw('marshal').loads(b'')", "marshal.loads is not allowed"),
    "mmap_anonymous": (RAW_IMPORT + "raw('mmap').mmap(-1, 4096)", "mmap.__new__ is not allowed"),
    "udp_socket": (RAW_IMPORT + "s = raw('socket').socket(2, 2)", "socket.__new__ is not allowed"),
    "thread": (RAW_IMPORT + "raw('_thread').start_new_thread(print, ('x',))",
               "threads are not allowed"),
    "threading": (RAW_IMPORT + "raw('threading').Thread(target=print).start()",
                  "threads are not allowed"),
    "thread_reimport": (RAW_IMPORT + "m = raw('sys').modules\ndel m['_thread']\n"
                        "raw('_thread').start_new_thread(print, ('x',))",
                        "loading _thread is not allowed"),
    "subinterpreter": (RAW_IMPORT + "i = raw('_xxsubinterpreters')\n"
                       "i.run_string(i.create(), 'print(1)')", "not allowed"),
    "raw_fork_exec": (RAW_IMPORT + "raw('_posixsubprocess')",
                      "loading _posixsubprocess is not allowed"),
    "kill_own_group": (WORKER_GLOBALS + "g['os'].killpg(0, 9)", "os.killpg is not allowed"),
    "new_audit_hook_then_read": (RAW_IMPORT + "raw('sys').addaudithook(lambda *a: None)\n"
                                 "open('/etc/passwd').read()", "may not read '/etc/passwd'"),
}


@pytest.fixture(params=ISOLATIONS)
def env(request: pytest.FixtureRequest) -> M3BenchEnv:
    """A code-mode env with a short wall-clock limit, per isolation (a fresh worker per test:
    some attacks change the worker's modules, which persist across its episodes)."""
    e = M3BenchEnv(family="tiny_text", interface="code",
                   sandbox={"wall_s": 2.0, "isolation": request.param})
    yield e
    e.close()


def run_cell(env: M3BenchEnv, code: str) -> tuple[str, list[dict]]:
    """Run one cell in a fresh episode; return the step's text and call records."""
    obs, _, _, _, info = env.step({"name": "run_python", "arguments": {"code": code}})
    return obs["text"], info["calls"]


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_hostile_code_is_contained(env: M3BenchEnv, attack: str) -> None:
    """The attack fails with the expected message, and the next cell runs normally."""
    code, expected = HOSTILE[attack]
    env.reset(seed=7)
    text, calls = run_cell(env, code)
    assert expected in text, text
    if attack != "huge_stdout":
        assert calls and calls[-1]["name"] == "run_python" and not calls[-1]["ok"]
        assert expected in calls[-1]["error"]
    else:
        assert len(text) < 6000
    assert not os.path.exists(ESCAPE_FILE) and not os.path.exists(ESCAPE_FILE[:-4] + ".png")
    text, calls = run_cell(env, "print(41 + 1)")
    assert "42" in text and not calls


def test_cell_api_globals_hold_nothing_else(env: M3BenchEnv) -> None:
    """The tools, ``save`` and ``images`` reach the cell API's module only: no os, sys, guard."""
    env.reset(seed=5)
    code = ("names = set(save.__globals__) | set(crop.__globals__) | "
            "set(type(images).__getitem__.__globals__)\n"
            "print(sorted(n for n in names if n in ('os', 'sys', 'guard', 'CONFIG', 'IN_FD', "
            "'OUT_FD', 'main', 'resource', 'shutil', 'builtins')))\n"
            "print('os' in vars(save.__globals__['protocol']))")
    text, _ = run_cell(env, code)
    assert "[]\nFalse" in text, text


def test_answer_is_not_in_the_worker(env: M3BenchEnv) -> None:
    """Nothing of the task (answer, package modules) is reachable from the worker."""
    env.reset(seed=11)
    answer = env.task.answer.value
    code = (WORKER_GLOBALS + "mods = sorted(g['sys'].modules)\n"
            "print([m for m in mods if 'm3gym' in m])\nprint(len(mods))")
    text, _ = run_cell(env, code)
    assert "[]" in text and answer not in text


def test_files_stay_in_the_working_dir_and_reset_between_episodes(env: M3BenchEnv) -> None:
    """The private working dir is writable, and empty again in the next episode."""
    env.reset(seed=1)
    text, _ = run_cell(env, "open('note.txt', 'w').write('hi')\nprint(open('note.txt').read())")
    assert "hi" in text
    env.reset(seed=2)
    text, _ = run_cell(env, "print(open('note.txt').read())")
    assert "FileNotFoundError" in text


def test_variables_persist_within_an_episode_only(env: M3BenchEnv) -> None:
    """Cells of one episode share variables; a new episode starts clean."""
    env.reset(seed=1)
    run_cell(env, "secret = 5")
    assert "6" in run_cell(env, "print(secret + 1)")[0]
    env.reset(seed=2)
    assert "NameError" in run_cell(env, "print(secret)")[0]


@pytest.mark.skipif("bwrap" not in ISOLATIONS, reason="bubblewrap not installed or not usable")
def test_bwrap_hides_host_files_even_past_the_audit_hook() -> None:
    """Inside bubblewrap the host's /etc and the package are simply absent."""
    e = M3BenchEnv(family="tiny_text", interface="code", sandbox={"isolation": "bwrap"})
    try:
        e.reset(seed=1)
        code = WORKER_GLOBALS + ("o = g['os']\nprint(o.path.exists('/etc/passwd'), "
                                 f"o.path.exists({TASK_DATA!r}), o.path.exists({PACKAGE!r}))")
        text, _ = run_cell(e, code)
        assert "False False False" in text
    finally:
        e.close()


def test_flooding_the_env_with_requests_still_times_out(env: M3BenchEnv) -> None:
    """Re-requesting pixels forever is bounded by the wall clock like any loop."""
    env.reset(seed=3)
    code = "while True:\n    images.cache.clear()\n    images[0]"
    text, calls = run_cell(env, code)
    assert "wall-clock limit" in text and not calls[-1]["ok"]
    assert "42" in run_cell(env, "print(41 + 1)")[0]


def test_ordinary_python_still_runs_under_the_guard(env: M3BenchEnv) -> None:
    """What the guard refuses is not what ordinary cells use: namedtuples, dataclasses,
    typing, regexes, files in the working dir, Pillow's lazily imported plugins."""
    env.reset(seed=4)
    code = ("import collections, dataclasses, typing, re, json\n"
            "P = collections.namedtuple('P', 'x y', defaults=(0,))\n"
            "class T(typing.NamedTuple):\n    a: int = 1\n"
            "D = dataclasses.make_dataclass('D', [('v', int, dataclasses.field(default=2))], "
            "namespace={'__module__': 'collections'})\n"
            "open('a.json', 'w').write(json.dumps([P(1).y, T().a, D().v]))\n"
            "im = Image.fromarray(images[0]).transpose(Image.Transpose.FLIP_LEFT_RIGHT)\n"
            "print(open('a.json').read(), re.sub('a', 'b', 'aa'), im.size[0] > 0)")
    text, calls = run_cell(env, code)
    assert "[0, 1, 2] bb True" in text, text
    assert not calls
