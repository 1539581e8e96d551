"""The card that the checks of a chapter cell show under it. It leads with each claim's verdict from the ledger
(the ledger's coloured chip), the claim linked to its ledger row and the paper's location; then, in one line, what
was measured, what was expected within which tolerance and why, in numbers set for reading; a red mark where
the archived paper-scale run (``results/full/``) failed the same claim. The checks of one cell share one card (a
small table, a reason they share said once). :func:`icllib.claims.check_claim` and
:func:`icllib.claims.show_archived_check` show them.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field

from icllib.claim_registry import Claim

# The ledger's verdict colours (light theme; the book's CSS gives the dark ones), inline so that a card reads the
# same in plain Jupyter.
VERDICT_COLOURS = {"reproduced": "#e3f2e6", "corrected": "#fce4d2", "clarified": "#e4ebfa",
                   "not reproduced": "#fadcdc", "inconclusive": "#fdf2c8", "beyond the paper": "#ede3f6",
                   "out of scope": "#ececec"}
PASS_COLOUR, FAIL_COLOUR = "#1a7f37", "#b42318"
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")

# The first card of a claim on a page carries the id the ledger row links back to (card-<anchor>).
_CARDS_SHOWN: set[str] = set()
# The checks of the cell now running, shown as one card when the cell ends (IPython's post_execute).
_PENDING: list["CardCheck"] = []
_HOOKED: list = []


def card_anchor(claim_id: str) -> str:
    """The HTML id of a claim's first card on its chapter page: ``balance.b11-rate`` -> ``card-balance-b11-rate``."""
    if not isinstance(claim_id, str) or not claim_id.strip():
        raise TypeError(f"claim_id must be a claim's id (a non-empty str), got {claim_id!r}")
    # Every character that is not a lower-case letter, a digit or "-" becomes "-" (for a registered id, "." and
    # "_"), so that the anchor can stand in an HTML attribute and a URL whatever the id holds.
    return "card-" + re.sub(r"[^a-z0-9-]", "-", claim_id.lower())


def readable_number(value, digits: int = 4) -> str:
    """A measured or expected value as a reader takes it in: ``4.17721e-15`` -> ``4.177 × 10⁻¹⁵``, ``0.0002091``
    stays, ``3.0`` -> ``3``, ``123456.7`` -> ``1.235 × 10⁵``; bools as ``true``/``false``.

    Raises ``ValueError`` naming ``value`` for anything but a real number or a bool, and ``digits`` below 1.
    """
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise ValueError(f"digits must be a positive int, got {digits!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError(f"value must be a finite real number or a bool, got {value!r}")
    if value == 0:
        return "0"
    if float(value).is_integer() and abs(value) < 1e5:
        return str(int(value))
    exponent = math.floor(math.log10(abs(value)))
    if -4 <= exponent < 5:
        text = f"{value:.{digits}g}"
        if "e" not in text:
            return text
    mantissa, power = f"{value:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = str(int(power)).translate(SUPERSCRIPTS)
    return f"10{power}" if mantissa == "1" else f"{mantissa} × 10{power}"


_TOLERANCE_PART = re.compile(r"^(rtol=|atol=|>= |<= )(\S+)$")


def criterion_of(record: dict) -> dict:
    """A record's criterion as numbers (``rtol``, ``atol``, ``lower``, ``upper``, each None when not given): its
    ``criterion`` field, or, for an older record (an archived paper-scale run), read back from its ``tolerance``
    text (``"rtol=0.05, >= 0.1"``). Raises ``ValueError`` naming ``record`` for a tolerance it cannot read."""
    if not isinstance(record, dict):
        raise ValueError(f"record must be a check's record (a dict), got {record!r:.60}")
    if isinstance(record.get("criterion"), dict):
        return {name: record["criterion"].get(name) for name in ("rtol", "atol", "lower", "upper")}
    criterion = dict.fromkeys(("rtol", "atol", "lower", "upper"))
    names = {"rtol=": "rtol", "atol=": "atol", ">= ": "lower", "<= ": "upper"}
    for part in filter(None, (part.strip() for part in (record.get("tolerance") or "").split(","))):
        match = _TOLERANCE_PART.match(part)
        if match is None:
            raise ValueError(f"record's tolerance {record.get('tolerance')!r} is not one check_claim writes")
        criterion[names[match.group(1)]] = float(match.group(2))
    return criterion


def _relative(rtol: float) -> str:
    return f"{readable_number(rtol * 100, 3)} %"


def expectation_words(record: dict) -> str:
    """What a check expected, in words: ``0.0125 within 5 %``, ``0 ± 10⁻¹²``, ``exactly 3``, ``true``,
    ``at least 0.5``, ``between 0.1 and 0.3``."""
    criterion = criterion_of(record)
    expected = record.get("expected")
    words = []
    if isinstance(expected, bool):
        words.append(readable_number(expected))
    elif expected is not None:
        rtol, atol = criterion["rtol"] or 0, criterion["atol"] or 0
        value = readable_number(expected)
        if rtol and atol:
            words.append(f"{value} ± ({readable_number(atol, 2)} + {_relative(rtol)})")
        elif rtol:
            words.append(f"{value} within {_relative(rtol)}")
        elif atol:
            words.append(f"{value} ± {readable_number(atol, 2)}")
        else:
            words.append(f"exactly {value}")
    lower, upper = criterion["lower"], criterion["upper"]
    if lower is not None and upper is not None:
        words.append(f"between {readable_number(lower)} and {readable_number(upper)}")
    elif lower is not None:
        words.append(f"at least {readable_number(lower)}")
    elif upper is not None:
        words.append(f"at most {readable_number(upper)}")
    return ", ".join(words)


@dataclass(frozen=True)
class CardCheck:
    """One check on a card: the claim, its record (``icllib.claims.check_claim``'s), whether this is the claim's
    first card on the page (then it carries the anchor), and the records of the same claim in the archived
    paper-scale run with that run's date (``archived``: ``{"date": ..., "records": [...]}``, or None)."""

    claim: Claim
    record: dict
    anchor: str | None = None
    archived: dict | None = None
    from_archive: bool = False

    @property
    def failed_at_paper_scale(self) -> list[dict]:
        return [record for record in (self.archived or {}).get("records", []) if not record.get("passed", True)]

    def data(self) -> dict:
        """What a build needs to draw the card again with the ledger's verdicts and archive of its day."""
        kept = ("measured", "expected", "tolerance", "criterion", "why", "passed")
        record = None if self.from_archive else {key: self.record.get(key) for key in kept}
        return {"id": self.claim.id, "record": record, "anchor": self.anchor, "from_archive": self.from_archive}


def _chip(verdict: str) -> str:
    colour = VERDICT_COLOURS.get(verdict, "#ececec")
    slug = "verdict-" + re.sub(r"[^a-z0-9-]", "-", verdict.lower().replace(" ", "-"))
    return (f'<span class="verdict-chip {slug}" style="background:{colour};color:#1d2125;padding:0 .4em;'
            f'border-radius:.3em">{html.escape(verdict)}</span>')


def _claim_link(claim: Claim) -> str:
    row = "claim-" + card_anchor(claim.id).removeprefix("card-")
    return f'<a class="claim-card-id" href="../book/claims.html#{row}">{html.escape(claim.id)}</a>'


def _outcome(check: CardCheck) -> str:
    if check.record is None:
        return '<span class="claim-card-archived">no paper-scale run archived yet</span>'
    if check.from_archive:
        date = html.escape(str(check.archived.get("date", "?"))[:10]) if check.archived else "?"
        return f'<span class="claim-card-archived">archived paper-scale run of {date}</span>'
    if check.record["passed"]:
        return f'<span class="claim-card-outcome" style="color:{PASS_COLOUR}">check passes</span>'
    return f'<strong class="claim-card-outcome" style="color:{FAIL_COLOUR}">check FAILED</strong>'


def _paper_scale_mark(check: CardCheck) -> str:
    failed = check.failed_at_paper_scale
    if not failed:
        return ""
    details = "; ".join(f"measured {readable_number(record['measured'])}, expected {expectation_words(record)}"
                        for record in failed)
    date = str(check.archived.get("date", "?"))[:10]
    return (f' <span class="claim-card-paper-scale-failed" style="color:{FAIL_COLOUR};font-weight:600" '
            f'title="{html.escape(details)}">✗ failed at paper scale ({html.escape(date)}: '
            f'{html.escape(details)})</span>')


def _measured(check: CardCheck) -> str:
    return "—" if check.record is None else readable_number(check.record["measured"])


def _expected(check: CardCheck) -> str:
    return "—" if check.record is None else expectation_words(check.record)


def _measured_line(check: CardCheck) -> str:
    if check.record is None:
        return f"checked in {html.escape(', '.join(check.claim.modes))} mode only"
    record = check.record
    return (f'<span class="claim-card-label">measured</span> <code>{html.escape(readable_number(record["measured"]))}'
            f'</code>; <span class="claim-card-label">expected</span> {html.escape(expectation_words(record))}')


def _reasons(checks: list[CardCheck]) -> str:
    """Each distinct reason once, labelled; where the checks' reasons differ, each names the claims it is for."""
    by_reason: dict[str, list[str]] = {}
    for check in checks:
        if check.record is not None and check.record.get("why"):
            by_reason.setdefault(check.record["why"], [])
            if check.claim.id not in by_reason[check.record["why"]]:
                by_reason[check.record["why"]].append(check.claim.id)
    lines = []
    for why, ids in by_reason.items():
        whose = "" if len(by_reason) == 1 else f" ({', '.join(html.escape(claim_id) for claim_id in ids)})"
        label = "Why these tolerances" if len(checks) > 1 and len(by_reason) == 1 else "Why this tolerance"
        lines.append(f'<p class="claim-card-why" style="margin:.2em 0"><span class="claim-card-label" '
                     f'style="font-style:italic">{label}{whose}:</span> {html.escape(why)}</p>')
    return "".join(lines)


@dataclass
class ClaimCard:
    """The card of one cell's checks: HTML in a page or a notebook, plain text anywhere else."""

    checks: list[CardCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(check.from_archive or check.record["passed"] for check in self.checks)

    def data(self) -> str:
        """The card's checks as JSON (:meth:`CardCheck.data`), carried in the card's ``data-checks``."""
        return json.dumps([check.data() for check in self.checks], separators=(",", ":"))

    def __repr__(self) -> str:
        lines = []
        for check in self.checks:
            record = check.record
            if record is None:
                lines.append(f"[{check.claim.verdict}] {check.claim.id} ({check.claim.location}): checked in "
                             f"{', '.join(check.claim.modes)} mode only; no paper-scale run archived yet")
                continue
            outcome = ("ARCHIVED" if check.from_archive else "PASS" if record["passed"] else "FAILED")
            mark = " [failed at paper scale]" if check.failed_at_paper_scale else ""
            lines.append(f"[{check.claim.verdict}] {check.claim.id} ({check.claim.location}): measured "
                         f"{readable_number(record['measured'])}, expected {expectation_words(record)} "
                         f"[{outcome}]{mark}" + (f". Why: {record['why']}" if record.get("why") else ""))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        state = "pass" if self.passed else "fail"
        colour = PASS_COLOUR if self.passed else FAIL_COLOUR
        first = self.checks[0]
        single = len(self.checks) == 1
        anchor = f' id="{first.anchor}"' if single and first.anchor else ""
        archived = " claim-card-from-archive" if any(check.from_archive for check in self.checks) else ""
        opening = (f'<div class="claim-card claim-card-{state}{archived}{"" if single else " claim-card-group"}"'
                   f'{anchor} data-checks="{html.escape(self.data())}" '
                   f'style="border-left:4px solid {colour};padding-left:.5em">')
        if single:
            body = (f'<p class="claim-card-head" style="margin:0">{_chip(first.claim.verdict)} {_claim_link(first.claim)}'
                    f' <span class="claim-card-location">{html.escape(first.claim.location)}</span>'
                    f'{_paper_scale_mark(first)}</p><p class="claim-card-check" style="margin:.2em 0">'
                    f'{_measured_line(first)}; {_outcome(first)}</p>')
        else:
            rows = "".join(
                f'<tr class="claim-card-row"{f" id={chr(34)}{check.anchor}{chr(34)}" if check.anchor else ""}>'
                f'<td>{_chip(check.claim.verdict)}</td><td>{_claim_link(check.claim)}{_paper_scale_mark(check)}</td>'
                f'<td><code>{html.escape(_measured(check))}</code></td>'
                f'<td>{html.escape(_expected(check))}</td><td>{_outcome(check)}</td></tr>'
                for check in self.checks)
            body = ('<table class="claim-card-table"><thead><tr><th>Verdict</th><th>Claim</th><th>Measured</th>'
                    f'<th>Expected</th><th>This run</th></tr></thead><tbody>{rows}</tbody></table>')
        return opening + body + _reasons(self.checks) + "</div>"


CARD_DATA = re.compile(r'<div class="claim-card [^>]*?data-checks="([^"]*)"')


def drawn_again(page_html: str, claims: dict, archived_checks) -> str:
    """The card that ``page_html`` holds (a cell's output, as a kernel drew it), drawn again from the checks it
    carries (``data-checks``) with today's ledger: each claim's verdict and location from ``claims`` (the
    registry's ``{id: Claim}``), and ``archived_checks(claim_id)`` for the archived paper-scale run (its records
    mark a failure; an archived-only check shows them). Output without a card comes back as it was; so does a
    card naming a claim no longer registered (the ledger's build warns about those)."""
    match = CARD_DATA.search(page_html)
    if match is None:
        return page_html
    checks = []
    for entry in json.loads(html.unescape(match.group(1))):
        claim = claims.get(entry["id"])
        if claim is None:
            return page_html
        archived = archived_checks(claim.id)
        if entry["from_archive"]:
            records = (archived or {}).get("records") or [None]
            checks += [CardCheck(claim, record, entry["anchor"] if index == 0 else None, archived, True)
                       for index, record in enumerate(records)]
        else:
            checks.append(CardCheck(claim, entry["record"], entry["anchor"], archived))
    return ClaimCard(checks)._repr_html_()


def queue_card(check: CardCheck) -> None:
    """Add a check to the card of the cell now running; the card is shown when the cell ends. Nothing happens in
    a plain Python process (no IPython kernel)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    if check.claim.id not in _CARDS_SHOWN:
        check = CardCheck(check.claim, check.record, card_anchor(check.claim.id), check.archived, check.from_archive)
        _CARDS_SHOWN.add(check.claim.id)
    _PENDING.append(check)
    if not _HOOKED:
        shell.events.register("post_execute", show_pending_card)
        _HOOKED.append(shell)


def show_pending_card() -> None:
    """Display the card of the checks the cell made (IPython's post_execute, which also draws a cell's figures)."""
    if not _PENDING:
        return
    from IPython.display import display

    card = ClaimCard(list(_PENDING))
    _PENDING.clear()
    display(card)
