"""The chapters' figures on every screen: each opens full size on a tap, a multi-panel figure is served stacked to a
phone, its alt text is a line of its own and its caption is linked to it.

- A figure's image is a link to its PNG (``a.figure-full-size``): a phone's browser opens it full size and zooms it,
  offline.
- A notebook output that carries a stacked variant (``icllib.figure_screens``: its panels in one column, in the
  output's ``image/png`` metadata) becomes a second image node beside the first (class ``stacked-variant``), so
  that Sphinx copies it to ``_images/``; the page shows one ``<picture>`` whose ``<source>`` serves the stacked
  variant to a screen narrower than :data:`NARROW_SCREEN`.
- The alt text is the cell's ``mystnb.image.alt`` (one line, no TeX: what the figure shows); the caption, which says
  what to see, is tied to the image by ``aria-describedby``. A figure without its own alt text is a build warning.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import re
import urllib.parse

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

STACKED_KEY = "stacked"   # icllib.figure_screens.STACKED_KEY (the extension does not import the library for it)
STACKED_CLASS = "stacked-variant"
# Below this width the side-by-side panels of a two-panel figure would shrink under half their size.
NARROW_SCREEN = "screen and (max-width: 600px)"
# An alt text is one line: what the figure shows, not what to see in it (the caption says that).
ALT_MAX_CHARACTERS = 160
TEX_IN_ALT = re.compile(r"\\[A-Za-z]+|\$|[\w|)]_[{\w]|[\w|)]\^[{\w]")


def render_stacked_variants():
    """Make myst-nb's image renderer add the stacked variant of a figure as a second image node."""
    from myst_nb.core.render import NbElementRenderer

    if getattr(NbElementRenderer.render_image, "_adds_stacked_variants", False):
        return
    render_image = NbElementRenderer.render_image

    def render_image_and_its_stacked_variant(self, data):
        rendered = render_image(self, data)
        stacked = data.output_metadata.get(data.mime_type, {}).get(STACKED_KEY)
        if data.mime_type != "image/png" or not stacked or len(rendered) != 1:
            return rendered
        picture = base64.b64decode(stacked)
        uri = self.write_file([f"{hashlib.sha256(picture).hexdigest()}.png"], picture, overwrite=False,
                              exists_ok=True)
        variant = nodes.image(uri=uri, classes=[STACKED_CLASS])
        if "alt" in rendered[0]:
            variant["alt"] = rendered[0]["alt"]
        return [*rendered, variant]

    render_image_and_its_stacked_variant._adds_stacked_variants = True
    NbElementRenderer.render_image = render_image_and_its_stacked_variant


def alt_problem(alt: str, caption: str) -> str | None:
    """What is wrong with a figure's alt text, or None: missing, the caption again, longer than a line, or TeX."""
    alt = " ".join(alt.split())
    if not alt:
        return "it has no alt text of its own (give the cell mystnb={'image': {'alt': '...'}}, one line)"
    if alt == " ".join(caption.split()):
        return "its alt text is its caption (the alt text says what the figure shows, in one line)"
    if len(alt) > ALT_MAX_CHARACTERS:
        return f"its alt text has {len(alt)} characters, more than a line ({ALT_MAX_CHARACTERS})"
    if TEX_IN_ALT.search(alt):
        return f"its alt text holds TeX ({TEX_IN_ALT.search(alt).group(0)!r}): write it in words"
    return None


def link_captions_and_check_alt_texts(app, doctree):
    """Give each figure's caption an id that its image names (``aria-describedby``); warn about an alt text that
    does not read as one (:func:`alt_problem`)."""
    for figure in doctree.findall(nodes.figure):
        caption = next(figure.findall(nodes.caption), None)
        images = [image for image in figure.findall(nodes.image) if STACKED_CLASS not in image["classes"]]
        if caption is None or not images or not figure["ids"]:
            continue
        caption_id = f"{figure['ids'][0]}-caption"
        if caption_id not in caption["ids"]:
            caption["ids"].append(caption_id)
        for image in images:
            image["describedby"] = caption_id
            problem = alt_problem(image.get("alt", ""), caption.astext())
            if problem:
                logger.warning(f"figure {figure['ids'][0]}: {problem}", location=image)


def _final_uri(translator, node) -> str:
    """The address the page gives ``node``'s image (Sphinx's own rewrite in its ``visit_image``)."""
    uri = node["uri"]
    if uri in translator.builder.images:
        return posixpath.join(translator.builder.imgpath, urllib.parse.quote(translator.builder.images[uri]))
    return uri


def _stacked_sibling(node):
    parent = node.parent
    index = parent.index(node)
    following = parent[index + 1] if index + 1 < len(parent) else None
    return following if isinstance(following, nodes.image) and STACKED_CLASS in following["classes"] else None


def visit_image(self, node):
    """An image in a figure: a link to itself full size around a ``<picture>`` that serves a phone its stacked
    variant, with the caption as its description. Any other image as Sphinx writes it."""
    if STACKED_CLASS in node["classes"]:
        raise nodes.SkipNode   # written as the <source> of the image before it
    figure = node.parent
    while figure is not None and not isinstance(figure, nodes.figure):
        figure = figure.parent
    if figure is None or isinstance(node.parent, nodes.reference):
        type(self).visit_image(self, node)
        return
    stacked = _stacked_sibling(node)
    full_size = _final_uri(self, node)
    self.body.append(f'<a class="reference figure-full-size" href="{full_size}" '
                     'title="Open the figure full size">')
    if stacked is not None:
        self.body.append(f'<picture><source media="{NARROW_SCREEN}" srcset="{_final_uri(self, stacked)}">')
    before = len(self.body)
    type(self).visit_image(self, node)
    if node.get("describedby"):
        self.body[before:] = [part.replace("<img ", f'<img aria-describedby="{node["describedby"]}" ', 1)
                              for part in self.body[before:]]
    self.body.append(("</picture>" if stacked is not None else "") + "</a>\n")


def depart_image(self, node):
    type(self).depart_image(self, node)


def setup(app):
    render_stacked_variants()
    app.connect("doctree-read", link_captions_and_check_alt_texts)
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
