import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from m3gym.eval.report import write_report
from m3gym.eval.runner import EvalConfig, run_eval

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # PATH only: CI hides it
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get "
                                "install chromium), or not on PATH")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    envs = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3")
    run_eval(EvalConfig(envs=envs, agent="oracle", episodes=1), root / "oracle")
    run_eval(EvalConfig(envs=envs, agent="random", episodes=1), root / "random")
    _, page = write_report([root / "oracle", root / "random"], out=root / "report")
    return page


def _chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def test_dom_has_episodes_and_images(report, tmp_path):
    res = _chromium(tmp_path, "--dump-dom", report.as_uri())
    dom = res.stdout
    assert len(re.findall(r'<section class="episode"', dom)) == 6
    thumbs = re.findall(r'<img class="thumb" src="data:image/jpeg;base64,', dom)
    assert len(thumbs) >= 6 + 3  # every input image, plus the oracle's produced images
    assert len(re.findall(r"<img class=\"plot\"", dom)) == 3


def test_screenshot_is_not_blank(report, tmp_path):
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", report.as_uri())
    assert shot.is_file()
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape == (2000, 1280)
    assert pixels.std() > 20.0
