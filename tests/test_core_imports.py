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
    from m3gym.tasks.registry import family_names

    assert lines[-2] == f"built one task of each of {len(family_names(suite=None))} families"
    assert [line.split(":")[0] for line in lines[:-2]] == \
        ["M3Bench-L1-v4", "M3Bench-L2-v4", "M3Bench-L3-v4"]
    assert all(line.endswith("answer_correct=True") for line in lines[:-2])


def test_the_check_fails_when_a_family_lacks_a_core_library(tmp_path: Path) -> None:
    # fontTools came only through matplotlib once; blocking it must fail the families that need it
    code = ("import sys, runpy; sys.modules['fontTools'] = None; sys.modules['fontTools.ttLib'] = "
            f"None; runpy.run_path({str(ROOT / 'scripts' / 'check_bare_core.py')!r}, "
            "run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300,
                          env={"PATH": "", "PYTHONPATH": str(ROOT), "M3GYM_CACHE": str(tmp_path)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "price_sum: cannot build a task: ModuleNotFoundError" in proc.stdout


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


def test_report_templates_are_package_data() -> None:
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["m3gym"]
    names = sorted(p.relative_to(ROOT / "m3gym").as_posix()
                   for p in (ROOT / "m3gym" / "eval" / "templates").iterdir())
    assert names == ["eval/templates/episode.html.j2", "eval/templates/macros.html.j2",
                     "eval/templates/report.css", "eval/templates/report.html.j2",
                     "eval/templates/report.js"]
    assert all(any(fnmatch.fnmatch(n, g) for g in globs) for n in names)


def test_report_without_jinja2_names_the_extra(monkeypatch) -> None:
    from m3gym.eval import report

    report.template_env.cache_clear()
    monkeypatch.setitem(sys.modules, "jinja2", None)
    try:
        with pytest.raises(MissingExtraError, match=r'the HTML report needs jinja2.*m3gym\[eval\]'):
            report.html_table((["a"], [["1"]]))
    finally:
        report.template_env.cache_clear()


def test_report_templates_escape_every_value() -> None:
    from m3gym.eval.report import html_table

    page = html_table((["<h>"], [["<b>'x' & \"y\""], ["0.5 [0.1, <0.9]"], ["1.0 [0.5, 1.5]"]]),
                      "c")
    assert page == (
        '<table class="c"><thead><tr><th>&lt;h&gt;</th></tr></thead><tbody>'
        '<tr><td class="">&lt;b&gt;&#x27;x&#x27; &amp; &quot;y&quot;</td></tr>'
        '<tr><td class="num">0.5 <span class="ci">[0.1, &lt;0.9]</span></td></tr>'
        '<tr><td class="num">1.0 <span class="ci">[0.5, 1.5]</span></td></tr></tbody></table>')
