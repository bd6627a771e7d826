"""Entities of the offline world: drawing their names, attributes, relations, facts and logos.

Generation is two-phase. Phase 1 draws *drafts* (kind, name, attribute values, relations to other
entities) kind by kind, so relations can point at entities drawn earlier. Phase 2 turns every draft
into an immutable :class:`Entity` whose :class:`Fact` objects carry the exact sentence stating
them (chosen among several templates), from which the page body is assembled.

Near-duplicate distractors: each *base* entity may get one or two variants in the same ``group``:
the name differs by one letter (never the first) or one word, the attributes are drawn afresh
(so reading the wrong page gives a wrong answer) and the logo differs by one large element.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from m3gym.web.logos import KIT_COLOURS, PALETTE, LogoSpec, logo_variant, random_logo_spec
from m3gym.web.names import (
    SPLIT_INITIALS,
    initials,
    letter_variant,
    make_word,
    pick,
    slugify,
)

KINDS: tuple[str, ...] = ("place", "person", "company", "building", "team", "product", "species")
"""Entity kinds, in generation order (relations point at kinds drawn earlier or the same)."""

BASE_COUNTS: Mapping[str, int] = MappingProxyType({
    "place": 220, "person": 240, "company": 250, "building": 170, "team": 150, "product": 280,
    "species": 160,
})
"""Number of base entities per kind (distractor variants come on top)."""

KIND_NOUN: Mapping[str, str] = MappingProxyType({
    "place": "town", "person": "person", "company": "company", "building": "building",
    "team": "team", "product": "product", "species": "species",
})
"""Word appended to an entity's name in its good search query."""

COMPANY_SUFFIXES = ("Systems", "Dynamics", "Labs", "Works", "Industries", "Holdings", "Foods",
                    "Motors", "Analytics", "Textiles", "Robotics", "Optics")
INDUSTRIES = ("software", "logistics", "food processing", "robotics", "textiles", "optics",
              "shipbuilding", "pharmaceuticals", "renewable energy", "publishing", "toys",
              "aerospace")
PLACE_SUFFIXES = ("", "", "", " Falls", " Bay", " Hollow", " Ridge", " Harbor")
REGIONS_PER_SPLIT = 12
OCCUPATIONS = ("architect", "engineer", "chemist", "teacher", "pilot", "surgeon", "journalist",
               "botanist", "carpenter", "economist", "violinist", "cartographer")
BUILDING_TYPES = ("Tower", "Hall", "Arena", "Stadium", "Library", "Museum", "Pavilion", "Bridge")
SPORTS = ("football", "basketball", "hockey", "rugby", "volleyball", "handball")
MASCOTS = ("Herons", "Ravens", "Wolves", "Comets", "Lynxes", "Falcons", "Otters", "Bisons",
           "Hornets", "Pilots", "Rangers", "Mariners", "Foxes", "Titans")
PRODUCT_CATEGORIES = ("kettle", "drone", "headset", "bicycle", "camera", "lamp", "router",
                      "blender", "scooter", "thermostat", "keyboard", "telescope")
ANIMALS = ("warbler", "frog", "beetle", "lizard", "moth", "finch", "salamander", "trout", "orchid",
           "fern", "shrew", "heron")
DIETS = ("insects", "seeds", "nectar", "small fish", "leaves", "fruit", "algae", "worms")
STATUSES = ("least concern", "near threatened", "vulnerable", "endangered",
            "critically endangered")
CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"

# (kind, attribute) -> sentence templates; each states {value} exactly once.
TEMPLATES: Mapping[tuple[str, str], tuple[str, ...]] = MappingProxyType({
    ("place", "population"): (
        "{name} has a population of {value}.",
        "At the last census, {name} counted {value} residents.",
        "Some {value} people live in {name}."),
    ("place", "region"): (
        "{name} lies in the {value} region.",
        "The town is part of the {value} region.",
        "{name} belongs to the {value} region."),
    ("place", "founded"): (
        "{name} was founded in {value}.",
        "The first settlement at {name} dates from {value}.",
        "Records show {name} was established in {value}."),
    ("place", "elevation_m"): (
        "{name} sits at an elevation of {value} metres.",
        "The town centre is {value} metres above sea level.",
        "Its elevation is {value} metres."),
    ("person", "id_number"): (
        "{name} holds identity number {value}.",
        "The registered ID number of {name} is {value}.",
        "Identity records list {name} under number {value}."),
    ("person", "birth_year"): (
        "{name} was born in {value}.",
        "Born in {value}, {name} grew up by the coast.",
        "{name}'s year of birth is {value}."),
    ("person", "occupation"): (
        "{name} works as a {value}.",
        "By profession, {name} is a {value}.",
        "{name} trained as a {value}."),
    ("person", "city"): (
        "{name} lives in {value}.",
        "{name} is a resident of {value}.",
        "Home for {name} is {value}."),
    ("person", "employer"): (
        "{name} is employed by {value}.",
        "{name} joined {value} as a staff member.",
        "Current employer of {name}: {value}."),
    ("company", "founded"): (
        "{name} was founded in {value}.",
        "The company was established in {value}.",
        "{name} has been trading since {value}."),
    ("company", "headquarters"): (
        "{name} is headquartered in {value}.",
        "The head office of {name} is located in {value}.",
        "Its headquarters are in {value}."),
    ("company", "industry"): (
        "{name} operates in the {value} industry.",
        "The firm's main business is {value}.",
        "{name} is known for {value}."),
    ("company", "ceo"): (
        "The chief executive of {name} is {value}.",
        "{value} leads {name} as CEO.",
        "{name} is run by CEO {value}."),
    ("company", "brand_colour"): (
        "The brand colour of {name} is {value}.",
        "{name} uses {value} as its corporate colour.",
        "Its logo is dominated by the colour {value}."),
    ("company", "employees"): (
        "{name} employs {value} people.",
        "The company has a workforce of {value}.",
        "About {value} staff work for {name}."),
    ("company", "parent"): (
        "{name} is a subsidiary of {value}.",
        "The parent company of {name} is {value}.",
        "{value} owns {name}."),
    ("building", "city"): (
        "{name} stands in {value}.",
        "The building is located in {value}.",
        "{name} can be found in {value}."),
    ("building", "opened"): (
        "{name} opened in {value}.",
        "The doors of {name} first opened in {value}.",
        "Construction finished and {name} opened in {value}."),
    ("building", "capacity"): (
        "{name} has a capacity of {value}.",
        "Up to {value} visitors fit inside {name}.",
        "The venue holds {value} people."),
    ("building", "height_m"): (
        "{name} is {value} metres tall.",
        "The structure rises {value} metres.",
        "Its height is {value} metres."),
    ("building", "architect"): (
        "{name} was designed by {value}.",
        "The architect of {name} was {value}.",
        "{value} drew the plans for {name}."),
    ("building", "owner"): (
        "{name} is owned by {value}.",
        "The owner of the building is {value}.",
        "{value} holds the title to {name}."),
    ("team", "sport"): (
        "The {name} play {value}.",
        "{name} is a professional {value} club.",
        "The club competes in {value}."),
    ("team", "kit_colour"): (
        "The {name} wear {value} kits.",
        "The home kit of the {name} is {value}.",
        "Fans of the {name} dress in {value}, the club colour."),
    ("team", "home_city"): (
        "The {name} are based in {value}.",
        "The club's home city is {value}.",
        "{value} is home to the {name}."),
    ("team", "venue"): (
        "The {name} play their home games at {value}.",
        "Home matches of the {name} take place at {value}.",
        "The club's home ground is {value}."),
    ("team", "founded"): (
        "The {name} were founded in {value}.",
        "The club was formed in {value}.",
        "The {name} date back to {value}."),
    ("team", "coach"): (
        "The head coach of the {name} is {value}.",
        "{value} coaches the {name}.",
        "The {name} are coached by {value}."),
    ("product", "code"): (
        "The product code of the {name} is {value}.",
        "{name} is sold under product code {value}.",
        "Catalogue number {value} refers to the {name}."),
    ("product", "maker"): (
        "The {name} is made by {value}.",
        "{value} manufactures the {name}.",
        "The {name} comes from the workshops of {value}."),
    ("product", "release_year"): (
        "The {name} was released in {value}.",
        "The {name} first went on sale in {value}.",
        "Launch year of the {name}: {value}."),
    ("product", "price_usd"): (
        "The {name} costs {value} US dollars.",
        "The list price of the {name} is {value} US dollars.",
        "Buyers pay {value} US dollars for the {name}."),
    ("product", "colour"): (
        "The {name} comes in {value}.",
        "The standard finish of the {name} is {value}.",
        "Most units of the {name} are painted {value}."),
    ("species", "habitat"): (
        "The {name} is native to {value}.",
        "The {name} is found only around {value}.",
        "Its natural range is limited to {value}."),
    ("species", "length_cm"): (
        "An adult {name} measures {value} cm.",
        "The {name} grows to a length of {value} cm.",
        "Adults reach {value} cm in length."),
    ("species", "diet"): (
        "The {name} feeds on {value}.",
        "The diet of the {name} consists mainly of {value}.",
        "It lives on {value}."),
    ("species", "colour"): (
        "The {name} is mostly {value}.",
        "Its dominant colour is {value}.",
        "Observers describe the {name} as {value}."),
    ("species", "status"): (
        "The {name} is listed as {value}.",
        "Its conservation status is {value}.",
        "Conservationists rate the {name} as {value}."),
    ("species", "discovered_by"): (
        "The {name} was first described by {value}.",
        "{value} first described the {name}.",
        "Credit for describing the {name} goes to {value}."),
})

INTROS: Mapping[str, str] = MappingProxyType({
    "place": "{name} is a town.",
    "person": "{name} is a private individual listed in the public register.",
    "company": "{name} is a company.",
    "building": "{name} is a building.",
    "team": "The {name} are a sports team.",
    "product": "The {name} is a consumer product.",
    "species": "The {name} is a species.",
})
FILLERS: tuple[str, ...] = (
    "Further details are available from local archives.",
    "This page is maintained by volunteer editors.",
    "Several reference works mention it briefly.",
    "Photographs are held in the regional collection.",
    "Historical sources differ on minor points.",
    "Visitors often remark on its distinctive emblem.",
)


@dataclass(frozen=True)
class Fact:
    """One attribute of an entity, with the exact sentence of its page that states it.

    Attributes:
        entity: key of the entity the fact is about.
        attribute: attribute name (e.g. ``"population"``, ``"headquarters"``).
        value: the value exactly as written in ``sentence``.
        sentence: the sentence of the page body that states the fact.
        numeric: the value as a number when it is one (years, counts, sizes), else ``None``.
        related: key of the entity the value names, for relation attributes, else ``None``.
    """

    entity: str
    attribute: str
    value: str
    sentence: str
    numeric: float | None = None
    related: str | None = None


@dataclass(frozen=True)
class Entity:
    """A fictional entity of the world.

    Attributes:
        key: unique id, ``"<kind>/<slug>"``.
        kind: one of :data:`KINDS`.
        name: display name (unique in the world).
        url: url of the entity's page.
        facts: its facts, in page order.
        group: near-duplicate group id; entities sharing it are each other's distractors.
        is_distractor: whether it was made as a variant of the group's base entity.
        logo: recipe of its logo (render with :meth:`World.logo`).
        image_url: url of its logo image (``download_image`` accepts it or the page url).
    """

    key: str
    kind: str
    name: str
    url: str
    facts: tuple[Fact, ...]
    group: int
    is_distractor: bool
    logo: LogoSpec
    image_url: str
    _by_attr: Mapping[str, Fact] = field(default_factory=dict, repr=False, compare=False)

    @property
    def attributes(self) -> dict[str, str]:
        """Attribute name → value string, in page order."""
        return {f.attribute: f.value for f in self.facts}

    @property
    def relations(self) -> dict[str, str]:
        """Relation attribute name → key of the related entity."""
        return {f.attribute: f.related for f in self.facts if f.related is not None}

    def fact(self, attribute: str) -> Fact:
        """Return the fact for ``attribute`` (``KeyError`` listing the valid names if absent)."""
        try:
            return self._by_attr[attribute]
        except KeyError:
            raise KeyError(f"{self.key} has no attribute {attribute!r}; it has "
                           f"{list(self._by_attr)}") from None


@dataclass
class Draft:
    """A mutable entity under construction (phase 1)."""

    kind: str
    name: str
    group: int
    is_distractor: bool
    values: dict[str, Any] = field(default_factory=dict)
    relations: dict[str, int] = field(default_factory=dict)
    logo: LogoSpec | None = None
    code: str | None = None


class NameBook:
    """Hands out world-unique names (membership checks only; never iterated)."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def take(self, name: str) -> bool:
        """Reserve ``name``; return ``False`` if it was already taken."""
        key = name.lower()
        if key in self._used:
            return False
        self._used.add(key)
        return True


def unique_name(rng: np.random.Generator, book: NameBook, make: Any) -> str:
    """Return the first name produced by ``make(rng)`` that ``book`` has not handed out."""
    while True:
        name = make(rng)
        if book.take(name):
            return name


def variant_name(rng: np.random.Generator, book: NameBook, name: str, kind: str) -> str:
    """Return a near-duplicate of ``name`` (one letter of the first word, or the last word)."""
    words = name.split()
    swaps = {"company": COMPANY_SUFFIXES, "building": BUILDING_TYPES, "team": MASCOTS}
    for _ in range(50):
        new = list(words)
        if kind in swaps and len(words) > 1 and rng.random() < 0.4:
            new[-1] = pick(rng, tuple(s for s in swaps[kind] if s != words[-1]))
        else:
            new[0] = letter_variant(rng, words[0])
        candidate = " ".join(new)
        if book.take(candidate):
            return candidate
    raise RuntimeError(f"could not find a free variant of {name!r}")  # pragma: no cover


def product_code(rng: np.random.Generator, split: str) -> str:
    """Return a product code like ``"K7-4F2"`` or ``"KX-2291"`` starting with a split initial."""
    first = pick(rng, SPLIT_INITIALS[split])
    if rng.random() < 0.5:
        return (f"{first}{int(rng.integers(10))}-{int(rng.integers(10))}"
                f"{pick(rng, CODE_LETTERS)}{int(rng.integers(10))}")
    return f"{first}{pick(rng, CODE_LETTERS)}-{int(rng.integers(1000, 10000))}"


def id_number(rng: np.random.Generator) -> str:
    """Return a fictional identity number like ``"4821-0937-55"``."""
    return (f"{int(rng.integers(1000, 10000))}-{int(rng.integers(0, 10000)):04d}-"
            f"{int(rng.integers(0, 100)):02d}")


def draw_values(rng: np.random.Generator, kind: str, split: str, regions: tuple[str, ...],
                counts: Mapping[str, int]) -> tuple[dict[str, Any], dict[str, int]]:
    """Draw the plain attribute values and relation targets (indices into ``counts``) of one entity.

    ``counts`` holds how many entities of each kind exist so far; relations pick among them.
    """
    def rel(target: str) -> int:
        return int(rng.integers(counts[target]))

    v: dict[str, Any] = {}
    r: dict[str, int] = {}
    if kind == "place":
        v["population"] = int(np.round(np.exp(rng.uniform(np.log(800), np.log(2_500_000)))))
        v["region"] = pick(rng, regions)
        v["founded"] = int(rng.integers(1150, 1990))
        v["elevation_m"] = int(rng.integers(0, 2900))
    elif kind == "person":
        v["id_number"] = id_number(rng)
        v["birth_year"] = int(rng.integers(1940, 2005))
        v["occupation"] = pick(rng, OCCUPATIONS)
        r["city"] = rel("place")
    elif kind == "company":
        v["founded"] = int(rng.integers(1850, 2021))
        r["headquarters"] = rel("place")
        v["industry"] = pick(rng, INDUSTRIES)
        r["ceo"] = rel("person")
        v["brand_colour"] = pick(rng, tuple(PALETTE))
        v["employees"] = int(rng.integers(12, 90_000))
        if counts["company"] > 0 and rng.random() < 0.3:
            r["parent"] = rel("company")
    elif kind == "building":
        r["city"] = rel("place")
        v["opened"] = int(rng.integers(1820, 2023))
        if rng.random() < 0.5:
            v["capacity"] = int(rng.integers(300, 90_000))
        else:
            v["height_m"] = int(rng.integers(12, 640))
        r["architect"] = rel("person")
        r["owner"] = rel("company")
    elif kind == "team":
        v["sport"] = pick(rng, SPORTS)
        v["kit_colour"] = pick(rng, KIT_COLOURS)
        r["home_city"] = rel("place")
        r["venue"] = rel("building")
        v["founded"] = int(rng.integers(1870, 2015))
        r["coach"] = rel("person")
    elif kind == "product":
        v["code"] = product_code(rng, split)
        r["maker"] = rel("company")
        v["release_year"] = int(rng.integers(1995, 2025))
        v["price_usd"] = int(rng.integers(9, 4000))
        v["colour"] = pick(rng, tuple(PALETTE))
    elif kind == "species":
        r["habitat"] = rel("place")
        v["length_cm"] = int(rng.integers(1, 180))
        v["diet"] = pick(rng, DIETS)
        v["colour"] = pick(rng, tuple(PALETTE))
        v["status"] = pick(rng, STATUSES)
        r["discovered_by"] = rel("person")
    return v, r


def base_name(rng: np.random.Generator, kind: str, split: str, home: str | None) -> str:
    """Return a fresh (possibly taken) name for a base entity of ``kind``."""
    if kind == "place":
        return make_word(rng, split) + pick(rng, PLACE_SUFFIXES)
    if kind == "person":
        return f"{make_word(rng, split, (2, 2))} {make_word(rng, split, (2, 3))}"
    if kind == "company":
        return f"{make_word(rng, split)} {pick(rng, COMPANY_SUFFIXES)}"
    if kind == "building":
        return f"{make_word(rng, split)} {pick(rng, BUILDING_TYPES)}"
    if kind == "team":
        return f"{home} {pick(rng, MASCOTS)}"
    if kind == "product":
        return f"{make_word(rng, split)} {pick(rng, PRODUCT_CATEGORIES).capitalize()}"
    return f"{make_word(rng, split)} {pick(rng, ANIMALS)}"


def main_colour(kind: str, values: Mapping[str, Any]) -> str | None:
    """Return the colour a logo must be dominated by (team kit, brand, product colour), if any."""
    return values.get("kit_colour") or values.get("brand_colour") or (
        values.get("colour") if kind == "product" else None)


def draft_entities(rng: np.random.Generator, split: str) -> list[Draft]:
    """Phase 1: draw every entity of the world (base entities and their variants)."""
    book = NameBook()
    regions = tuple(unique_name(rng, book, lambda g: make_word(g, split)) for _ in
                    range(REGIONS_PER_SPLIT))
    drafts: list[Draft] = []
    by_kind: dict[str, list[int]] = {k: [] for k in KINDS}
    counts = {k: 0 for k in KINDS}
    codes = NameBook()
    group = 0
    for kind in KINDS:
        for _ in range(BASE_COUNTS[kind]):
            values, relations = draw_values(rng, kind, split, regions, counts)
            home = None
            if kind == "team":
                home = drafts[by_kind["place"][relations["home_city"]]].name
            name = unique_name(rng, book, lambda g, k=kind, h=home: base_name(g, k, split, h))
            n_variants = int(rng.choice(3, p=[0.55, 0.35, 0.10]))
            members = [Draft(kind, name, group, False, values, relations)]
            for _ in range(n_variants):
                v_values, v_rel = draw_values(rng, kind, split, regions, counts)
                members.append(Draft(kind, variant_name(rng, book, name, kind), group, True,
                                     v_values, v_rel))
            for d in members:
                if kind == "product":
                    while not codes.take(d.values["code"]):
                        d.values["code"] = product_code(rng, split)
                if d.is_distractor:
                    d.logo = replace(logo_variant(rng, members[0].logo), text=initials(d.name))
                else:
                    d.logo = random_logo_spec(rng, initials(d.name), main_colour(kind, d.values))
                by_kind[kind].append(len(drafts))
                drafts.append(d)
            counts[kind] = len(by_kind[kind])
            group += 1
    # relations were drawn as per-kind indices; turn them into global draft indices
    target_kind = {"city": "place", "headquarters": "place", "home_city": "place",
                   "habitat": "place", "ceo": "person", "architect": "person", "coach": "person",
                   "discovered_by": "person", "parent": "company", "owner": "company",
                   "maker": "company", "venue": "building"}
    for d in drafts:
        d.relations = {a: by_kind[target_kind[a]][i] for a, i in d.relations.items()}
    return drafts


def entity_key(kind: str, name: str) -> str:
    """Return the unique key ``"<kind>/<slug>"`` of an entity."""
    return f"{kind}/{slugify(name)}"


def entity_url(d: Draft, drafts: list[Draft]) -> str:
    """Return the page url of a draft (company/team sites, product pages, wiki pages)."""
    slug = slugify(d.name)
    if d.kind == "company":
        return f"https://{slug}.example/"
    if d.kind == "team":
        return f"https://{slug}.example/club"
    if d.kind == "product":
        maker = slugify(drafts[d.relations["maker"]].name)
        return f"https://{maker}.example/products/{slugify(d.values['code'])}"
    return f"https://wiki.m3gym.test/{slug}"


def format_value(value: Any) -> tuple[str, float | None]:
    """Return the display string of an attribute value and its number (or ``None``)."""
    if isinstance(value, int):
        return (f"{value:,}" if value >= 10_000 else str(value)), float(value)
    return str(value), None


def finalize(rng: np.random.Generator, drafts: list[Draft]) -> list[Entity]:
    """Phase 2: turn drafts into entities whose facts carry their page sentences."""
    keys = [entity_key(d.kind, d.name) for d in drafts]
    entities = []
    for i, d in enumerate(drafts):
        facts = []
        for attribute, raw in d.values.items():
            value, numeric = format_value(raw)
            facts.append((attribute, value, numeric, None))
        for attribute, j in d.relations.items():
            facts.append((attribute, drafts[j].name, None, keys[j]))
        order = rng.permutation(len(facts))
        built = []
        for k in order:
            attribute, value, numeric, related = facts[int(k)]
            template = pick(rng, TEMPLATES[(d.kind, attribute)])
            sentence = template.format(name=d.name, value=value)
            sentence = sentence[0].upper() + sentence[1:]
            built.append(Fact(keys[i], attribute, value, sentence, numeric, related))
        by_attr = MappingProxyType({f.attribute: f for f in built})
        url = entity_url(d, drafts)
        entities.append(Entity(
            key=keys[i], kind=d.kind, name=d.name, url=url, facts=tuple(built), group=d.group,
            is_distractor=d.is_distractor, logo=d.logo,  # type: ignore[arg-type]
            image_url=f"https://img.m3gym.test/{d.kind}/{slugify(d.name)}.png",
            _by_attr=by_attr))
    return entities
