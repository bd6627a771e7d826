"""The retrieval tools' exact outputs: result text, payload and errors, pinned."""

import pytest

from m3gym.state import ImageState
from m3gym.tools.base import ToolContext, ToolError
from m3gym.tools.web import (
    DownloadImageArgs,
    FetchWebpageArgs,
    ImageSearchArgs,
    WebSearchArgs,
    clean_text,
    download_image,
    fetch_webpage,
    image_search,
    results_text,
    web_search,
)
from m3gym.web import build_world


@pytest.fixture(scope="module")
def world():
    return build_world(0, "train")


def ctx_with(world, images=()):
    state = ImageState()
    for im in images:
        state.add_root(im)
    return ToolContext(state=state, visible_images=len(state), world=world)


def test_results_text_by_hand():
    rows = [{"title": "A", "url": "https://a", "snippet": "about a"},
            {"title": "B", "url": "https://b", "snippet": ""}]
    assert results_text("Head:", rows) == \
        "Head:\n1. A\n   https://a\n   about a\n2. B\n   https://b"
    assert results_text("Head:", []) == "Head:\nNo results."


def test_clean_text_limit_is_inclusive():
    assert clean_text("  abc ", "query", 3) == "abc"
    with pytest.raises(ValueError, match="4 characters; at most 3"):
        clean_text("abcd", "query", 3)
    with pytest.raises(ValueError, match="must not be empty"):
        clean_text("   ", "query", 3)


def test_web_search_output_and_top_k(world):
    page = world.pages[0]
    out = web_search(ctx_with(world), WebSearchArgs(query=page.title, top_k=2))
    hits = world.search(page.title, 2)
    assert len(hits) == 2
    rows = [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits]
    assert out.payload == {"query": page.title, "results": rows}
    assert out.text == results_text(f"Search results for {page.title!r}:", rows)
    assert all(r["snippet"] and f"   {r['snippet']}" in out.text for r in rows)


def test_fetch_webpage_output_and_unknown_url(world):
    page = world.pages[0]
    out = fetch_webpage(ctx_with(world), FetchWebpageArgs(url=page.url, max_chars=100))
    assert out.text == page.text(100) != page.text()
    assert out.text.endswith("[... truncated at 100 characters]")
    assert out.payload == {"url": page.url, "title": page.title}
    url = "https://nowhere.test/" + "x" * 300
    with pytest.raises(ToolError) as err:
        fetch_webpage(ctx_with(world), FetchWebpageArgs(url=url))
    assert str(err.value) == (f"cannot fetch {url[:200]!r}: no such page in the offline corpus "
                              "(use urls from search results)")


def test_download_and_image_search_outputs(world):
    entity = world.entities[0]
    ctx = ctx_with(world)
    out = download_image(ctx, DownloadImageArgs(url=entity.url))
    assert out.text == f"Downloaded the image of {entity.name} from {entity.image_url}."
    assert out.payload == {"url": entity.url, "image_url": entity.image_url}
    assert out.parent is None and out.image is not None
    url = "https://nowhere.test/" + "y" * 300
    with pytest.raises(ToolError) as err:
        download_image(ctx, DownloadImageArgs(url=url))
    assert str(err.value) == (f"cannot download {url[:200]!r}: no such page or image in the "
                              "offline corpus")
    ctx.downloads = ctx.max_downloads
    with pytest.raises(ToolError) as err:
        download_image(ctx, DownloadImageArgs(url=entity.url))
    assert str(err.value) == (f"download budget exhausted: at most {ctx.max_downloads} downloads "
                              "per episode")
    logo_ctx = ctx_with(world, [world.logo(entity)])
    found = image_search(logo_ctx, ImageSearchArgs(image_index=0, top_k=3))
    hits = world.image_search(world.logo(entity), 3)
    rows = [{"title": h.title, "url": h.url, "image_url": h.image_url} for h in hits]
    assert found.payload == {"image_index": 0, "results": rows}
    assert found.text == results_text("Pages with images matching image 0:", rows)
    assert rows[0]["url"] == entity.url
