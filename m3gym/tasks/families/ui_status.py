"""``ui_status``: read a tiny status value off a desktop screenshot (Level 1)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import ui
from m3gym.tasks.render.content import fake_shared

KINDS: tuple[str, ...] = ("battery", "setting", "version", "badge")
"""What is asked: the menu bar's battery %, a setting's value, an app version, a dock badge."""

SETTINGS: tuple[tuple[str, int, int, str], ...] = (
    ("Brightness", 10, 99, "%"), ("Volume", 10, 99, "%"), ("Font size", 10, 29, " pt"),
    ("Auto-lock after", 10, 39, " min"), ("Storage used", 20, 489, " GB"),
    ("Key repeat delay", 150, 899, " ms"), ("Text scale", 80, 199, "%"),
    ("Backup every", 10, 49, " h"), ("Screen saver after", 10, 49, " min"),
    ("Cursor size", 16, 69, " px"),
)
"""Numeric settings: label, lowest and highest tens range of the value, unit. Values end in a
round digit (:func:`_document_common.round_value`) so their options look alike at view size."""

TOGGLES: tuple[str, ...] = ("Night Shift", "Bluetooth", "Do Not Disturb", "Auto updates",
                            "Location services", "Dark mode", "Hot corners", "True Tone")
PANELS: tuple[str, ...] = ("General", "Display", "Sound", "Battery", "Storage", "Keyboard",
                           "Accessibility", "Privacy")
APPS: tuple[str, ...] = ("Mail", "Calendar", "Notes", "Photos", "Music", "Messages", "Maps",
                         "Files", "Podcasts", "Reminders", "Terminal", "Browser", "Weather",
                         "Contacts", "Books")
APP_SUFFIXES: tuple[str, ...] = ("Sync", "Studio", "Writer", "Vault", "Board", "Desk", "Flow")


def version_text(v: tuple[int, int, int]) -> str:
    """Return ``(4, 12, 3)`` as ``"4.12.3"``."""
    return ".".join(str(x) for x in v)


@register_family
@dataclass
class UiStatusFamily(FamilyConfig):
    """Read a tiny status value off a desktop screenshot.

    Scene:
        A desktop screenshot: a wallpaper, a translucent menu bar (menus, Wi-Fi, battery icon
        and percentage, clock), a settings window (sidebar, numeric rows with values and
        on/off switches), an "About" window of a fictional app, a notification and a dock of
        app icons with names and red unread badges; DejaVu Sans, JPEG-compressed. It stays flat
        with ``scenes="photo"``: a screenshot is the screen's own pixels (``flat_scene_reason``).
    Question:
        The battery percentage, the value a named setting is set to, the version an About
        window shows, or the unread count on a named app's badge; six look-alike choices. A
        battery or setting value's share its tens and end in each round digit 0/3/5/6/8/9. A
        version's share the major and the minor's tens; the minor's last digit and the patch
        are closed digits (0/6/8: every one times two patches), with the build after them on
        the line. A four-digit badge count's differ only in the middle two digits (closed).
        No option differs in a character that ends its text (the freest to read at two
        pixels), except the battery's and setting's, whose unit follows them.
    Why a tool is needed:
        UI text is 7-9 px tall (badge digits 0.8 of that) on a 3000-3200 px screen (a HiDPI
        desktop at 100 %), 1.7-2.3 px at the 768 px view; every row, badge and version has the
        same shape as its neighbours, and the options differ in look-alike digits, so only a
        zoomed crop reads the asked one.
    Reference trajectory:
        One zoomed crop of the asked value with its label (Level 1).
    Checkpoints:
        crop_covers (S), v_tool (crop) and v_true on the evidence "status" (label and value).
    Difficulty:
        ``glyph_range`` (13-14 px at 0, 8-9 px at 1), ``rows`` (settings rows, 3 at 0, 6-7 at
        1), ``apps`` (dock apps, 5 at 0, 9-10 at 1), ``badges`` (1-2 at 0, 4-5 at 1).
    Config:
        glyph_range, rows, apps, badges.
    """

    name: ClassVar[str] = "ui_status"
    flat_scene_reason: ClassVar[str] = (
        "A screenshot is the screen's own pixels, not a photograph of a physical object: it "
        "stays flat (a photographed screen with moiré and glare would change what the family "
        "tests, reading small UI text at screen resolution).")
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Society", "Life")
    description: ClassVar[str] = "crop a tiny status value on a desktop screenshot"

    glyph_range: tuple[float, float] = (7.0, 9.0)
    rows: tuple[int, int] = (3, 6)
    apps: tuple[int, int] = (6, 9)
    badges: tuple[int, int] = (2, 4)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size and clutter (rows, dock apps, badges) knobs."""
        d = float(difficulty)
        lerp = lambda a, b: a + (b - a) * d  # noqa: E731
        counts = partial(c2.lerp_range, d, integer=True, half_even=True)
        return {"glyph_range": (lerp(13.0, 8.0), lerp(14.0, 9.0)),
                "rows": counts((3, 3), (6, 7)), "apps": counts((5, 5), (9, 10)),
                "badges": counts((1, 2), (4, 5))}

    def validate(self) -> None:
        """Check glyph sizes and clutter counts."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 15.0)
        c2.check_range("rows", *self.rows, 2, 7)
        c2.check_range("apps", *self.apps, 3, 10)
        c2.check_range("badges", *self.badges, 1, 5)
        if self.badges[1] > self.apps[0]:
            raise ValueError("badges cannot exceed the number of dock apps")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        kind = c2.pick(rng, KINDS)
        g = float(rng.uniform(*self.glyph_range))
        w = int(rng.integers(3000, 3201))
        h = int(w * c2.pick(rng, (9 / 16, 10 / 16)))
        img = ui.wallpaper(rng, h, w)

        # menu bar
        apps = [APPS[int(i)] for i in rng.permutation(len(APPS))]
        battery = dc.round_value(rng, 10, 99)
        clock = (f"{c2.pick(rng, ('Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'))} "
                 f"{int(rng.integers(1, 29))} {c2.pick(rng, ('Jan', 'Mar', 'May', 'Aug', 'Oct'))}"
                 f"  {int(rng.integers(0, 24)):02d}:{int(rng.integers(60)):02d}")
        bar = ui.menu_bar(img, g, [apps[0], "File", "Edit", "View", "Window", "Help"], battery,
                          clock)

        # settings window: sidebar of panels, numeric rows, switches
        panel = c2.pick(rng, PANELS)
        sx0 = int(rng.uniform(0.03, 0.08) * w)
        sy0 = bar.height + int(rng.uniform(2.0, 5.0) * g)
        n_rows = int(rng.integers(self.rows[0], self.rows[1] + 1))
        picked = [SETTINGS[int(i)] for i in rng.permutation(len(SETTINGS))[:n_rows]]
        setting_values = [dc.round_value(rng, lo, hi) for _, lo, hi, _ in picked]
        toggles = [(TOGGLES[int(i)], bool(rng.random() < 0.5))
                   for i in rng.permutation(len(TOGGLES))[:int(rng.integers(2, 4))]]
        sw_w = int(58 * g)
        sw_h = int((6.5 + 3.0 * (n_rows + len(toggles)) + 4.5) * g)
        top = ui.window_frame(img, (sx0, sy0, sx0 + sw_w, sy0 + sw_h), "Settings", g)
        side = int(17 * g)
        for i, name in enumerate(PANELS):
            y = top + (1.2 + 2.4 * i) * g
            if name == panel:
                ui.rounded_rect(img, (sx0 + 0.6 * g, y - 0.7 * g, sx0 + side - 0.6 * g,
                                      y + 1.7 * g), 0.5 * g, ui.ACCENT)
            color = (255, 255, 255) if name == panel else ui.UI_TEXT
            ui.put_text(img, name, g, sx0 + 1.4 * g, y, color)
        content = (sx0 + side + int(1.5 * g), top, sx0 + sw_w - int(1.5 * g), sy0 + sw_h)
        ui.put_text(img, panel, 1.6 * g, content[0], top + 1.4 * g, ui.UI_TEXT, "sans-bold")
        rows_top = int(top + 4.5 * g)
        labels = [(p[0], f"{v}{p[3]}") for p, v in zip(picked, setting_values)]
        placed = ui.settings_rows(img, (content[0], rows_top, content[2], 0), g, labels)
        ui.settings_rows(img, (content[0], int(rows_top + (3.0 * n_rows + 1.5) * g),
                               content[2], 0), g, toggles)

        # About window of a fictional app, a notification, the dock
        app_name = (R.fake_person(rng, ascii_only=True).split()[-1].split("-")[0][:12] + " "
                    + c2.pick(rng, APP_SUFFIXES))
        # the minor's last digit and the patch are closed digits: the version's options
        version = (int(rng.integers(1, 10)), 10 * int(rng.integers(0, 3)) + c2.pick(
            rng, dc.CLOSED_DIGITS), c2.pick(rng, dc.CLOSED_DIGITS))
        aw, ah = int(30 * g), int(20 * g)
        ax0 = int(rng.uniform(sx0 + sw_w + 3 * g, w - aw - 3 * g))
        ay0 = int(rng.uniform(bar.height + 11 * g, max(bar.height + 11 * g + 1, h - ah - 12 * g)))
        atop = ui.window_frame(img, (ax0, ay0, ax0 + aw, ay0 + ah), f"About {app_name}", g)
        icon = int(5 * g)
        ui.app_icon(img, (ax0 + (aw - icon) // 2, atop + int(1.5 * g),
                          ax0 + (aw + icon) // 2, atop + int(1.5 * g) + icon),
                    ui.APP_COLORS[int(rng.integers(len(ui.APP_COLORS)))], app_name[0])
        ui.put_text(img, app_name, 1.5 * g, ax0 + aw / 2, atop + 8 * g, ui.UI_TEXT,
                    "sans-bold", "center")
        # the build follows the version on its line, so no option's varied digit ends the text
        build = (f"{int(rng.integers(10, 30))}{c2.pick(rng, 'ABCDEFGH')}"
                 f"{int(rng.integers(10, 999))}")
        ver = ui.put_text(img, f"Version {version_text(version)} ({build})", g, ax0 + aw / 2,
                          atop + 11 * g, ui.UI_MUTED, anchor="center")
        licensee = ui.fit_text(R.fake_person(rng, ascii_only=True), g, aw - 12 * g)
        ui.put_text(img, f"Licensed to {licensee}", g, ax0 + aw / 2, atop + 13.2 * g,
                    ui.UI_MUTED, anchor="center")
        ui.put_text(img, ui.fit_text(f"(c) {int(rng.integers(2015, 2031))} "
                                     f"{R.fake_company(rng, ascii_only=True)}", 0.9 * g,
                                     aw - 2 * g), 0.9 * g, ax0 + aw / 2, atop + 15.4 * g,
                    ui.UI_MUTED, anchor="center")
        tw = int(30 * g)
        tx0, ty0 = w - tw - int(1.2 * g), bar.height + int(0.8 * g)
        ui.shadowed_panel(img, (tx0, ty0, tx0 + tw, ty0 + int(7.5 * g)), 1.2 * g,
                          (244, 244, 246))
        ui.app_icon(img, (tx0 + int(g), ty0 + int(1.2 * g), tx0 + int(4.6 * g),
                          ty0 + int(4.8 * g)), ui.APP_COLORS[1], apps[1][0])
        ui.put_text(img, apps[1], g, tx0 + 5.6 * g, ty0 + 1.3 * g, ui.UI_TEXT, "sans-bold")
        ui.put_text(img, "now", 0.9 * g, tx0 + tw - 1.2 * g, ty0 + 1.3 * g, ui.UI_MUTED,
                    anchor="right")
        room = tw - 6.8 * g
        ui.put_text(img, ui.fit_text(R.fake_person(rng, ascii_only=True), g, room), g,
                    tx0 + 5.6 * g, ty0 + 3.3 * g, ui.UI_TEXT)
        ui.put_text(img, ui.fit_text(fake_shared(rng).sentence(nb_words=5), 0.9 * g, room), 0.9 * g,
                    tx0 + 5.6 * g, ty0 + 5.3 * g, ui.UI_MUTED)
        n_apps = int(rng.integers(self.apps[0], self.apps[1] + 1))
        dock_apps = apps[2:2 + n_apps]
        n_badges = int(rng.integers(self.badges[0], self.badges[1] + 1))
        badged = [int(i) for i in rng.permutation(n_apps)[:n_badges]]
        # four digits; the options vary the middle two (closed digits), never the last
        badges = {i: 10 * dc.closed_tail_value(rng, 1, 9) + int(rng.integers(10))
                  for i in badged}
        dock_texts = ui.dock(img, g, dock_apps, badges)
        clean = img  # nothing draws on img after this (the JPEG round trip returns a copy)
        shot = R.jpeg_artifacts(img, int(rng.integers(88, 97)))

        # the question
        grounding: tuple[int, int, int, int] | None = None
        if kind == "battery":
            marks, answer = [bar.texts["battery"]], battery
            question = ("What battery percentage does the menu bar at the top of the screen "
                        "show? Answer with the number only.")
        elif kind == "setting":
            k = int(rng.integers(n_rows))
            label = picked[k][0]
            lab, val = placed[label]
            assert val is not None  # numeric rows always print their value
            marks, answer = [lab, val], setting_values[k]
            question = (f'In the {panel} settings window, what is "{label}" set to? Answer '
                        "with the number only.")
        elif kind == "version":
            marks, answer = [ver], 0
            question = (f'What version number does the "About {app_name}" window show? '
                        "Answer with the version only.")
        else:
            i = badged[0]
            # light digits on a red badge: the evidence is the badge alone (a dark name label
            # in the same evidence would cancel its ink contrast); the crop keeps the name
            marks, answer = [dock_texts[f"badge/{i}"]], badges[i]
            grounding = dock_texts[f"name/{i}"].box
            question = (f"How many unread items does the badge on the {dock_apps[i]} icon in "
                        "the dock show? Answer with the number only.")
        shown = version_text(version) if kind == "version" else marks[-1].text
        ev = dc.flat_evidence("status", clean, marks, int(round(0.4 * g)), shown)
        if kind == "version":
            value = version_text(version)
            major, minor_tens = version[0], version[1] // 10
            tail = 10 * (version[1] % 10) + version[2]
            choices = dc.closed_tail_choices(
                rng, tail, lambda t: version_text((major, 10 * minor_tens + t // 10, t % 10)))
            spec = AnswerSpec(value)
        else:
            value = str(answer)
            last = answer % 10
            choices = (dc.closed_tail_choices(rng, answer // 10, lambda v: str(10 * v + last))
                       if kind == "badge" else dc.round_choices(rng, answer))
            spec = AnswerSpec(value, (shown,) if shown != value else (), "numeric", 0.0)
        crop_box = ev.box if grounding is None else c2.box_union(ev.box, grounding)
        call = c2.crop_call("c1", 0, R.grow_box(crop_box, 0.8 * g, w, h), w, h, ev.glyph_height)
        return Task(
            task_id="", family=self.name, level=1, domain=domain, images=(R.freeze(shot),),
            question=question, answer=spec, reference=((call,),), evidence=(ev,),
            checkpoints=evidence_checkpoints("status", [call]), choices=choices,
            capabilities=("visual_grounding",),
            metadata={"level": 1, "family": self.name, "domain": domain,
                      "evidence_area_fraction": ev.area / float(w * h), "view_size": R.VIEW_SIZE,
                      "image_size": [w, h], "scene": "desktop_screenshot", "kind": kind},
        )


# UiStatus: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"UiStatus": ("UiStatusFamily", lambda: UiStatusFamily)})
