"""Held-out means held out: frozen-split tasks live in the test world, disjoint from training."""

import hashlib

import pytest

from m3gym.eval.splits import LEVELS, generate_split_entries
from m3gym.tasks.registry import (
    TRAIN_SEED_LIMIT,
    family_names,
    get_family,
    make_task,
    world_split_for_seed,
)
from m3gym.web import build_world
from m3gym.web import entities as E
from m3gym.web.names import SPLIT_INITIALS

WORLD_FAMILIES = [f for f in family_names(suite=None)
                  if any(getattr(fld, "name", "") == "split"
                         for fld in get_family(f).__dataclass_fields__.values())]


@pytest.fixture(scope="module")
def worlds():
    return build_world(0, "train"), build_world(0, "test")


def test_seed_rule_splits_at_the_training_limit():
    assert world_split_for_seed(0) == "train"
    assert world_split_for_seed(TRAIN_SEED_LIMIT - 1) == "train"
    assert world_split_for_seed(TRAIN_SEED_LIMIT) == "test"
    assert world_split_for_seed(2_000_000_123) == "test"


def test_world_families_are_the_l3_lookups_and_analyses():
    assert {"code_lookup", "logo_lookup", "privacy_safe_lookup", "cross_image",
            "knowledge_count"} <= set(WORLD_FAMILIES)


@pytest.mark.parametrize("level", LEVELS)
def test_frozen_split_tasks_use_the_test_world(level):
    for entry in generate_split_entries("test", level, n=2 * len(family_names(level))):
        if entry.family not in WORLD_FAMILIES:
            continue
        task = make_task(entry.family, entry.task_seed)
        assert task.metadata["world"]["split"] == "test", entry.task_id


@pytest.mark.parametrize("family", WORLD_FAMILIES)
def test_training_seeds_use_the_train_world_and_config_wins(family):
    assert make_task(family, 7).metadata["world"]["split"] == "train"
    task = make_task(family, TRAIN_SEED_LIMIT + 7, {"split": "train"})
    assert task.metadata["world"]["split"] == "train"


VOCABULARY = {w.strip().lower() for words in (E.COMPANY_SUFFIXES, E.PLACE_SUFFIXES,
                                               E.BUILDING_TYPES, E.MASCOTS,
                                               E.PRODUCT_CATEGORIES, E.ANIMALS) for w in words}
"""Shared kind vocabulary ("Harbor", "Falcons", "kettle") that names of both worlds may use."""


def _words(name):
    """Return the generated (non-vocabulary) words of an entity name."""
    return {w for w in name.replace("-", " ").split()
            if w[:1].isalpha() and w.lower() not in VOCABULARY}


def test_test_world_entities_never_occur_in_the_train_world(worlds):
    train, test = worlds
    for attr in ("key", "name", "url", "image_url"):
        a = {getattr(e, attr).lower() for e in train.entities}
        b = {getattr(e, attr).lower() for e in test.entities}
        assert not a & b, f"{attr} shared by both worlds: {sorted(a & b)[:5]}"
    # generated words (the split-initial ones) never cross; shared vocabulary ("Harbor") may
    train_words = {w for e in train.entities for w in _words(e.name)}
    test_words = {w for e in test.entities for w in _words(e.name)}
    assert {w[0] for w in train_words} <= set(SPLIT_INITIALS["train"])
    assert {w[0] for w in test_words} <= set(SPLIT_INITIALS["test"])
    assert not train_words & test_words
    codes_train = {e.attributes["code"] for e in train.entities if "code" in e.attributes}
    codes_test = {e.attributes["code"] for e in test.entities if "code" in e.attributes}
    assert codes_test and not codes_train & codes_test


def test_test_world_logos_never_occur_in_the_train_world(worlds):
    train, test = worlds
    digest = lambda w, e: hashlib.sha256(w.logo(e).tobytes()).hexdigest()  # noqa: E731
    a = {digest(train, e) for e in train.entities}
    b = {digest(test, e) for e in test.entities}
    assert not a & b
    assert not {e.logo for e in train.entities} & {e.logo for e in test.entities}
