"""The card a check shows where the claim is made: under the chapter's cell, the claim linked to its ledger row, the
paper's location, the measured value against the expected one or the bounds, the tolerance and its reason, pass or
fail (:func:`icllib.claims.check_claim` shows it)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from icllib.claim_registry import Claim

# Each check shows a compact card under its cell: the claim linked to its ledger row, the paper's location, the
# measured value against the expected one or the bounds, the tolerance and its reason, pass or fail. The first
# card of a claim on a page carries the id the ledger row links back to (card-<anchor>).
_CARDS_SHOWN: set[str] = set()


def card_anchor(claim_id: str) -> str:
    """The HTML id of a claim's first card on its chapter page: ``balance.b11-rate`` -> ``card-balance-b11-rate``."""
    if not isinstance(claim_id, str) or not claim_id.strip():
        raise TypeError(f"claim_id must be a claim's id (a non-empty str), got {claim_id!r}")
    # Every character that is not a lower-case letter, a digit or "-" becomes "-" (for a registered id, "." and
    # "_"), so that the anchor can stand in an HTML attribute and a URL whatever the id holds.
    return "card-" + re.sub(r"[^a-z0-9-]", "-", claim_id.lower())


def _number_text(value) -> str:
    return str(value) if isinstance(value, bool) else f"{value:.6g}"


@dataclass(frozen=True)
class ClaimCard:
    """What a check shows: HTML in a page or a notebook, plain text anywhere else."""

    claim: Claim
    record: dict
    anchor: str | None

    def _target(self) -> str:
        record = self.record
        if record["expected"] is None:
            return record["tolerance"]
        if isinstance(record["expected"], bool):
            return f"expected {record['expected']}"
        return f"expected {_number_text(record['expected'])}, {record['tolerance']}"

    def __repr__(self) -> str:
        outcome = "PASS" if self.record["passed"] else "FAILED"
        return (f"[{outcome}] {self.claim.id} ({self.claim.location}; ledger: {self.claim.verdict}): measured "
                f"{_number_text(self.record['measured'])}, {self._target()}"
                + (f". Why: {self.record['why']}" if self.record["why"] else ""))

    def _repr_html_(self) -> str:
        passed = self.record["passed"]
        outcome = "pass" if passed else "FAILED"
        row = "claim-" + card_anchor(self.claim.id).removeprefix("card-")
        anchor = f' id="{self.anchor}"' if self.anchor else ""
        why = html.escape(self.record["why"]) if self.record["why"] else ""
        # the border's colour is inline so that a failed check stands out in plain Jupyter too; the text keeps the
        # page's colours (the book's CSS gives the badge light and dark variants)
        colour = "#1a7f37" if passed else "#b42318"
        return (f'<div class="claim-card claim-card-{"pass" if passed else "fail"}"{anchor} '
                f'style="border-left:4px solid {colour};padding-left:.5em"><strong>{outcome}</strong> '
                f'<a class="claim-card-id" href="../book/claims.html#{row}">{html.escape(self.claim.id)}</a> '
                f'({html.escape(self.claim.location)}; ledger: {html.escape(self.claim.verdict)})<br>measured '
                f'<code>{html.escape(_number_text(self.record["measured"]))}</code>, {html.escape(self._target())}'
                f'{"<br>" if why else ""}{why}</div>')


def show_card(claim: Claim, record: dict) -> None:
    """Display the card of a check when a notebook kernel runs it (nothing in a plain Python process)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    anchor = None if claim.id in _CARDS_SHOWN else card_anchor(claim.id)
    _CARDS_SHOWN.add(claim.id)
    display(ClaimCard(claim, record, anchor))


