"""The core stays lean: import m3gym + episodes import no extra's library; missing extras say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from m3gym.extras import MissingExtraError, require_extra

ROOT = Path(__file__).resolve().parents[1]


def test_an_episode_per_level_imports_no_extra_library(tmp_path: Path) -> None:
    # a fresh interpreter: this test process has imported pytest plugins and other tests' modules
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_bare_core.py")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={"PATH": "", "PYTHONPATH": str(ROOT), "M3GYM_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "extra modules imported: none"
    assert [line.split(":")[0] for line in lines[:-1]] == \
        ["M3Bench-L1-v3", "M3Bench-L2-v3", "M3Bench-L3-v3"]
    assert all(line.endswith("answer_correct=True") for line in lines[:-1])


def test_check_script_names_the_extra_modules() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_bare_core
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert check_bare_core.EXTRA_MODULES == ("openai", "matplotlib", "rich", "jinja2", "torch")


def test_missing_extra_names_the_install_command() -> None:
    with pytest.raises(MissingExtraError) as err:
        require_extra("m3gym_no_such_module.sub", "eval", "the report's plots")
    assert str(err.value) == (
        "the report's plots needs m3gym_no_such_module, which is not installed: it comes with "
        "the 'eval' extra, pip install \"m3gym[eval]\" (or pip install -e \".[eval]\" in a "
        "checkout)")
    assert isinstance(err.value, ImportError)


def test_present_module_is_returned() -> None:
    assert require_extra("json", "eval", "x") is sys.modules["json"]


def test_an_import_error_inside_the_module_is_not_blamed_on_the_extra(tmp_path: Path,
                                                                       monkeypatch) -> None:
    (tmp_path / "m3gym_broken_extra.py").write_text("import m3gym_missing_inner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as err:
        require_extra("m3gym_broken_extra", "eval", "x")
    assert not isinstance(err.value, MissingExtraError)
    assert err.value.name == "m3gym_missing_inner"


def test_cli_eval_without_rich_is_one_error_line(monkeypatch, capsys) -> None:
    from m3gym import cli

    monkeypatch.setitem(sys.modules, "rich.console", None)  # import raises ModuleNotFoundError
    assert cli.main(["eval", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err == ("m3gym: error: m3gym eval needs rich, which is not installed: it comes with "
                   "the 'eval' extra, pip install \"m3gym[eval]\" (or pip install -e \".[eval]\" "
                   "in a checkout)\n")
