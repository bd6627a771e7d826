"""The offline web as the heuristic plans read it: search results, pages, facts, links.

A search result text gives ``(url, title)`` pairs (:func:`result_urls`) or ``(url, snippet)``
pairs (:func:`search_results`); a fetched page its prose (:func:`page_body`) and its links
(:func:`page_links`). :func:`fetch_and_extract` and :func:`follow_search` are sub-plans that
fetch pages until one states exactly one of the choices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rapidfuzz import fuzz

from m3gym.agents.heuristic.text import choice_in_text, norm_code
from m3gym.agents.heuristic.view import EpisodeView, Plan

_STOP = frozenset("what which where when who whose this that does with from into have their "
                  "there about these those year name many much does shown sign image photo "
                  "look find logo crest club company building venue person badge the and was "
                  "how not also".split())


def result_urls(text: str) -> list[tuple[str, str]]:
    """Return ``(url, title)`` pairs of a search result text, in rank order."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*(https?://\S+)\s*$", line)
        if m:
            title = re.sub(r"^\s*\d+\.\s*", "", lines[i - 1]) if i else ""
            out.append((m.group(1), title.strip()))
    return out


def page_links(text: str) -> list[tuple[str, str]]:
    """Return ``(title, url)`` of a fetched page's links."""
    _, _, links = text.partition("\nLinks:")
    return [(m.group(1).strip(), m.group(2))
            for m in re.finditer(r"^- (.+?): (https?://\S+)\s*$", links, flags=re.MULTILINE)]


def page_body(text: str) -> str:
    """Return a fetched page's prose (without title, url, logo line and links)."""
    body = text.partition("\nLinks:")[0]
    lines = [ln for ln in body.splitlines()[2:] if not ln.startswith("Logo image:")]
    return "\n".join(lines)


def _stem(word: str) -> str:
    """Return ``word`` without a common suffix, cut to 6 letters ("owned" -> "own")."""
    for suf in ("ing", "ed", "es", "s", "er"):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            word = word[:-len(suf)]
            break
    return word[:6]


def _stems(text: str) -> set[str]:
    """Return the stems of the content words of ``text``."""
    return {_stem(w) for w in re.findall(r"[a-z]+", text.lower())
            if len(w) >= 3 and w not in _STOP}


def sentences(text: str) -> list[str]:
    """Return the sentences of a page's prose."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def fact_from_body(body: str, choices: Sequence[str], question: str) -> str | None:
    """Return the choice a page states, preferring the sentence closest to the question."""
    hits = choice_in_text(body, choices)
    if not hits:
        return None
    if len({c for _, c in hits}) == 1:
        return hits[0][1]
    q = _stems(question)
    best: tuple[int, int, str] | None = None
    for k, sent in enumerate(sentences(body)):
        for _, c in choice_in_text(sent, choices):
            score = len(q & _stems(sent.replace(c, " ")))
            if best is None or (score, -k) > (best[0], best[1]):
                best = (score, -k, c)
    return best[2] if best else hits[0][1]


HOP_KINDS: dict[str, str] = {
    "company": "official site", "maker": "official site", "town": "m3 wiki",
    "home ground": "m3 wiki", "club": "club site",
}
"""Noun a two-hop question goes through -> how the titles of such pages end."""


def hop_kind(question: str) -> str | None:
    """Return the title ending of the page a two-hop question passes through, if it names one.

    "... the company that owns the building ..." -> "official site"; "... the town where ..."
    -> "m3 wiki".
    """
    m = re.search(r"the (company|maker|town|home ground|club)(?: of| that| where| whose)",
                  question)
    return HOP_KINDS[m.group(1)] if m else None


def ranked_links(body: str, links: Sequence[tuple[str, str]], question: str) -> list[str]:
    """Return link urls: of the kind the question passes through, then named near its words."""
    q = _stems(question)
    kind = hop_kind(question)
    scored = []
    for order, (title, url) in enumerate(links):
        score = 0
        for sent in sentences(body):
            if title.split(" - ")[0].lower() in sent.lower():
                score = max(score, len(q & _stems(sent)))
        if kind and title.lower().endswith(kind):
            score += 3
        scored.append((-score, order, url))
    return [u for _, _, u in sorted(scored)]


def fetch_and_extract(view: EpisodeView, url: str, hops: int = 2) -> Plan:
    """Fetch ``url``; return the choice it states, else follow the best links (``hops`` deep)."""
    queue = [url]
    seen: set[str] = set()
    depth = 0
    while queue and depth <= hops and view.calls_used < view.budget - 1:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        out = yield [{"name": "fetch_webpage", "arguments": {"url": url}}]
        body = page_body(out.text)
        found = fact_from_body(body, view.choices, view.question)
        if found is not None:
            return found
        queue = ranked_links(body, page_links(out.text), view.question)[:2] + queue
        depth += 1
    return None


def search_then_fetch(view: EpisodeView, query: str, key: str | None = None) -> Plan:
    """``web_search`` ``query``; fetch the hit whose title best matches ``key``; extract."""
    out = yield [{"name": "web_search", "arguments": {"query": query}}]
    results = result_urls(out.text)
    if not results:
        return None
    if key:
        k = key.lower()
        results.sort(key=lambda r: -fuzz.ratio(k, r[1].split(" - ")[0].lower()))
    return (yield from fetch_and_extract(view, results[0][0]))


def follow_search(view: EpisodeView, search: dict[str, Any], key: str | None = None) -> Plan:
    """Run a search, fetch the best result, and follow links until a page names one choice."""
    out = yield [search]
    results = search_results(out.text)
    if key:
        results.sort(key=lambda r: -fuzz.partial_ratio(norm_code(key), norm_code(r[1])))
    queue = [url for url, _ in results[:2]]
    seen: set[str] = set()
    while queue and view.calls_used < view.budget - 1:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        page = yield [{"name": "fetch_webpage", "arguments": {"url": url}}]
        body, links = page_parts(page.text)
        hits = {c for _, c in choice_in_text(body, view.choices)}
        if len(hits) == 1:
            return hits.pop()
        queue = links + queue
    return None


def search_results(text: str) -> list[tuple[str, str]]:
    """Return ``(url, snippet)`` pairs of a search result text, in rank order."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*(https?://\S+)\s*$", line)
        if m:
            snippet = " ".join(lines[max(0, i - 1):i + 2])
            out.append((m.group(1), snippet))
    return out


def page_parts(text: str) -> tuple[str, list[str]]:
    """Return a fetched page's body (without its header line and links) and its link URLs."""
    body, _, links = text.partition("\nLinks:")
    body_lines = body.splitlines()[2:]
    urls = re.findall(r"(https?://\S+)\s*$", links, flags=re.MULTILINE)
    return "\n".join(body_lines), urls
