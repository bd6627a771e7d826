"""Page reading (m3gym.agents.heuristic.web): bodies, facts, two-hop links."""

from __future__ import annotations

from m3gym.agents.heuristic import lookup, teams, web


def test_page_reading_helpers() -> None:
    page = ("[c2] fetch_webpage: Bapedon Hall - M3 Wiki\nhttps://wiki.m3gym.test/bapedon-hall\n\n"
            "Bapedon Hall is a building. The doors of Bapedon Hall first opened in 1961. "
            "Tomefo Systems holds the title to Bapedon Hall.\n\n"
            "Logo image: https://img.m3gym.test/building/bapedon-hall.png\n\nLinks:\n"
            "- Rekis Kazopul - M3 Wiki: https://wiki.m3gym.test/rekis-kazopul\n"
            "- Tomefo Systems - Official site: https://tomefo-systems.example/\n")
    body = web.page_body(page)
    assert "Logo image" not in body and "1961" in body
    q = "In what year did the building whose sign is shown open?"
    assert web.fact_from_body(body, ("1958", "1961", "1970"), q) == "1961"
    q2 = "In what year was the company that owns the building whose sign is shown founded?"
    assert web.fact_from_body(body, ("1890", "1902"), q2) is None
    assert web.hop_kind(q2) == "official site"
    assert web.ranked_links(body, web.page_links(page), q2)[0] == "https://tomefo-systems.example/"
    assert lookup.kit_colour_in("The Boko Wolves date back to 1870. Fans of the Boko Wolves dress "
                            "in black, the club colour.") == "black"
    assert teams.team_in_question("How many players of the Boko Wolves are inside the two goal "
                                  "areas?") == "Boko Wolves"
