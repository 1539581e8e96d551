"""The chapters' Exercises sections say which edition the reader holds: the published pages show every solution one
click away, and say so, linking the student edition of the page (``_ext/course.py``), which leaves them out."""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

EXERCISES_TITLE = "Exercises"


def exercises_section(doctree) -> nodes.section | None:
    """The page's section titled "Exercises" (a chapter's, at any depth), or None."""
    for section in doctree.findall(nodes.section):
        if section.children and isinstance(section[0], nodes.title) and section[0].astext() == EXERCISES_TITLE:
            return section
    return None


def say_whether_solutions_are_shown(app, doctree):
    """Under a chapter's Exercises heading, one paragraph: in the published edition, that the solutions are on the
    page and where the student edition is; in the student edition, that they are left out."""
    if not app.env.docname.startswith("notebooks/"):
        return
    section = exercises_section(doctree)
    if section is None:
        return
    name = Path(app.env.docname).name
    up = "../" * app.env.docname.count("/")
    paragraph = nodes.paragraph(classes=["solutions-shown"])
    if app.config.course_edition == "student":
        paragraph += nodes.Text("This is the student edition: the exercises come without their solutions. Each "
                                "answer cell's check says whether an answer is right, and gives a hint when not.")
    else:
        paragraph += nodes.strong(text="The solutions are shown on this page")
        paragraph += nodes.Text(", each one click away under its exercise. For a class, ")
        if app.config.course_pack:
            paragraph += nodes.Text("give students the ")
            paragraph += nodes.reference(text="student edition of this chapter",
                                         refuri=f"{up}course/student/notebooks/{name}.html")
            paragraph += nodes.Text(", which leaves them out (its notebook and PDF too).")
        else:
            paragraph += nodes.Text("the student edition, which leaves them out, is built by make course.")
    section.insert(1, paragraph)


def setup(app):
    app.connect("doctree-read", say_whether_solutions_are_shown)
