"""Every public function of the API page answers bad input with a ``ValueError`` or ``TypeError`` naming the
parameter, and gives finite results for valid input.

The functions come from the modules ``book/api.md`` documents (``automodule``, restricted to ``:members:``
where the page lists them), found with :mod:`inspect`; a new public function is swept without a test of its
own, but must have an entry in ``VALID`` (the sweep fails without one). Dataclasses are records of values,
not functions, and are left out. Each required argument of a valid call is replaced by each value of
``BAD``; the call must raise ``ValueError`` or ``TypeError`` whose message names that parameter, unless
``ACCEPTED`` says why the value is in fact valid there (and then the call must return). ``KNOWN_GAPS`` lists
the cases not fixed yet
(strict xfail: a fixed gap fails the sweep until it leaves the list).
"""

import dataclasses
import functools
import importlib
import inspect
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from icllib.balance import model as balance
from icllib.balance import theory as balance_theory
from icllib.induction import model as ic
from icllib.induction import subspace as isp
from icllib.lsa import model as lsa
from icllib.lsa import theory as lsat
from icllib import coverage, executor
from icllib.scan_snap import model as ss
from icllib.scan_snap import real_text as st
from icllib.scan_snap import dynamics as ssd
from icllib.scan_snap import lemmas as ssl_
from icllib.config import rng, torch_generator

torch.set_num_threads(1)

API_PAGE = Path(__file__).resolve().parents[1] / "book" / "api.md"


def _api_functions() -> dict:
    """``{"module.name": callable}`` for every public function and non-dataclass class on the API page."""
    found = {}
    page = API_PAGE.read_text(encoding="utf-8")
    for module_name, members in re.findall(r"automodule:: icllib\.([\w.]+)\n((?:\s+:\w+:.*\n)*)", page):
        module = importlib.import_module(f"icllib.{module_name}")
        listed = re.search(r":members:(.*)", members)
        names = [n.strip() for n in listed.group(1).split(",") if n.strip()] if listed else None
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if names and name not in names or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                continue
            found[f"{module_name}.{name}"] = obj
    return found


FUNCTIONS = _api_functions()

BAD = {"None": None, "str": "x", "-1": -1, "0": 0, "2.5": 2.5, "nan": math.nan,
       "numpy": np.ones((2, 2)), "empty": torch.empty(0)}


def _required(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


# --- valid calls: one keyword dict per function, built fresh for each call ------------------------------

LAM = np.diag([0.5, 1.0, 2.0])


@functools.cache
def _W(D=4):
    return ic.induction_weights(0.3, -0.7, 1.1, D)


@functools.cache
def _icl(D=4, N=3):
    return ic.sample_icl_batch(D, N, 5, generator=torch_generator(0))


@functools.cache
def _attention():
    generator = torch_generator(0)
    params = balance.init_attention(generator=generator, dtype=torch.float64)
    X, y = balance.icl_regression_batch(4, generator=generator, n_context=5, dtype=torch.float64)
    return params, X, y


@functools.cache
def _attention_run():
    params, _, _ = _attention()
    return balance.train_attention_sgd(params, lr=1e-3, batch_size=4, steps=4, generator=torch_generator(1),
                                       checkpoint_every=2, g_samples=4, g_chunk=2)


@functools.cache
def _standard_model():
    return isp.train_standard(8, steps=1, batch=2, generator=torch_generator(0))[0]


@functools.cache
def _lm():
    return st.make_transformer_lm(30, d_model=8, d_hidden=8, n_layers=1, dropout=0.0, generator=torch_generator(0))


def _text_source():
    return np.arange(160, dtype=np.int64).reshape(40, 4) % 30


@functools.cache
def _lsa_pair():
    return lsa.assumption33_init(3, 0.1, generator=rng(0))


def _lsa_tensors():
    K, P = _lsa_pair()
    return torch.as_tensor(K)[None], torch.as_tensor(P)[None]


def _prompts():
    X, w, xq = lsa.sample_prompts(2, 4, LAM, generator=torch_generator(0))
    return X, torch.einsum("bmd,bd->bm", X, w), xq


@functools.cache
def _moments():
    return lsat.exp1_moments(3, 20)


def _claims_registry():
    from icllib import claims
    return claims.registry()


def _rotation():
    return isp.random_rotation(4, generator=torch_generator(0))


def _P():
    """Two classes' token distributions over three tokens (Eq. 5)."""
    return np.array([[0.3, 0.3, 0.4], [0.3, 0.2, 0.5]])


def _spec():
    return ss.syn_small()


@functools.cache
def _fig4_run():
    """One Syn-Small run from zero recorded at steps 0, 50 and 100 (scan_snap.dynamics.fig4_summary needs them)."""
    return ssd.fig4_run(_spec(), 1.0, eta_Z=1.0, record_every=50, generator=rng(0))


@functools.cache
def _small_sweep():
    """A Fig. 6 sweep small enough for the sweep: K = 2, one eta_Z, three ratios, two seeds."""
    return ss.fig6_sweep(ss.Fig6Grid(num_last=(1,), eta_Z=(1.0,), ratios=(1, 2, 5), seeds=(1, 2)))


def _unit_F(K=3, M=12):
    return ssl_.overlapping_attention(K, M, overlap=0.16, n_distinct=3)


def _scan_path():
    """A one-query setting (K = 2, one common token, three distinct tokens each) and a short path of logits."""
    P = ssd.one_query_probabilities([0.15], [0.1, 0.2, 0.3], 2)
    return P, np.linspace(0.0, 1.0, 3)[:, None] * np.linspace(-0.5, 0.5, P.shape[1])[None, :]


def _small_counts():
    spec = _spec()
    classes, tokens = ss.sample_sequences(spec, 3, 6, generator=rng(0))
    return spec, classes, tokens, ss.token_counts(tokens, spec.M)


def _axes_with_a_labelled_line():
    from icllib.plotting import figure

    _, ax = figure()
    ax.plot([0.0, 1.0], [0.0, 1.0], label="a line")
    return ax


def _slider_arguments():
    ax = _axes_with_a_labelled_line()
    line = ax.get_lines()[0]
    ax.set(xlim=(0, 1), ylim=(0, 2))
    return dict(fig=ax.figure, values=[1.0, 2.0], draw=lambda slope: [line] if line.set_ydata([0.0, slope]) is None
                else [], label="slope", alt="A line whose slope the slider moves")


VALID = {
    # config, claims, validation, plotting
    "config.mode": lambda: {},
    "config.by_mode": lambda: dict(quick=1, default=2, full=3),
    "config.rng": lambda: dict(seed=0),
    "config.torch_generator": lambda: dict(seed=0),
    "config.progress": lambda: dict(iterable=range(2)),
    "config.device": lambda: {},
    "config.device_description": lambda: {},
    "config.run_line": lambda: {},
    "config.generator_on": lambda: dict(generator=torch_generator(0), target="cpu"),
    "executor.TasksFailed": lambda: dict(failures={"a task": RuntimeError("a failure")}),
    "executor.LocalPool": lambda: dict(jobs=1),
    "executor.executor_kind": lambda: {},
    "executor.submitit_settings": lambda: {},
    "executor.make_executor": lambda: dict(kind="local"),
    "executor.run_tasks": lambda: dict(tasks=[executor.Task("a task", "math:sqrt", (4.0,))],
                                       on_result=lambda task, result: None),
    "executor.write_atomically": lambda: dict(path=Path(tempfile.gettempdir()) / "icllib-bad-input" / "run.json",
                                              text="{}"),
    "claims.check_claim": lambda: dict(claim_id=next(iter(_claims_registry().claims)), measured=1.0,
                                       lower=-10, upper=10,
                                          why="a valid call"),
    "claim_registry.registry": lambda: {},
    "claim_registry.parse_registry": lambda: dict(files=sorted((Path(coverage.__file__).parent / "registry").glob("*.yaml"))),
    "claims.results_path": lambda: {},
    "claims.read_all_results": lambda: {},
    "claims.save_arrays": lambda: dict(name="series", values=[1.0, 2.0]),
    "claims.record_figure_check": lambda: dict(figure="#1 ('a title')", problems=[]),
    "claims.figure_problems": lambda: {},
    "claims.archive_path": lambda: dict(chapter="balance"),
    "claims.archived_checks": lambda: dict(claim_id="balance.b11-rate"),
    "claims.show_archived_check": lambda: dict(claim_id="balance.fig6-approach"),  # checked in full mode only
    # a series with no NaN (a diverged run archives NaN as null, and Fig. 6's series holds some)
    "claims.archived_arrays": lambda: dict(chapter="induction_subspace", name="paper_width"),
    "exercises.SelfChecks": lambda: dict(chapter="lsa"),
    "exercises.number_near": lambda: dict(expected=lambda: 1.0),
    "exercises.numbers_near": lambda: dict(expected=lambda: [1.0, 2.0]),
    "exercises.number_between": lambda: dict(low=0.0, high=1.0),
    "exercises.exactly": lambda: dict(expected=lambda: 3),
    "exercises.same_names": lambda: dict(expected=lambda: ("beta3", "beta4")),
    "validation.positive_int": lambda: dict(name="n", value=3),
    "validation.even_int": lambda: dict(name="D", value=4),
    "validation.power_of_two": lambda: dict(name="d", value=8),
    "validation.positive_number": lambda: dict(name="lr", value=0.5),
    "validation.one_of": lambda: dict(name="update", value="a", allowed=("a", "b")),
    "validation.real_array": lambda: dict(name="alpha", value=[1.0, 2.0]),
    "validation.torch_generator_arg": lambda: dict(name="generator", value=torch_generator(0)),
    "validation.numpy_generator_arg": lambda: dict(name="generator", value=rng(0)),
    "validation.tensor_arg": lambda: dict(name="W", value=torch.ones(2, 2)),
    "validation.square_matrices": lambda: dict(name="S", value=torch.ones(2, 2)),
    "validation.non_empty": lambda: dict(name="seeds", values=(1, 2)),
    "validation.int_array": lambda: dict(name="N", value=[1, 2]),
    "validation.fraction": lambda: dict(name="delta", value=0.1),
    "validation.directory_arg": lambda: dict(name="papers", value=Path(__file__).parent),
    "validation.path_arg": lambda: dict(name="papers", value=Path(__file__).parent),
    "validation.str_list": lambda: dict(name="paper_lines", value=["a line"]),
    "validation.array_like": lambda: dict(name="X", value=np.ones(2)),
    "validation.real_number": lambda: dict(name="c", value=0.5),
    "validation.index_array": lambda: dict(name="tokens", value=[0, 2], size=3),
    "validation.token_source": lambda: dict(name="source", value=_text_source()),
    "plotting.use_house_style": lambda: {},
    "plotting.layout_problems": lambda: dict(fig=__import__("icllib.plotting").plotting.figure()[0]),
    "plotting.legend": lambda: dict(ax=_axes_with_a_labelled_line()),
    "plotting.perturbed_layout_problems": lambda: dict(fig=_axes_with_a_labelled_line().figure, relative=1e-6),
    "plotting.robust_layout_problems": lambda: dict(fig=_axes_with_a_labelled_line().figure),
    "plotting.figure": lambda: {},
    "plotting_interactive.slider_figure": lambda: _slider_arguments(),
    "figure_screens.plain_text_parts": lambda: dict(text="eta_Y and $\\eta_Z$"),
    "figure_screens.ascii_tex": lambda: dict(text="eta_Y and $\\eta_Z$"),
    "figure_screens.label_problems": lambda: dict(fig=_axes_with_a_labelled_line().figure),
    "figure_screens.stacked_variant_png": lambda: dict(fig=__import__("icllib.plotting").plotting.figure(1, 2)[0]),
    "figure_screens.png_with_stacked_variant": lambda: dict(
        fig=__import__("icllib.plotting").plotting.figure(1, 2)[0]),
    "figure_screens.offer_stacked_variants": lambda: {},
    "plotting.show_table": lambda: dict(header=["a", "b"], rows=[[1, 2]]),
    "plotting.log_log_slope": lambda: dict(x=np.array([1.0, 2.0, 4.0]), y=np.array([3.0, 12.0, 48.0])),
    "plotting.block_heatmap": lambda: dict(ax=__import__("icllib.plotting").plotting.figure()[1],
                                           matrix=np.eye(4), block=2, title="W", xlabel="k", ylabel="q"),
    # induction heads
    "induction.model.rotation_M": lambda: dict(D=4),
    "induction.model.haar_rows": lambda: dict(n_rows=2, dim=3, batch=2, generator=torch_generator(0)),
    "induction.model.sample_icl_batch": lambda: dict(D=4, N=2, batch_size=3, generator=torch_generator(0)),
    "induction.model.orthonormal_task": lambda: dict(N=2, D=4, generator=torch_generator(0)),
    "induction.model.weight_triple_D": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.model.causal_softmax": lambda: dict(S=torch.zeros(4, 4, dtype=torch.float64)),
    "induction.model.disentangled_states": lambda: dict(X=_icl()[0], **dict(zip(("W1", "W2", "W3"), _W()))),
    "induction.model.disentangled_forward": lambda: dict(X=_icl()[0], **dict(zip(("W1", "W2", "W3"), _W()))),
    "induction.model.DisentangledTransformer": lambda: dict(D=4),
    "induction.model.structured_weights": lambda: dict(coeffs={"alpha3": 0.5}, D=4),
    "induction.model.induction_weights": lambda: dict(alpha=0.3, beta=-0.7, gamma=1.1, D=4),
    "induction.model.three_param_point": lambda: dict(alpha=0.3, beta=-0.7, gamma=1.1, X=_icl()[0][0]),
    "induction.model.full_model_loss_and_grad": lambda: dict(alpha=0.3, beta=0.5, gamma=1.1, X=_icl()[0][0],
                                                              y=_icl()[1][0]),
    "induction.model.induction_coordinates": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.model.three_param_loss": lambda: dict(alpha=0.3, beta=-0.7, gamma=1.1, N=3),
    "induction.model.three_param_grad": lambda: dict(alpha=0.3, beta=-0.7, gamma=1.1, N=3),
    "induction.emergence.full_matrix_step": lambda: dict(alpha=0.2, beta=0.5, gamma=0.9, X=_icl()[0][0], y=_icl()[1][0],
                                                         lr=1.0),
    "induction.emergence.three_param_flow": lambda: dict(state=np.array([0.1, 0.2, 0.3]), N=3),
    "induction.emergence.crossing_times": lambda: dict(N=4),
    "induction.emergence.emergence_times": lambda: dict(N=4),
    "induction.emergence.loss_drop_time": lambda: dict(N=4),
    "induction.emergence.flow_trajectory": lambda: dict(N=4, t_end=1.0, num=3),
    "induction.emergence.proof_bounds": lambda: dict(N=4, num=201),
    "induction.emergence.gradient_descent_times": lambda: dict(Ns=[4], eta=0.5),
    "induction.emergence.emergence_asymptotics": lambda: {},
    "induction.emergence.richardson": lambda: dict(values=[1.5, 1.2]),
    "induction.emergence.crossing_table": lambda: dict(times={4: {"gamma": 3.0, "beta": 20.0, "alpha": 30.0,
                                                                  "loss": 40.0}}, N_values=[4]),
    "induction.emergence.bounds_table": lambda: dict(
        bounds={4: importlib.import_module("icllib.induction.emergence").proof_bounds(4, num=201)}, N_values=[4]),
    "induction.emergence.worst_over_n": lambda: dict(
        bounds={4: importlib.import_module("icllib.induction.emergence").proof_bounds(4, num=201)}, N_values=[4]),
    "induction.emergence.check_args": lambda: dict(claim_id="induction_emergence.order"),
    "induction.subspace.parameter_count": lambda: dict(D=4),
    "induction.subspace.flatten_weights": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.subspace.unflatten_weights": lambda: dict(vector=torch.zeros(28 * 16, dtype=torch.float64), D=4),
    "induction.subspace.subspace_basis": lambda: dict(D=4),
    "induction.subspace.pseudo_parameter_vector": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.subspace.pseudo_params": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.subspace.project_structured": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.subspace.subspace_residual": lambda: dict(zip(("W1", "W2", "W3"), _W())),
    "induction.subspace.random_rotation": lambda: dict(D=4, generator=torch_generator(0)),
    "induction.subspace_theory.sympy_propositions": lambda: {},
    "induction.subspace.rotate_data": lambda: dict(X=_icl()[0], y=_icl()[1],
                                                   **dict(zip("EF", _rotation()))),
    "induction.subspace.rho": lambda: dict(**dict(zip("EF", _rotation())),
                                           **dict(zip(("W1", "W2", "W3"), _W()))),
    "induction.subspace.hadamard_cyclic_group": lambda: dict(d=4),
    "induction.subspace.orbit_rotations": lambda: dict(D=4),
    "induction.subspace.symmetrise": lambda: dict(X=_icl()[0], y=_icl()[1]),
    "induction.subspace.loss_and_grads": lambda: dict(X=_icl()[0], y=_icl()[1], **dict(zip(("W1", "W2", "W3"), _W()))),
    "induction.subspace.train_sgd": lambda: dict(N=2, D=4, steps=2, batch=4, lr=1.0, generator=torch_generator(0)),
    "induction.subspace.standard_task": lambda: dict(batch=2, generator=torch_generator(0)),
    "induction.subspace.StandardTransformer": lambda: dict(D=8, generator=torch_generator(0)),
    "induction.subspace.previous_position_weight": lambda: dict(attention=torch.eye(3)),
    "induction.subspace.subdiagonal_margins": lambda: dict(scores=torch.eye(3)),
    "induction.subspace.train_standard": lambda: dict(D=8, steps=1, batch=2, generator=torch_generator(0)),
    "induction.subspace.standard_accuracy": lambda: dict(model=_standard_model(), batch=2,
                                                         generator=torch_generator(0)),
    "induction.subspace.basis_errors": lambda: dict(coefficients=torch.ones(19, dtype=torch.float64), weights=_W(),
                                                    D=4),
    "induction.subspace.equivariance_error": lambda: dict(weights=_W(), strict=True, generator=torch_generator(0)),
    "induction.subspace.a73_chain_rule_error": lambda: dict(X=_icl()[0], y=_icl()[1], weights=_W()),
    "induction.subspace.haar_z_score": lambda: dict(samples=torch.randn(3, 4, 4, generator=torch_generator(0),
                                                                    dtype=torch.float64), target=torch.eye(4)),
    "induction.subspace.orbit_average_error": lambda: dict(A=torch.eye(4, dtype=torch.float64),
                                                           **dict(zip("EF", isp.orbit_rotations(4)))),
    "induction.subspace.plateau_exit": lambda: dict(loss=np.array([4.0, 3.0, 1.0]), D=4),
    "induction.subspace.hypotheses_summary": lambda: dict(
        full=dict(loss=np.array([4.0, 1.0]), coords=np.arange(38.0).reshape(2, 19)),
        three=dict(loss=np.array([4.0, 1.0]), coords=np.arange(38.0).reshape(2, 19)), D=4),
    "induction.subspace.ablation_losses": lambda: dict(weights=_W(), X=_icl()[0], y=_icl()[1]),
    "induction.subspace.rebound": lambda: dict(losses=np.array([4.0, 3.0, 1.0, 2.0]), exit_step=1, window=2),
    "induction.subspace.hypotheses_table": lambda: dict(compared=[("Fig. 4", (4, 2), {
        "full": dict(loss=np.r_[4.0, np.full(21, 1.0)]), "three": dict(loss=np.r_[4.0, np.full(21, 1.0)])},
        dict(exits={"full": 1, "three": 1}, on_top=True))]),
    "induction.subspace.appc_rows": lambda: dict(app_c_runs={2: ((1, 2), isp.train_sgd(
        2, 4, steps=2, batch=4, lr=1.0, generator=torch_generator(0), snapshots=(1, 2)))}),
    "induction.subspace.span_remainder": lambda: dict(stream=torch.ones(3, 4, dtype=torch.float64),
                                                      columns=[torch.eye(4, dtype=torch.float64)[:, :2]]),
    "induction.subspace.wide_run_rows": lambda: dict(runs=[dict(
        settings={"init": "gpt2", "seed": 1}, loss_first=3.4, loss_last20=0.1, accuracy=0.99, previous_weight=0.3,
        previous_weight_untrained=0.1, device="cpu")]),
    "induction.subspace.check_args": lambda: dict(key="basis"),
    # balance
    "balance.model.icl_regression_batch": lambda: dict(batch_size=4, generator=torch_generator(0)),
    "balance.model.init_attention": lambda: dict(generator=torch_generator(0)),
    "balance.model.attention_forward": lambda: dict(params=_attention()[0], X=_attention()[1]),
    "balance.model.attention_loss": lambda: dict(zip(("params", "X", "y"), _attention())),
    "balance.model.per_sample_grads": lambda: dict(zip(("params", "X", "y"), _attention())),
    "balance.model.attention_loss_and_grads": lambda: dict(zip(("params", "X", "y"), _attention())),
    "balance.model.rescale_columns": lambda: dict(params=_attention()[0], lambdas=2 * torch.ones(2, 6, dtype=torch.float64)),
    "balance.model.column_imbalance": lambda: dict(params=_attention()[0]),
    "balance.model.euler_residuals": lambda: dict(grads=balance.per_sample_grads(*_attention()), params=_attention()[0]),
    "balance.model.g_terms": lambda: dict(grads=balance.per_sample_grads(*_attention())),
    "balance.model.g_terms_via_C": lambda: dict(zip(("params", "X", "y"), _attention())),
    "balance.model.gradient_descent_run": lambda: dict(zip(("params", "X", "y"), _attention()), lr=1e-3, steps=2),
    "balance.model.implicit_midpoint_run": lambda: dict(zip(("params", "X", "y"), _attention()), h=1e-3, steps=2),
    "balance.theory.noise_terms": lambda: dict(grads_u=rng(0).normal(size=(5, 2)), grads_w=rng(1).normal(size=(5, 3))),
    "balance.theory.eq7_bounds": lambda: dict(C1=2 * np.eye(3), C2=6 * np.eye(4)),
    "balance.theory.random_stationary_points": lambda: dict(size=3, count=5, generator=rng(0)),
    "balance.theory.law_prediction": lambda: dict(run=_attention_run(), lr=1e-3, batch_size=4),
    "balance.theory.linear_C1_C2": lambda: dict(u=np.ones(2), w=np.ones(3), M_star=np.ones((2, 3)), sigma=0.3),
    "balance.theory.linear_balance_ratio": lambda: dict(C1=np.eye(3), C2=2 * np.eye(2), u=np.ones(3), w=np.ones(2)),
    "balance.theory.linear_balance_ode_time": lambda: dict(ratio0=16.0, target=0.25, d=8, d_o=2, sigma=0.5, T=0.01),
    "balance.theory.linear_sgd_runs": lambda: dict(u0=np.ones(2), w0=np.ones(3), M_star=np.ones((2, 3)), sigma=0.1,
                                            lr=0.01, batch_size=1, steps=4, runs=2, generator=rng(0), record_every=2),
    "balance.theory.sympy_identities": lambda: dict(n_samples=2),
    "balance.theory.eq7_band_shares": lambda: dict(sizes=[2, 3], count=5, generator=lambda size: rng(size)),
    "balance.theory.ratio_on_minimum": lambda: dict(D=0.5),
    "balance.theory.law_rows": lambda: dict(predicted=-np.ones((2, 6)), measured=-np.ones((2, 6)),
                                            noise_part=-np.ones((2, 6))),
    "balance.theory.conservation_rows": lambda: dict(flow=dict(gd_drift={1e-3: 2e-5}, midpoint_drift=1e-15,
                                                               norm_moves=0.1), midpoint_step=1e-3),
    "balance.theory.linear_mc_noise_terms": lambda: dict(u=np.ones(2), w=np.ones(3), M_star=np.ones((2, 3)),
                                                         sigma=0.5, samples=10, generator=rng(0)),
    "balance.theory.linear_balance_experiment": lambda: dict(
        u0=np.ones(2), w0=np.ones(3), M_star=np.ones((2, 3)), sigma=1.0, settings=[(0.02, 1)], runs=2,
        generator=rng(0), ratio0=1.0, relaxation_times=0.02),
    "balance.theory.linear_rows": lambda: dict(linear=balance_theory.linear_balance_experiment(
        np.ones(2), np.ones(3), np.ones((2, 3)), sigma=1.0, settings=[(0.02, 1)], runs=2, generator=rng(0),
        ratio0=1.0, relaxation_times=0.02)),
    "balance.model.train_attention_sgd": lambda: dict(params=_attention()[0], lr=1e-3, batch_size=4, steps=2,
                                                generator=torch_generator(1), checkpoint_every=1, g_samples=4,
                                                g_chunk=2),
    "balance.model.finite_part": lambda: dict(run=_attention_run()),
    "balance.model.query_lstsq_error": lambda: dict(zip(("X", "y"), _attention()[1:])),
    "balance.model.symmetry_error": lambda: dict(zip(("params", "X", "y"), _attention()),
                                           lambdas=2 * torch.ones(2, 6, dtype=torch.float64)),
    "balance.model.single_column_changes": lambda: dict(zip(("params", "X", "y"), _attention())),
    "balance.model.transpose_controls": lambda: dict(zip(("params", "X", "y"), _attention()),
                                               A=2 * torch.eye(6, dtype=torch.float64)),
    "balance.model.conservation_summary": lambda: dict(
        gd_runs={1e-3: balance.gradient_descent_run(*_attention(), lr=1e-3, steps=2)},
        midpoint=balance.implicit_midpoint_run(*_attention(), h=1e-3, steps=2), params=_attention()[0]),
    "balance.model.fig6_series": lambda: dict(run={**_attention_run(), "diverged_at": 3}, steps=4, points=2),
    "balance.model.gap_summary": lambda: dict(log_gap=rng(0).normal(size=(4, 2, 6))),
    "balance.model.describe_archive": lambda: dict(paper_scale=dict(
        checkpoints=np.arange(3.0), gK=np.ones((3, 2, 6)), gQ=np.full((3, 2, 6), 2.0), diverged_at=[5.0],
        date="2026-11-26", commit="0" * 7, machine="test")),
    "balance.model.rank_agreement": lambda: dict(predicted=np.arange(5.0), measured=np.arange(5.0), generator=rng(0),
                                           permutations=10),
    # scan and snap
    "scan_snap.model.make_classes": lambda: dict(P=[[0.5, 0.5]], query=[0], next_token=[1]),
    "scan_snap.model.syn_small": lambda: {},
    "scan_snap.model.syn_medium": lambda: dict(num_last=1),
    "scan_snap.model.sample_counts": lambda: dict(spec=_spec(), batch_size=4, T=8, generator=rng(0)),
    "scan_snap.model.sample_sequences": lambda: dict(spec=_spec(), batch_size=4, T=8, generator=rng(0)),
    "scan_snap.model.token_counts": lambda: dict(tokens=np.array([[0, 2, 2, 1]]), M=4),
    "scan_snap.model.sample_class_counts": lambda: dict(spec=_spec(), n=0, size=3, T=8, generator=rng(0)),
    "scan_snap.model.count_mixture": lambda: dict(counts=np.ones((2, 3)), z=np.zeros(3)),
    "scan_snap.model.hoeffding_radius": lambda: dict(n=100, delta=0.05),
    "scan_snap.model.one_sided_ceiling": lambda: dict(delta=0.01, n=1000),
    "scan_snap.model.one_sided_floor": lambda: dict(delta=0.01, n=1000),
    "scan_snap.model.embedding_objective": lambda: dict(U=np.eye(4), W_Q=np.eye(4), W_K=np.eye(4), W_V=np.eye(4),
                                                  tokens=np.array([0, 1, 0]), query=2, next_token=3),
    "scan_snap.model.yz_objective": lambda: dict(Y=np.eye(4), Z=np.eye(4), tokens=np.array([0, 1, 0]), query=2,
                                           next_token=3),
    "scan_snap.model.lemma1_gradient_counts": lambda: (lambda s, c, t, n: dict(
        spec=s, Y=np.eye(s.M), Z=np.eye(s.M), classes=c, counts=n))(*_small_counts()),
    "scan_snap.model.lemma1_gradient_sequences": lambda: (lambda s, c, t, n: dict(
        spec=s, Y=np.eye(s.M), Z=np.eye(s.M), classes=c, tokens=t))(*_small_counts()),
    "scan_snap.model.train_yz": lambda: dict(spec=_spec(), eta_Y=1.0, eta_Z=1.0, run=ss.RunSize(steps=2, batch_size=4, T=8),
                                       generator=rng(0)),
    "scan_snap.model.attention_distribution": lambda: dict(spec=_spec(), Z=np.zeros((_spec().M, _spec().M))),
    "scan_snap.model.distinct_token_entropy": lambda: dict(spec=_spec(), Z=np.zeros((_spec().M, _spec().M))),
    "scan_snap.model.fig6_sweep": lambda: dict(grid=ss.Fig6Grid(num_last=(1,), eta_Z=(1.0,), ratios=(1,), seeds=(1,)),
                                         run=ss.RunSize(steps=2, batch_size=4, T=8)),
    "scan_snap.model.distinct_token_recall": lambda: dict(
        spec=_spec(), attention=ss.attention_distribution(_spec(), np.zeros((_spec().M, _spec().M))),
        thresholds=[0.0, 0.5]),
    "scan_snap.theory.softmax": lambda: dict(logits=np.array([0.0, 1.0])),
    "scan_snap.theory.decoder_clock_h_star": lambda: dict(steps=5, M=10, eta_Y=0.7),
    "scan_snap.theory.decoder_row_dynamics": lambda: dict(steps=5, M=10, eta_Y=0.7),
    "scan_snap.theory.decoder_clock_h": lambda: dict(s=np.array([0.0, 1.0]), M=10, eta_Y=0.3),
    "scan_snap.theory.speed_control_gamma": lambda: dict(t=np.array([1.0, 2.0]), K=3, M=10, eta_Y=0.5),
    "scan_snap.theory.lemma8_omegas": lambda: dict(M=100),
    "scan_snap.theory.transition_time": lambda: dict(K=10, M=100, eta_Y=1.0),
    "scan_snap.theory.decoder_residual_norm": lambda: dict(h=0.5, M=10),
    "scan_snap.theory.steps_to_residual": lambda: dict(eps=0.5, M=10, eta_Y=0.5),
    "scan_snap.theory.residual_time": lambda: dict(eps=0.5, M=10, eta_Y=0.5),
    "scan_snap.theory.uniform_class_counts": lambda: dict(N=30, K=3, size=2, generator=rng(0)),
    "scan_snap.theory.steps_until_every_class": lambda: dict(S=7, K=2, size=3, generator=rng(1)),
    "scan_snap.theory.class_count_theta": lambda: dict(counts=np.array([90, 110, 100]), M=100, eta_Y=0.5),
    "scan_snap.theory.class_count_sigma": lambda: dict(counts=np.array([40, 60]), M=100, eta_Y=0.5),
    "scan_snap.theory.e_prime": lambda: dict(E=np.array([[0.0, 0.3], [0.3, 0.0]])),
    "scan_snap.theory.random_overlap_matrices": lambda: dict(K=3, size=2, generator=rng(0)),
    "scan_snap.theory.e_prime_checks": lambda: dict(E=np.array([[0.0, 0.3], [0.3, 0.0]])),
    "scan_snap.theory.decoder_in_span": lambda: dict(F=np.eye(4)[:, :2], eta_Y=0.5, steps=3, update="modified",
                                                     generator=rng(0)),
    "scan_snap.theory.span_coefficients": lambda: dict(F=np.eye(3)[:, :2], A=np.array([[1.0, 0, 0], [0, 1.0, 0]])),
    "scan_snap.theory.decoder_run": lambda: dict(F=np.eye(4)[:, :2], eta_Y=0.5, steps=3, update="modified",
                                                 generator=rng(0)),
    "scan_snap.theory.theorem5_coefficients": lambda: dict(F=np.eye(3)[:, :2], counts=np.array([1, 2]), eta_Y=0.5),
    "scan_snap.theory.normalised_attention": lambda: dict(P=_P(), z=np.zeros(3)),
    "scan_snap.theory.population_zdot": lambda: dict(P=_P(), z=np.zeros(3), gamma=2.0, eta_Z=0.5),
    "scan_snap.theory.integrate_scan": lambda: dict(P=_P(), t_eval=np.array([1.0, 2.0]), K_clock=2,
                                                    M_decoder=10, eta_Y=1.0, eta_Z=0.5),
    "scan_snap.theory.snap_Gamma": lambda: dict(t=np.array([1.0, 2.0]), K=10, M=100, eta_Y=1.0, eta_Z=0.5),
    "scan_snap.theory.snap_B": lambda: dict(t=np.array([1.0, 2.0]), K=10, M=100, eta_Y=1.0, eta_Z=0.5),
    "scan_snap.theory.snap_B_ode": lambda: dict(t_eval=np.array([1.0, 2.0]), K=10, M=100, eta_Y=1.0, eta_Z=0.5),
    "scan_snap.lemmas.number_table": lambda: dict(values={"a": 1.0}, column="error"),
    "scan_snap.lemmas.relative_error": lambda: dict(a=np.array([1.0, 2.0]), b=np.array([1.0, 2.5])),
    "scan_snap.lemmas.eq15_autograd": lambda: (lambda c, t: dict(
        spec=_spec(), Y=np.eye(_spec().M), Z=np.zeros((_spec().M, _spec().M)), classes=c, sequences=t))(
        *ss.sample_sequences(_spec(), 3, 6, generator=rng(0))),
    "scan_snap.lemmas.token_concentration": lambda: dict(spec=_spec(), z=np.zeros(_spec().M), lengths=(10, 100),
                                                         delta=0.05, sequences=5, generator=rng(0)),
    "scan_snap.lemmas.eq45_residuals": lambda: dict(M_values=(10,), eta_Y=0.5, t_grid=np.array([0.0, 1.0, 10.0])),
    "scan_snap.lemmas.lemma7_gaps": lambda: dict(M_values=(10,), eta_values=(0.5,)),
    "scan_snap.lemmas.clock_curves": lambda: dict(M=10, eta_values=(0.5,)),
    "scan_snap.lemmas.lemma8_orders": lambda: dict(M=100),
    "scan_snap.lemmas.remark3_conditions": lambda: dict(M_values=(1000,), eta_values=(0.1,)),
    "scan_snap.lemmas.speed_control_ratios": lambda: dict(K=10, eta_Y=1.0, M_values=(100,)),
    "scan_snap.lemmas.join_columns": lambda: dict(rows=[{"a": [1.0], "b": 2.0}, {"a": [3.0], "b": 4.0}]),
    "scan_snap.lemmas.class_count_failures": lambda: dict(N=100, K=2, deltas=(0.1,), runs=200, generator=rng(1)),
    "scan_snap.lemmas.clock_noise_failures": lambda: dict(K=2, clock=(100, 0.5), runs=20, delta=0.1,
                                                          steps_per_K2=20, generator=rng(1)),
    "scan_snap.lemmas.corollary1_steps": lambda: dict(M_values=(100,), eta_values=(0.5,), eps_values=(0.1,)),
    "scan_snap.lemmas.corollary1_total": lambda: dict(eps=0.1, K=2, M=100, eta_Y=0.5, runs=10, generator=rng(1)),
    "scan_snap.lemmas.corollary1_curves": lambda: dict(M=100, eta_values=(0.5,), eps_grid=np.array([0.1, 0.01])),
    "scan_snap.lemmas.overlap_lemma_checks": lambda: dict(K_values=(2, 3), size=4, generator=rng(0)),
    "scan_snap.lemmas.e_prime_misses": lambda: dict(matrices=[np.array([[[0.0, 0.3], [0.3, 0.0]]])]),
    "scan_snap.lemmas.overlapping_attention": lambda: dict(K=2, M=10, overlap=0.16, n_distinct=3),
    "scan_snap.lemmas.theorem1_ratios": lambda: dict(F=_unit_F(), eta_Y=0.5, update="modified", steps=5,
                                                     generator=rng(1)),
    "scan_snap.lemmas.lemma3_one_step": lambda: dict(F=_unit_F(), E_prime=np.zeros((3, 3)), M=12, n=1,
                                                     generator=rng(0)),
    "scan_snap.lemmas.lemma12_theta": lambda: dict(K=2, clocks=((100, 0.5),), runs=20, delta=0.1,
                                                   steps_per_K2=20, generator=rng(1)),
    "scan_snap.lemmas.eq88_readings": lambda: dict(F=_unit_F(), A=rng(0).normal(size=(3, 12)),
                                                   counts=np.array([1, 2, 3]), E_prime=np.zeros((3, 3)), eta_Y=0.5),
    "scan_snap.dynamics.one_query_probabilities": lambda: dict(common=[0.15], weights=[0.1, 0.2], K=2),
    "scan_snap.dynamics.lemma4_classes": lambda: dict(K=2),
    "scan_snap.dynamics.eq10_drift": lambda: (lambda spec: dict(
        spec=spec, F=ssl_.overlapping_attention(3, spec.M, overlap=0.16, n_distinct=3),
        A=rng(0).normal(size=(3, spec.M))))(ssd.lemma4_classes(3)[0]),
    "scan_snap.dynamics.overlap_eigenvalues": lambda: dict(zip(("P", "z_path"), _scan_path())),
    "scan_snap.dynamics.theorem2_rates": lambda: dict(zip(("P", "z_path"), _scan_path()), xi_path=np.ones((3, 2)),
                                                      eta_Z=0.5),
    "scan_snap.dynamics.theorem3_along": lambda: dict(zip(("P", "z_path"), _scan_path()), B_path=np.ones((3, 2))),
    "scan_snap.dynamics.scan_order_holds": lambda: dict(zip(("P", "z_path"), _scan_path())),
    "scan_snap.dynamics.snap_closed_form_errors": lambda: dict(t=np.array([0.0, 1.0, 10.0]), C0_values=(1.0,),
                                                               eta_Y_values=(1.0,)),
    "scan_snap.dynamics.snap_branch_errors": lambda: dict(eta_Y_values=(1.0,)),
    "scan_snap.dynamics.insight_c_margins": lambda: dict(eta_Y_values=(1.0, 2.0)),
    "scan_snap.dynamics.fixed_ratio_transitions": lambda: dict(eta_Z_values=(0.5,)),
    "scan_snap.dynamics.insight_b_margin": lambda: dict(eta_Z_values=(0.5, 1.0)),
    "scan_snap.dynamics.measured_transitions": lambda: dict(eta_Y_values=(1.0,)),
    "scan_snap.dynamics.snap_figure_curves": lambda: dict(t=np.array([1.0, 10.0]), eta_Y_values=(1.0,),
                                                          eta_Z_values=(0.5,)),
    "scan_snap.dynamics.fig4_run": lambda: dict(spec=_spec(), eta_Y=1.0, eta_Z=1.0, record_every=50,
                                                generator=rng(0)),
    "scan_snap.dynamics.fig4_summary": lambda: dict(spec=_spec(), result=_fig4_run()),
    "scan_snap.dynamics.fig4_table": lambda: dict(stats={1.0: [ssd.fig4_summary(_spec(), _fig4_run())]}),
    "scan_snap.dynamics.attention_entropy": lambda: dict(spec=_spec(), result=_fig4_run(), step_index=1),
    "scan_snap.dynamics.eq110_errors": lambda: dict(spec=_spec(), result=_fig4_run()),
    "scan_snap.dynamics.equal_distinct_classes": lambda: dict(spec=_spec(), weight=0.55),
    "scan_snap.dynamics.initial_prior": lambda: dict(spec=_spec(), eta_Y=1.0, z_scale=0.3, z0_generator=rng(1000),
                                                     generator=rng(0)),
    "scan_snap.dynamics.adam_winner": lambda: dict(spec=_spec(), eta=0.5, generator=rng(0)),
    "scan_snap.dynamics.fig6_against_authors": lambda: dict(sweep=_small_sweep()),
    "scan_snap.dynamics.recall_entropy_correlation": lambda: dict(sweep=_small_sweep()),
    "scan_snap.real_text.make_transformer_lm": lambda: dict(vocab_size=30, d_model=8, d_hidden=8, n_layers=1, dropout=0.0,
                                                       generator=torch_generator(0)),
    "scan_snap.real_text.attention_row_entropy": lambda: dict(weights=torch.softmax(torch.zeros(2, 8, 8), -1).tril()),
    "scan_snap.real_text.train_transformer_lm": lambda: dict(model=_lm(), train_source=_text_source(),
                                                        valid_source=_text_source(), steps=1, lr=0.1, bptt=10,
                                                        record_every=1, generator=torch_generator(0)),
    "scan_snap.real_text.freeze_summary": lambda: dict(steps=np.arange(0, 101, 20), entropies=np.linspace(2.8, 1.0, 6),
                                                  run_steps=100),
    "scan_snap.real_text.bptt_windows_torch": lambda: dict(source=_text_source(), bptt=10),
    "scan_snap.real_text.yz_text_logits": lambda: dict(Y=torch.zeros(30, 30), Z=torch.zeros(30, 30),
                                                  tokens=torch.as_tensor(_text_source()[:10])),
    "scan_snap.real_text.train_yz_text": lambda: dict(train_source=_text_source(), valid_source=_text_source(),
                                                 vocab_size=30, eta_Y=1.0, eta_Z=1.0, steps=1, bptt=10,
                                                 generator=rng(0)),
    "scan_snap.text.load_corpus": lambda: dict(vocab_size=300),
    "scan_snap.text.batchify": lambda: dict(ids=np.arange(103), batch_size=4),
    "scan_snap.text.bptt_windows": lambda: dict(source=_text_source(), bptt=10),
    # linear self-attention
    "lsa.model.make_lambda": lambda: dict(eigenvalues=[1.0, 2.0], generator=rng(0)),
    "lsa.model.sample_prompts": lambda: dict(B=2, M=3, Lam=LAM, generator=torch_generator(0)),
    "lsa.model.embed": lambda: dict(zip(("X", "y", "x_query"), _prompts())),
    "lsa.model.lsa_forward": lambda: dict(W_KQ=_lsa_tensors()[0][0], W_PV=_lsa_tensors()[1][0],
                                    E=lsa.embed(*_prompts()), rho=4),
    "lsa.model.predict": lambda: dict(W_KQ=_lsa_tensors()[0][0], W_PV=_lsa_tensors()[1][0],
                                **dict(zip(("X", "y", "x_query"), _prompts()))),
    "lsa.model.quadratic_form_prediction": lambda: dict(W_KQ=_lsa_tensors()[0][0], W_PV=_lsa_tensors()[1][0],
                                                  **dict(zip(("X", "y", "x_query"), _prompts()))),
    "lsa.model.ols_predict": lambda: dict(zip(("X", "y", "x_query"), _prompts())),
    "lsa.model.assumption33_init": lambda: dict(d=3, sigma=0.1, generator=rng(0)),
    "lsa.model.gradient_flow": lambda: dict(U0=_lsa_pair()[0][:3, :3], c0=_lsa_pair()[1][3, 3], Lam=LAM, N=4, T=1.0,
                                      n_eval=3),
    "lsa.model.restricted_gd": lambda: dict(U0=_lsa_pair()[0][:3, :3], c0=_lsa_pair()[1][3, 3], Lam=LAM, N=4, lr=0.1,
                                      steps=2),
    "lsa.model.relevant_mask": lambda: dict(d=3),
    "lsa.model.gradient_descent": lambda: dict(W_KQ=_lsa_tensors()[0], W_PV=_lsa_tensors()[1], Lam=LAM, N=4, lr=0.05,
                                         steps=2),
    "lsa.model.full_gradient_flow": lambda: dict(W_KQ=_lsa_tensors()[0], W_PV=_lsa_tensors()[1], Lam=LAM, N=4, T=0.5,
                                           n_eval=3),
    "lsa.model.sgd_full": lambda: dict(W_KQ=_lsa_pair()[0], W_PV=_lsa_pair()[1], Lam=LAM, N=4, lr=0.01, batch=4, steps=2,
                                 generator=torch_generator(0)),
    "lsa.model.balance_gap": lambda: dict(W_KQ=torch.as_tensor(_lsa_pair()[0]), W_PV=torch.as_tensor(_lsa_pair()[1])),
    "lsa.model.newton_refine": lambda: dict(**dict(zip(("W_KQ", "W_PV"), lsat.global_minimum(LAM, 4))), Lam=LAM, N=4,
                                      steps=1),
    "lsa.model.mc_loss_and_gradient": lambda: dict(W_KQ=_lsa_pair()[0], W_PV=_lsa_pair()[1], Lam=LAM, N=4, n=8,
                                             generator=torch_generator(0)),
    "lsa.model.mc_prediction_error": lambda: dict(W_KQ=_lsa_pair()[0], W_PV=_lsa_pair()[1], M=4, n=8,
                                            generator=torch_generator(0), Lam_test=LAM),
    "lsa.model.sample_random_cov_prompts": lambda: dict(B=2, M=3, d=3, generator=torch_generator(0)),
    "lsa.model.random_cov_flow": lambda: dict(U0=_lsa_pair()[0][:3, :3], c0=_lsa_pair()[1][3, 3],
                                        **dict(zip(("gamma", "xi", "zeta"), _moments())), T=1.0, n_eval=3),
    "lsa.model.flow_summary": lambda: dict(run=lsa.gradient_flow(_lsa_pair()[0][:3, :3], _lsa_pair()[1][3, 3], LAM, 4,
                                                           T=1.0, n_eval=3),
                                     **dict(zip(("W_KQ_star", "W_PV_star"), lsat.global_minimum(LAM, 4)))),
    "lsa.model.generic_init": lambda: dict(d=3, runs=2, generator=rng(0)),
    "lsa.model.shift_scenarios": lambda: dict(Lam=LAM),
    "lsa.theory.sqrtm_psd": lambda: dict(A=LAM),
    "lsa.theory.a14_bound": lambda: dict(Lam=LAM, N=4, sigma=0.1, W_KQ11=_lsa_pair()[0][:3, :3]),
    "lsa.theory.check_args": lambda: dict(claim_id="lsa.lemma51"),
    "lsa.theory.weights_411": lambda: dict(D_diag=[0.3, 0.3, 0.3]),
    "lsa.theory.gaussian_rule": lambda: dict(Lam=LAM, n_nodes=3),
    "lsa.theory.isserlis_error": lambda: dict(Lam=LAM, n_nodes=3),
    "lsa.theory.covariance": lambda: dict(Lam=LAM),
    "lsa.theory.parameter_pair": lambda: dict(zip(("W_KQ", "W_PV"), _lsa_pair())),
    "lsa.theory.gamma_matrix": lambda: dict(Lam=LAM, N=4),
    "lsa.theory.global_minimum": lambda: dict(Lam=LAM, N=4),
    "lsa.theory.minimum_loss": lambda: dict(Lam=LAM, N=4),
    "lsa.theory.sigma_max": lambda: dict(Lam=LAM, N=4),
    "lsa.theory.manifold_point": lambda: dict(Lam=LAM, N=4, delta=0.1),
    "lsa.theory.pl_constant": lambda: dict(Lam=LAM, N=4, sigma=0.1, W_KQ0=_lsa_pair()[0]),
    "lsa.theory.population_loss": lambda: dict(zip(("W_KQ", "W_PV"), _lsa_pair()), Lam=LAM, N=4),
    "lsa.theory.restricted_loss": lambda: dict(U=np.eye(3), c=0.5, Lam=LAM, N=4),
    "lsa.theory.restricted_gradient": lambda: dict(U=np.eye(3), c=0.5, Lam=LAM, N=4),
    "lsa.theory.restricted_hessian": lambda: dict(U=np.eye(3), c=0.5, Lam=LAM, N=4),
    "lsa.theory.square": lambda: dict(name="U", U=np.eye(3), d=3),
    "lsa.theory.task_moments": lambda: dict(task="linear", w=np.ones(3), Lam=LAM),
    "lsa.theory.prediction_error": lambda: dict(
        Lam=LAM, N=4, M=5, **dict(zip(("a", "Sigma"), lsat.task_moments("linear", np.ones(3), LAM)))),
    "lsa.theory.shift_error": lambda: dict(Lam=LAM, N=4, M=5, w=np.ones(3)),
    "lsa.theory.corollary43_thresholds": lambda: dict(Lam=np.eye(3), eps=0.01),
    "lsa.theory.exp1_moments": lambda: dict(d=3, N=20),
    "lsa.theory.moment_triple": lambda: dict(zip(("gamma", "xi", "zeta"), _moments())),
    "lsa.theory.random_cov_loss": lambda: dict(U=np.eye(3), c=0.5, **dict(zip(("gamma", "xi", "zeta"), _moments()))),
    "lsa.theory.random_cov_gradient": lambda: dict(U=np.eye(3), c=0.5,
                                                   **dict(zip(("gamma", "xi", "zeta"), _moments()))),
    "lsa.experiments.running_covariance": lambda: dict(),
    "lsa.experiments.fill_irrelevant": lambda: dict(zip(("W_KQ", "W_PV"), _lsa_pair()), generator=rng(0)),
    "lsa.experiments.negative_eigenvalue_counts": lambda: dict(zip(("X", "y", "x_query"), _prompts())),
    "lsa.experiments.on_invariant_set": lambda: dict(zip(("W_KQ", "W_PV"), _lsa_pair()), U=np.eye(3), c=0.5),
    "lsa.experiments.invariant_set_gradient": lambda: dict(U=np.eye(3), c=0.5, Lam=LAM, N=4),
    "lsa.experiments.gradient_z_scores": lambda: dict(
        mc=lsa.mc_loss_and_gradient(*lsat.global_minimum(LAM, 4), LAM, 4, n=16, generator=torch_generator(0)),
        grad_KQ=np.zeros((4, 4)), grad_PV=np.zeros((4, 4))),
    "lsa.experiments.theorem41_flows": lambda: dict(cases=[(LAM, 4)], scales=[0.5], generator=rng(0), T=1.0),
    "lsa.experiments.corollary_a2_errors": lambda: dict(Lam=LAM, N=4, generator=rng(0), points=2),
    "lsa.experiments.sgd_table": lambda: dict(runs=[_lsa_pair()], Lam=LAM, N=4),
    "lsa.experiments.lemma_c1_c3_errors": lambda: dict(zip(("gamma", "xi", "zeta"), _moments()), generator=rng(0),
                                                       points=2),
    "lsa.experiments.lemma_c4_errors": lambda: dict(zip(("gamma", "xi", "zeta"), _moments()), generator=rng(0),
                                                    points=2),
    "lsa.experiments.mc_random_cov_loss": lambda: dict(U=np.eye(3), c=0.5, N=4, n=8, generator=torch_generator(0),
                                                       chunk=4),
    "lsa.experiments.lemma_c6_c8_runs": lambda: dict(fractions=[0.5], sigma_bound=0.1, W_KQ11=np.eye(3) / 3 ** 0.5,
                                                     **dict(zip(("gamma", "xi", "zeta"), _moments())), K_410=30.0,
                                                     T=1.0),
    "lsa.experiments.one_third_estimates": lambda: dict(D_diag=[0.3, 0.3, 0.3], M=4, n=8, w=np.ones(3),
                                                        x_query=np.ones(3),
                                                        generators=[torch_generator(0), torch_generator(1)]),
    "lsa.experiments.corollary43_audit": lambda: dict(cases=[("d=3, Λ=I", np.eye(3), 0.1)]),
    "lsa.experiments.lemma_d1_errors": lambda: dict(generator=rng(0)),
    "lsa.experiments.lemma_d2_error": lambda: dict(Lam=LAM, A=np.eye(3)),
    "lsa.experiments.lemma_d3_slack": lambda: dict(generator=rng(0), pairs=3),
    "lsa.experiments.lemma_d4_ratios": lambda: dict(generator=rng(0), pairs=3),
    # the coverage script
    "coverage.named_results": lambda: dict(text="Theorem 1 and Lemma 2"),
    "coverage.paper_results": lambda: dict(text="Theorem 1. The loss decreases."),
    "coverage.quote_found": lambda: dict(paper_lines=["Theorem 1. The loss decreases."], quote="loss decreases",
                                         line=1),
    "coverage.paper_coverage": lambda: dict(papers=None),  # None: the committed list of numbered results
    "coverage.texts_at_hand": lambda: dict(papers=coverage.DEFAULT_PAPERS),
    "coverage.results_list_from_texts": lambda: dict(papers=coverage.DEFAULT_PAPERS),
    "coverage.committed_results_list": lambda: dict(),
    "coverage.committed_text_claims": lambda: dict(),
    "coverage.missing_texts": lambda: dict(papers=coverage.DEFAULT_PAPERS),
    "coverage.location_phrase_problems": lambda: dict(papers=coverage.DEFAULT_PAPERS),
    "coverage.text_claim_problems": lambda: dict(papers=None),  # None: the rows only, not the texts
    "coverage.quote_problems": lambda: dict(papers=coverage.DEFAULT_PAPERS),
    "coverage.main": lambda: dict(argv=["--papers", str(coverage.DEFAULT_PAPERS)]),
}

# --- values that are valid where they are passed -----------------------------------------------------------

REAL = {"-1", "0", "2.5"}  # any real number is a valid value of this parameter
ANY = set(BAD)  # the parameter is generic: any object is a valid value

ACCEPTED = {
    "figure_screens.plain_text_parts": {"text": {"str"}},   # any text is a label to read
    "figure_screens.ascii_tex": {"text": {"str"}},
    "exercises.number_between": {"low": {"-1", "0"}, "high": {"0", "2.5"}},  # each still leaves low <= high
    "config.by_mode": {"quick": ANY, "default": ANY, "full": ANY},  # by_mode returns whichever the mode picks
    "config.progress": {"iterable": {"str", "numpy", "empty"}},  # each is an iterable: a loop over it is valid
    "claims.check_claim": {"measured": REAL},  # within the valid call's bounds [-10, 10]
    "executor.write_atomically": {"text": {"str"}},
    "plotting_interactive.slider_figure": {"label": {"str"}},  # "x" names a parameter  # "x" is a text
    "claims.save_arrays": {"name": {"str"}}, "claims.archive_path": {"chapter": {"str"}},  # "x" is a name
    "claims.archived_arrays": {"chapter": {"str"}, "name": {"str"}},  # no archive or series "x": None
    "claims.archived_checks": {"folder": {"str"}},  # "x" is a folder without an archive: None
    "claims.record_figure_check": {"figure": {"str"}},  # "x" names a figure
    "config.rng": {"seed": {"0"}}, "config.torch_generator": {"seed": {"0"}},  # seeds start at 0
    "coverage.named_results": {"text": {"str"}}, "coverage.paper_results": {"text": {"str"}},  # a text
    "coverage.quote_found": {"quote": {"str"}},  # a quote is any text
    "coverage.paper_coverage": {"papers": {"None"}},  # None asks for the committed list of numbered results
    "coverage.texts_at_hand": {"papers": {"str"}},  # "x" is a folder path; the answer is that the texts are not there
    "coverage.missing_texts": {"papers": {"str"}},  # "x" is a folder path; the answer is every text, missing there
    "coverage.text_claim_problems": {"papers": {"None"}},  # None checks the in-text claims against the rows only
    "validation.array_like": {"value": {"numpy", "empty"}},  # it checks the type only; shapes are the caller's
    "validation.real_number": {"value": REAL},
    "validation.index_array": {"value": {"0"}},  # a token id may be 0
    "validation.path_arg": {"value": {"str"}},  # "x" is a path; it need not exist
    "scan_snap.model.embedding_objective": {"query": {"0"}, "next_token": {"0"}},  # token 0 exists
    "scan_snap.model.yz_objective": {"query": {"0"}, "next_token": {"0"}},
    "validation.real_array": {"value": REAL | {"numpy"}},  # a real scalar or array is what it checks for
    "induction.model.induction_weights": {"alpha": REAL, "beta": REAL, "gamma": REAL},  # Eq. 9's free coordinates
    "induction.model.three_param_point": {"alpha": REAL, "beta": REAL, "gamma": REAL},
    "induction.model.full_model_loss_and_grad": {"alpha": REAL, "beta": REAL, "gamma": REAL},
    "induction.emergence.full_matrix_step": {"alpha": REAL, "beta": REAL, "gamma": REAL},
    "lsa.theory.restricted_loss": {"c": REAL},  # the scalar c of W_PV's corner is any real
    "lsa.theory.restricted_gradient": {"c": REAL},
    "lsa.theory.restricted_hessian": {"c": REAL},
    "lsa.theory.random_cov_loss": {"c": REAL},
    "lsa.theory.random_cov_gradient": {"c": REAL},
    "lsa.model.gradient_flow": {"c0": REAL},
    "lsa.model.restricted_gd": {"c0": REAL},
    "lsa.model.random_cov_flow": {"c0": REAL},
    "lsa.theory.manifold_point": {"delta": REAL},  # the balance gap delta is any real
    "lsa.experiments.on_invariant_set": {"c": REAL},  # the scalar c of W_PV's corner is any real
    "lsa.experiments.invariant_set_gradient": {"c": REAL},
    "lsa.experiments.mc_random_cov_loss": {"c": REAL, "U": {"numpy"}},  # U: a 2 x 2 block, for d = 2
    "induction.model.three_param_loss": {"alpha": REAL | {"numpy"}, "beta": REAL | {"numpy"},  # vectorised
                                          "gamma": REAL | {"numpy"}, "N": {"numpy"}},  # N: whole floats count
    "induction.model.three_param_grad": {"alpha": REAL | {"numpy"}, "beta": REAL | {"numpy"},
                                          "gamma": REAL | {"numpy"}, "N": {"numpy"}},
    "induction.emergence.three_param_flow": {"N": {"numpy"}},
    "validation.non_empty": {"values": {"numpy"}},  # an array is a non-empty sequence of its rows
    "validation.int_array": {"value": {"numpy"}},  # whole floats count as integers
    "lsa.theory.square": {"name": {"str"}},  # the name used in the message
    "balance.theory.eq7_bounds": {"C1": {"numpy"}, "C2": {"numpy"}},  # a 2 x 2 positive semi-definite matrix
    "balance.theory.linear_balance_ratio": {"C2": {"numpy"}},  # a 2 x 2 matrix, as w has 2 entries
    "plotting.block_heatmap": {"matrix": {"numpy"},  # a 2 x 2 matrix in 2 x 2 blocks
                               "title": {"str"}, "xlabel": {"str"}, "ylabel": {"str"}},  # "x" is a label
    "scan_snap.real_text.attention_row_entropy": {"weights": {"numpy"}},  # two rows of attention over two positions
    "scan_snap.theory.softmax": {"logits": {"numpy"}},  # the softmax of each row
    "scan_snap.theory.decoder_clock_h": {"s": {"0", "2.5", "numpy"}},  # a time s >= 0, scalar or array
    "scan_snap.theory.speed_control_gamma": {"t": {"0", "2.5", "numpy"}},  # a time t >= 0, scalar or array
    "scan_snap.theory.snap_Gamma": {"t": {"0", "2.5", "numpy"}},
    "scan_snap.theory.snap_B": {"t": {"0", "2.5", "numpy"}},
    "scan_snap.theory.decoder_residual_norm": {"h": {"0", "2.5", "numpy"}},  # the clock h >= 0, or an array
    "scan_snap.theory.e_prime": {"E": {"numpy"}},  # I + E is invertible
    "scan_snap.theory.population_zdot": {"gamma": REAL, "eta_Z": {"0", "2.5"}},  # gamma(t) is any real
    "balance.theory.linear_C1_C2": {"sigma": {"0"}}, "balance.theory.linear_sgd_runs": {"sigma": {"0"}},  # noiseless labels
    "balance.theory.ratio_on_minimum": {"D": REAL},  # |u|^2 - |w|^2 takes any sign
    "induction.subspace.rebound": {"exit_step": {"0"}},  # a loss may leave its plateau at the first step
    "scan_snap.model.train_yz": {"eta_Y": {"0"}, "eta_Z": {"0"}},  # a zero step size freezes that layer
    "scan_snap.real_text.make_transformer_lm": {"dropout": {"0"}},  # no dropout
    "scan_snap.model.sample_class_counts": {"n": {"0"}},  # class 0
    "scan_snap.lemmas.number_table": {"column": {"str"}},  # "x" titles a column
    "scan_snap.lemmas.lemma3_one_step": {"n": {"0"}},  # class 0
    "scan_snap.dynamics.attention_entropy": {"step_index": {"-1", "0"}},  # the last and the first recorded step
}

# Positive reals (a step size, a time, a scale, a tolerance): 2.5 is a valid value of each.
POSITIVE_REALS = {
    "validation.positive_number": "value",
    "induction.emergence.full_matrix_step": "lr",
    "induction.emergence.flow_trajectory": "t_end",
    "induction.emergence.gradient_descent_times": "eta",
    "induction.subspace.train_sgd": "lr",
    "balance.model.gradient_descent_run": "lr",
    "balance.model.train_attention_sgd": "lr",
    "balance.theory.law_prediction": "lr",
    "balance.theory.linear_C1_C2": "sigma",
    "balance.theory.linear_balance_ode_time": "ratio0 target sigma T",
    "balance.theory.linear_sgd_runs": "sigma lr",
    "balance.theory.linear_balance_experiment": "sigma ratio0",
    "balance.theory.linear_mc_noise_terms": "sigma",
    "balance.theory.conservation_rows": "midpoint_step",
    "scan_snap.model.train_yz": "eta_Y eta_Z",
    "scan_snap.theory.decoder_clock_h_star": "eta_Y",
    "scan_snap.theory.decoder_row_dynamics": "eta_Y",
    "scan_snap.theory.decoder_clock_h": "eta_Y",
    "scan_snap.theory.speed_control_gamma": "eta_Y",
    "scan_snap.theory.transition_time": "eta_Y",
    "scan_snap.theory.steps_to_residual": "eta_Y",
    "scan_snap.theory.residual_time": "eta_Y",
    "scan_snap.theory.class_count_theta": "eta_Y",
    "scan_snap.theory.class_count_sigma": "eta_Y",
    "scan_snap.theory.decoder_in_span": "eta_Y",
    "scan_snap.theory.decoder_run": "eta_Y",
    "scan_snap.theory.theorem5_coefficients": "eta_Y",
    "scan_snap.theory.population_zdot": "eta_Z",
    "scan_snap.theory.integrate_scan": "eta_Y eta_Z",
    "scan_snap.theory.snap_Gamma": "eta_Y eta_Z",
    "scan_snap.theory.snap_B": "eta_Y eta_Z",
    "scan_snap.theory.snap_B_ode": "eta_Y eta_Z",
    "scan_snap.lemmas.eq45_residuals": "eta_Y",
    "scan_snap.lemmas.speed_control_ratios": "eta_Y",
    "scan_snap.lemmas.corollary1_total": "eta_Y",
    "scan_snap.lemmas.theorem1_ratios": "eta_Y",
    "scan_snap.lemmas.eq88_readings": "eta_Y",
    "scan_snap.dynamics.theorem2_rates": "eta_Z",
    "scan_snap.dynamics.fig4_run": "eta_Y eta_Z",
    "scan_snap.dynamics.adam_winner": "eta",
    "scan_snap.dynamics.equal_distinct_classes": "weight",
    "scan_snap.dynamics.initial_prior": "eta_Y z_scale",
    "scan_snap.real_text.train_transformer_lm": "lr",
    "scan_snap.real_text.train_yz_text": "eta_Y eta_Z",
    "lsa.model.lsa_forward": "rho",
    "lsa.model.assumption33_init": "sigma",
    "lsa.model.gradient_flow": "T",
    "lsa.model.restricted_gd": "lr",
    "lsa.model.gradient_descent": "lr",
    "lsa.model.full_gradient_flow": "T",
    "lsa.model.sgd_full": "lr",
    "lsa.model.random_cov_flow": "T",
    "lsa.theory.pl_constant": "sigma",
    "lsa.theory.corollary43_thresholds": "eps",
    "lsa.experiments.lemma_c6_c8_runs": "K_410",
}
for _function, _names in POSITIVE_REALS.items():
    for _name in _names.split():
        ACCEPTED.setdefault(_function, {}).setdefault(_name, set()).add("2.5")


# Gaps not fixed yet, as "module.function:parameter:bad value" (strict xfail: a case that starts passing
# fails until it leaves this list). None are left.
KNOWN_GAPS: set[str] = set()


def _cases():
    for name, function in FUNCTIONS.items():
        for parameter in _required(function):
            for bad in BAD:
                yield f"{name}:{parameter}:{bad}"


CASES = list(_cases())


def test_every_api_function_has_a_valid_call():
    assert FUNCTIONS, "no function found on the API page"
    assert sorted(set(FUNCTIONS) - set(VALID)) == [], "give these functions an entry in VALID"
    assert sorted(set(VALID) - set(FUNCTIONS)) == [], "these entries of VALID name no API function"
    assert KNOWN_GAPS <= set(CASES), "KNOWN_GAPS names cases the sweep does not have"


def _finite(value, where="result"):
    """Fail if ``value`` holds a NaN or an infinity anywhere (numbers, arrays, tensors, containers)."""
    if isinstance(value, torch.Tensor):
        assert value.is_complex() or not value.is_floating_point() or torch.isfinite(value).all(), where
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        assert np.all(np.isfinite(value)), where
    elif isinstance(value, float):
        assert math.isfinite(value), where
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _finite(item, f"{where}[{index}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _finite(getattr(value, field.name), f"{where}.{field.name}")


@pytest.fixture(autouse=True)
def _sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLLIB_RESULTS", str(tmp_path / "results.jsonl"))
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


# The coverage script reads the paper texts, which live beside the repository (shared/papers).
NEEDS_PAPERS = {"coverage.results_list_from_texts", "coverage.quote_problems", "coverage.main"}


def _skip_without_papers(name):
    if name in NEEDS_PAPERS and not coverage.DEFAULT_PAPERS.is_dir():
        pytest.skip(f"the paper texts are not in {coverage.DEFAULT_PAPERS}")


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_call_gives_finite_results(name):
    _skip_without_papers(name)
    _finite(FUNCTIONS[name](**VALID[name]()))


@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.xfail(strict=True, reason="known gap"))
                                  if case in KNOWN_GAPS else case for case in CASES])
def test_bad_argument_is_rejected_by_name(case):
    name, parameter, bad = case.split(":")
    _skip_without_papers(name)
    function, kwargs = FUNCTIONS[name], VALID[name]()
    kwargs[parameter] = BAD[bad]
    accepted = bad in ACCEPTED.get(name, {}).get(parameter, ()) or (
        name.startswith("validation.") and parameter == "name" and bad == "str")  # "x" is a parameter's name
    # a shared check names the caller's parameter, which it is given as ``name``
    named = kwargs["name"] if name.startswith("validation.") and parameter in ("value", "values") else parameter
    try:
        function(**kwargs)
    except (ValueError, TypeError) as error:
        assert not accepted, f"ACCEPTED says {parameter}={bad} is valid for {name}, but it raised: {error}"
        assert re.search(rf"(?<![\w]){re.escape(named)}(?![\w])", str(error)), \
            f"{name} rejected {parameter}={bad} without naming it: {error}"
        return
    assert accepted, f"{name} accepted {parameter}={bad}"
