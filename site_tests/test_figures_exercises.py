"""Figures for every screen and exercises as cells (issue 37), on the built site: on a phone no figure shrinks below
half its size without a link to it full size, a multi-panel figure is served stacked, every figure's alt text is a
line of its own with its caption linked, and each chapter's exercises sit one to a cell, each with its answer cell,
under a line that says whether the page shows the solutions."""

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_site import chapter_pages  # noqa: E402

PHONE = 400
# Below this share of its natural width a figure's labels are 3-4 px: it must open full size on a tap.
LEAST_SCALE = 0.5

# Each figure image of the page as laid out: its shown and natural widths, the file it shows (a <picture> may have
# picked its stacked variant), the link around it and where that link goes.
FIGURES = r"""
JSON.stringify(Array.from(document.querySelectorAll("article figure img")).filter((img) => img.getClientRects().length)
  .map((img) => ({figure: (img.closest("figure") || {}).id || "", shown: img.getBoundingClientRect().width,
                  natural: img.naturalWidth, current: img.currentSrc, src: img.src,
                  stacked: Boolean(img.closest("picture") && img.closest("picture").querySelector("source")),
                  link: img.closest("a[href]") ? img.closest("a[href]").href : ""})))
"""


def chapter_files(site) -> list[Path]:
    """The chapter pages the site holds (a partial build, ``make chapter``, holds one; test_site checks that the
    whole site has them all)."""
    return [site / f"{page}.html" for page in chapter_pages() if (site / f"{page}.html").is_file()]


@pytest.fixture(scope="module")
def browser():
    from browser import open_chromium

    chromium = open_chromium()
    yield chromium
    chromium.close()


def local_file(url: str) -> Path:
    return Path(unquote(urlparse(url).path))


def test_in_a_real_browser_no_figure_is_below_half_its_size_on_a_phone_without_a_full_size_link(site, browser,
                                                                                               measured):
    """At 400 px every figure of every chapter either shows at half its natural width or more, or is a link to its
    picture full size (a file of the site); a multi-panel figure served stacked shows at half its width or more."""
    problems, small, stacked, total = [], 0, 0, 0
    browser.color_scheme("light")
    for page in chapter_files(site):
        browser.load(page.as_uri(), PHONE)
        for image in json.loads(browser.evaluate(FIGURES)):
            total += 1
            name = f"{page.relative_to(site)} {image['figure']}"
            if not image["natural"]:
                problems.append(f"{name}: the picture did not load ({image['current']})")
                continue
            scale = image["shown"] / image["natural"]
            if image["stacked"]:
                stacked += 1
                if scale < LEAST_SCALE:
                    problems.append(f"{name}: its stacked variant shows at {scale:.2f} of its size on a phone")
            if scale >= LEAST_SCALE:
                continue
            small += 1
            if not image["link"]:
                problems.append(f"{name}: {scale:.2f} of its size at {PHONE} px, with no link to it full size")
            elif not local_file(image["link"]).is_file() or local_file(image["link"]).suffix != ".png":
                problems.append(f"{name}: its full-size link {image['link']} is not a picture of the site")
    measured.setdefault("Figures on a phone", []).append(
        f"{total} figures at {PHONE} px: {stacked} served stacked, {small} below half size (each a link to it "
        "full size)")
    assert total, "no figures found on the chapter pages"
    assert not problems, "\n".join(problems)


def test_every_figure_opens_full_size_and_its_stacked_variant_is_a_file_of_the_site(site):
    problems, count = [], 0
    for page in chapter_files(site):
        for figure in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select("article figure"):
            for image in figure.select("img"):
                count += 1
                link = image.find_parent("a", href=True)
                name = f"{page.relative_to(site)} {figure.get('id')}"
                if link is None or "figure-full-size" not in link.get("class", []):
                    problems.append(f"{name}: the image is no link to itself full size")
                elif not (page.parent / link["href"]).is_file():
                    problems.append(f"{name}: its full-size link {link['href']} names no file")
                for source in image.find_parent("picture").select("source") if image.find_parent("picture") else []:
                    if not (page.parent / source["srcset"]).is_file():
                        problems.append(f"{name}: its stacked variant {source['srcset']} names no file")
    assert count and not problems, "\n".join(problems)


TEX = re.compile(r"\\[A-Za-z]+|\$|[\w|)]_[{\w]|[\w|)]\^[{\w]")


def test_every_figures_alt_text_is_one_line_of_its_own_without_tex_and_its_caption_is_linked(site):
    """An alt text says what the figure shows in one line (at most 160 characters), in words (no TeX), and is not
    the caption, which says what to see and which the image names with aria-describedby."""
    problems, count = [], 0
    for page in chapter_files(site):
        for figure in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select("article figure"):
            caption = figure.select_one("figcaption")
            caption_text = " ".join(caption.get_text(" ").split()) if caption else ""
            for image in figure.select("img"):
                count += 1
                alt = image.get("alt", "")
                name = f"{page.relative_to(site)} {figure.get('id')}"
                if not alt.strip() or "\n" in alt.strip() or len(alt) > 160:
                    problems.append(f"{name}: alt text not one line of at most 160 characters: {alt[:80]!r}")
                if TEX.search(alt):
                    problems.append(f"{name}: alt text holds TeX: {alt[:80]!r}")
                if alt.strip() and alt.strip() in caption_text:
                    problems.append(f"{name}: the alt text repeats the caption")
                described = image.get("aria-describedby")
                if not described or not figure.find(id=described) or not figure.find(id=described).find_parent(
                        "figcaption") and figure.find(id=described).name != "figcaption":
                    problems.append(f"{name}: the caption is not linked to the image (aria-describedby)")
    assert count and not problems, "\n".join(problems)


def test_each_exercise_on_a_page_is_followed_by_its_answer_cell(site):
    """On each page with exercises: one exercise per cell, each followed by a code cell that checks an answer or
    is for discussion notes; and a line under the heading that says whether the page shows the solutions."""
    problems, count = [], 0
    for page in chapter_files(site):
        document = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        exercises = document.select("article div.exercise")
        if not exercises:
            continue
        shown = document.select_one("p.solutions-shown")
        if shown is None:
            problems.append(f"{page.relative_to(site)}: no line says whether the solutions are shown")
        for exercise in exercises:
            count += 1
            label = (exercise.get("id") or "").strip()
            cell = exercise.find_next("div", class_="cell")
            source = cell.get_text() if cell else ""
            if not re.search(r"answer = \.\.\.", source) and "for discussion" not in source:
                problems.append(f"{page.relative_to(site)} {label}: no answer cell after the exercise")
    assert count and not problems, "\n".join(problems)
