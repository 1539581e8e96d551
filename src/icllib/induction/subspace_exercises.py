"""Self-checks for the exercises of the chapter ``induction_subspace`` (the 19-dimensional subspace of Theorem 1).

Each judge computes its expected value with the chapter's own functions: the parameter count and the basis of
:mod:`icllib.induction.subspace`, and the data of :mod:`icllib.induction.model`. The chapter's Exercises section
imports ``check``.
"""

from __future__ import annotations

import torch

from icllib.induction import model as ic
from icllib.induction import subspace as isp
from icllib.config import torch_generator
from icllib.exercises import SelfCheck, SelfChecks, number_near, same_names

#: The paper's width for the share of weight space that training uses (App. D, Fig. 4).
PAPER_D = 32
#: The pseudo-parameters that get a non-zero gradient: all but beta_3 .. beta_6 (the chapter's erratum E8).
_FROZEN = ("beta3", "beta4", "beta5", "beta6")
#: App. C's width and batch, at which the learning-rate exercise asks for the batch Hessian.
APP_C_D, APP_C_BATCH = 16, 512
#: The width of the random-share exercise.
RANDOM_SHARE_D = 8


def _moving_share() -> float:
    moving = [name for name in ic.PSEUDO_PARAMETERS if name not in _FROZEN]
    return len(moving) / isp.parameter_count(PAPER_D)


def _batch_hessian_top(batches: int = 8) -> float:
    """The largest eigenvalue of the Hessian of the batch mean of ||y - z||^2 in the block of W3 that reads the
    query's content, at zero weights: 2 lambda_max of the sample second moment of a_q, averaged over batches."""
    generator = torch_generator(6)
    tops = []
    for _ in range(batches):
        X, _ = ic.sample_icl_batch(APP_C_D, 4, APP_C_BATCH, generator=generator)
        queries = X[:, -1, :APP_C_D]
        tops.append(2.0 * float(torch.linalg.eigvalsh(queries.T @ queries / APP_C_BATCH).max()))
    return sum(tops) / len(tops)


def _random_share() -> float:
    """The expected share of a random triple's squared norm in the subspace: its dimension over the dimension of
    weight space, since i.i.d. Gaussian entries put the same expected energy on every orthonormal direction."""
    return isp.subspace_basis(RANDOM_SHARE_D).shape[0] / isp.parameter_count(RANDOM_SHARE_D)


SELF_CHECKS = SelfChecks(
    "induction_subspace",
    SelfCheck(
        label="ex-induction-subspace-lr",
        asks="the largest eigenvalue of the batch Hessian at D = 16, B = 512 (one number; the tolerance covers the "
             "spread from batch to batch)",
        judge=number_near(_batch_hessian_top, rtol=0.1),
        hint="the population Hessian is the wrong object: compute the top eigenvalue of the sample second moment of "
             "the query contents of one batch, or use the edge of the Marchenko-Pastur law",
        wrong=2.0,  # the population value 2 E[a^T a] = 2 I
    ),
    SelfCheck(
        label="ex-induction-subspace-moving-share",
        asks="the fraction of the weights' dimensions that training from zero explores at D = 32",
        judge=number_near(_moving_share, rtol=1e-6),
        hint="count the directions whose gradient is not identically zero, not the dimension of the subspace, and "
             "divide by the number of raw weights",
        wrong=19 / (28 * PAPER_D**2),  # the dimension of the subspace, not the directions that move
    ),
    SelfCheck(
        label="ex-induction-subspace-random-share",
        asks="the mean share of the squared norm of a random triple (W1, W2, W3) that lies in the subspace at D = 8 "
             "(the tolerance is four Monte-Carlo standard errors of a mean over 500 triples)",
        judge=number_near(_random_share, rtol=0.06),
        hint="project all three matrices at once and divide the summed squared norm of the projections by the "
             "summed squared norm of the weights; each matrix has its own count of basis directions",
        wrong=3 / (4 * RANDOM_SHARE_D**2),  # the share of W1 alone, taken for the whole triple
    ),
    SelfCheck(
        label="ex-induction-subspace-15",
        asks="the names of the pseudo-parameters (from ic.PSEUDO_PARAMETERS) that a positional embedding of the "
             "query would set moving",
        judge=same_names(lambda: _FROZEN),
        hint="follow the gradient of each block-row of W2 back to the row of H1 at the query: which block of that "
             "row is zero only because the query has no position?",
        wrong=("alpha3", "beta2", "gamma3"),  # the induction head's parameters, which move already
    ),
)
check = SELF_CHECKS.check
