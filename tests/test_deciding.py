"""Pre-registered deciding runs: the rules in code, the archive, and the rows' verdicts following the rules."""

import json

import numpy as np
import pytest
import torch

from icllib import deciding


def standard_runs(accuracies, weights):
    """The six runs of standard-transformer-2048 with the given accuracies and previous-position weights."""
    names = deciding.EXPERIMENTS["standard-transformer-2048"]["runs"]
    return [{"run": name, "settings": {"init": name.split("-seed")[0]}, "accuracy": accuracy,
             "previous_weight": weight} for name, accuracy, weight in zip(names, accuracies, weights)]


@pytest.mark.parametrize("accuracies, verdict", [
    ([0.95, 0.92, 0.3, 0.91, 0.99, 0.2], "reproduced"),
    ([0.95, 0.92, 0.3, 0.91, 0.5, 0.2], "clarified"),
    ([0.95, 0.2, 0.3, 0.91, 0.5, 0.2], "not reproduced"),
    ([0.9, 0.9, 0.9, 0.89, 0.89, 0.89], "clarified"),
])
def test_the_width_2048_rule(accuracies, verdict):
    runs = standard_runs(accuracies, [0.0] * 6)
    assert deciding.rule_verdict("induction_subspace.standard-transformer-paper-width", runs)[0] == verdict


def score_runs(readings, settings=deciding.STANDARD_PAPER):
    """The three runs of standard-transformer-2048-scores, each (accuracy, share of the task's pairs read)."""
    return [{"run": f"gpt2-seed{seed}", "settings": dict(settings, init="gpt2", seed=seed), "accuracy": accuracy,
             "subdiagonal_rows": {"share_by_use": share, "argmax_at_previous": 31, "rows": 31}}
            for seed, (accuracy, share) in zip(deciding.STANDARD_SEEDS, readings)]


@pytest.mark.parametrize("readings, verdict", [
    ([(0.98, 1.0), (0.99, 0.9), (0.97, 0.3)], "reproduced"),         # 90 % of the pairs meets the bar
    ([(0.98, 1.0), (0.99, 0.89), (0.97, 0.3)], "not reproduced"),    # three learned, one shows it
    ([(0.98, 1.0), (0.5, 1.0), (0.4, 1.0)], "inconclusive"),         # a model that did not learn counts for nothing
    ([(0.98, 1.0), (0.99, 0.5), (0.4, 1.0)], "inconclusive"),
    ([(0.5, 1.0), (0.4, 1.0), (0.3, 1.0)], "inconclusive"),
])
def test_the_subdiagonal_rule_reads_the_scores_of_the_models_that_learned(readings, verdict):
    assert deciding.rule_verdict("induction_subspace.fig2-subdiagonal", score_runs(readings))[0] == verdict


def test_the_subdiagonal_rule_reads_only_runs_at_the_papers_setting():
    toy = score_runs([(0.98, 1.0)] * 3, settings=dict(deciding.STANDARD_PAPER, D=8))
    with pytest.raises(ValueError, match="runs must be at the paper's setting"):
        deciding.rule_verdict("induction_subspace.fig2-subdiagonal", toy)


def test_the_task_uses_each_adjacent_pair_as_often_as_its_offsets_allow():
    use = deciding.pair_use()
    assert use.sum() == 16 * 16 and use[0] == use[-1] == 1 and use.max() == 16 == use[15]
    reading = deciding.subdiagonal_reading([1.0] * 28 + [-2.0, -0.5, -3.0])   # rows 29-31 miss
    assert reading["argmax_at_previous"] == 28 and reading["share_by_use"] == round(1 - 6 / 256, 6)
    assert reading["nearest_flip"] == 0.5


def test_a_width_2048_run_archives_its_score_block():
    run = deciding.run_standard("gpt2", 1, device="cpu", D=8, steps=2, batch=4)
    scores = np.asarray(run["positional_scores"])
    assert scores.shape == (32, 32) and np.isfinite(scores).all()
    assert run["subdiagonal_rows"]["rows"] == len(run["subdiagonal_rows"]["margins"]) == 31
    assert 0 <= run["subdiagonal_rows"]["share_by_use"] <= 1


def overlap_runs(readings):
    return [{"run": f"seed{seed}", "settings": {}, "overlap": reading}
            for seed, reading in zip(deciding.B11_SEEDS, readings)]


OVERLAP = {"within_factor_2": 12, "beyond_two_se": 0}
NEAR = {"within_factor_2": 11, "beyond_two_se": 0}
MISS = {"within_factor_2": 9, "beyond_two_se": 1}


@pytest.mark.parametrize("readings, verdict", [
    ([OVERLAP, OVERLAP, OVERLAP, OVERLAP, MISS], "reproduced"),
    ([OVERLAP, OVERLAP, OVERLAP, None, NEAR], "inconclusive"),
    ([MISS] * 5, "not reproduced"),
    ([MISS, MISS, MISS, MISS, None], "inconclusive"),
    ([NEAR] * 5, "inconclusive"),
])
def test_the_overlap_rule(readings, verdict):
    assert deciding.rule_verdict("balance.fig6-overlap", overlap_runs(readings))[0] == verdict


def test_a_rule_reads_every_pre_registered_run():
    with pytest.raises(ValueError, match="runs must be the 5 runs of b11-batch200-seeds"):
        deciding.rule_verdict("balance.fig6-overlap", overlap_runs([OVERLAP] * 4))
    with pytest.raises(ValueError, match="row 'balance.b11-rate' has no deciding rule"):
        deciding.rule_verdict("balance.b11-rate", [])


def test_the_overlap_reading_of_a_run():
    run = {"checkpoints": [0, 10, 20, 30], "gK": [[[1.0] * 6] * 2] * 4, "gQ": [[[1.5] * 6] * 5 + [[3.0] * 6]] * 4,
           "gK_se": [[[0.01] * 6] * 2] * 4, "gQ_se": [[[0.01] * 6] * 2] * 4}
    run["gQ"] = [[[1.5] * 6, [3.0] * 6]] * 4
    reading = deciding.overlap_reading(run, at=(10, 20, 30))
    assert reading["within_factor_2"] == 6 and reading["beyond_two_se"] == 6
    assert deciding.overlap_reading(run, at=(20, 30, 40)) is None


def fig4_runs(readings, settings=deciding.FIG4_PAPER):
    """The three runs of fig4-batch256, each (exits of the standard and three-parameter runs, after-exit ratios
    (largest, smallest, last) or None)."""
    return [{"run": f"seed{seed}", "settings": dict(settings, seed=seed), "exits": {"full": full, "three": three},
             "after_exit": None if ratios is None else dict(zip(("largest", "smallest", "last"), ratios))}
            for seed, ((full, three), ratios) in zip(deciding.FIG4_SEEDS, readings)]


@pytest.mark.parametrize("exits, verdict", [
    ([(100, 90), (100, 75), (100, 120)], "reproduced"),      # the band's ends count
    ([(100, 101), (100, 74), (100, 95)], "not reproduced"),  # later, or more than 25 % earlier
    ([(100, None), (None, 80), (100, 95)], "not reproduced"),  # only one of the two left the plateau
    ([(None, None), (None, None), (100, 95)], "inconclusive"),
    ([(100, 95), (100, 120), (None, None)], "inconclusive"),
])
def test_the_exit_rule(exits, verdict):
    runs = fig4_runs([(pair, None) for pair in exits])
    assert deciding.rule_verdict("induction_subspace.hypothesis2", runs)[0] == verdict


@pytest.mark.parametrize("ratios, verdict", [
    ([(1.9, 0.6, 1.2), (2.0, 0.5, 1.0), (120.0, 1.0, 120.0)], "reproduced"),
    ([(120.0, 1.0, 120.0), (30.0, 0.9, 10.5), (1.5, 0.9, 1.0)], "not reproduced"),
    ([(30.0, 0.9, 9.0), (120.0, 1.0, 120.0), (1.5, 0.4, 1.0)], "inconclusive"),  # apart but not above 10 at the end
    ([None, (120.0, 1.0, 120.0), (1.5, 0.9, 1.0)], "inconclusive"),
])
def test_the_after_exit_rule(ratios, verdict):
    runs = fig4_runs([((100, 95), reading) for reading in ratios])
    assert deciding.rule_verdict("induction_subspace.hypothesis2-after-exit", runs)[0] == verdict


def test_the_fig4_rules_read_only_runs_at_app_ds_setting():
    toy = fig4_runs([((10, 9), (1.0, 1.0, 1.0))] * 3, settings=dict(deciding.FIG4_PAPER, batch=512))
    with pytest.raises(ValueError, match="runs must be at App. D's setting"):
        deciding.rule_verdict("induction_subspace.hypothesis2", toy)


def test_the_after_exit_reading_starts_at_the_later_exit():
    full, three = np.r_[np.full(30, 8.0), np.full(30, 4.0)], np.full(60, 1.0)
    reading = deciding.after_exit_reading(full, three, {"full": 5, "three": 20})
    assert reading == {"from_step": 20, "largest": 6.0, "smallest": 4.0, "last": 4.0}   # 20-step windows from 20
    assert deciding.after_exit_reading(full, three, {"full": None, "three": 20}) is None
    assert deciding.after_exit_reading(full, three, {"full": 5, "three": 50}) is None   # no 20-step window left


def test_a_fig4_run_measures_both_exits():
    run = deciding.run_fig4(1, device="cpu", D=8, N=4, steps=12, batch=16)
    assert set(run["exits"]) == {"full", "three"} and len(run["losses"]["full"]) == len(run["losses"]["three"])
    assert run["settings"]["lr"] == 1.0 and run["settings"]["D"] == 8
    with pytest.raises(ValueError, match="device must be the CPU"):
        deciding.run_fig4(1, device=torch.device("cuda"))


def test_every_row_with_a_complete_archive_carries_its_rules_verdict():
    for row, entry in deciding.verdicts().items():
        assert "another text of the rule" not in entry["why"], f"{row}: {entry['why']}"
        if entry["rule"] is not None:
            assert entry["registry"] == entry["rule"], f"{row}: registry {entry['registry']}, rule {entry['why']}"
        else:
            assert entry["registry"] == "inconclusive", f"{row}: {entry['why']}"


def test_a_run_is_archived_with_its_rule_commit_and_device(tmp_path):
    written = deciding.run_and_archive("standard-transformer-2048", ["gpt2-seed1"], device="cpu", root=tmp_path,
                                       D=8, steps=3, batch=4)
    record = json.loads(written[0].read_text(encoding="utf-8"))
    assert record["device"] == "cpu" and record["run"] == "gpt2-seed1" and record["commit"]
    assert set(record["rule_sha256"]) == set(deciding.EXPERIMENTS["standard-transformer-2048"]["rows"])
    assert [run["run"] for run in deciding.archived_runs("standard-transformer-2048", tmp_path)] == ["gpt2-seed1"]
    written = deciding.run_and_archive("b11-batch200-seeds", ["seed2"], device="cpu", root=tmp_path, steps=60,
                                       g_samples=8, checkpoint_every=20)
    record = json.loads(written[0].read_text(encoding="utf-8"))
    assert record["overlap_at"] == [20, 40, 60] and record["overlap"]["within_factor_2"] <= 12
    with pytest.raises(ValueError, match="names"):
        deciding.run_and_archive("b11-batch200-seeds", ["seed9"], device="cpu", root=tmp_path)


def test_a_rule_edited_after_the_runs_no_longer_matches_them():
    assert deciding.rule_hash("a  rule\n folded") == deciding.rule_hash("a rule folded")
    assert deciding.rule_hash("a rule") != deciding.rule_hash("another rule")


def test_seeds_batched_measure_what_each_seed_measures_alone(tmp_path):
    """The batched loop draws each seed's data from that seed's generators in the same order as a single run;
    only the summation order of the batched kernels differs (float32 rounding)."""
    alone = {seed: deciding.run_b11(seed, steps=60, g_samples=8, checkpoint_every=20) for seed in (2, 3)}
    together = deciding.run_b11_seeds([2, 3], steps=60, g_samples=8, checkpoint_every=20)
    for seed in (2, 3):
        assert together[seed]["series"]["checkpoints"] == alone[seed]["series"]["checkpoints"]
        for key in ("gK", "gQ"):
            assert np.allclose(together[seed]["series"][key], alone[seed]["series"][key], rtol=1e-4, atol=0)
        assert together[seed]["loss_last"] == pytest.approx(alone[seed]["loss_last"], rel=1e-5)
        assert together[seed]["overlap"]["within_factor_2"] == alone[seed]["overlap"]["within_factor_2"]
    written = deciding.run_and_archive("b11-batch200-seeds", ["seed4", "seed5"], device="cpu", root=tmp_path,
                                       steps=60, g_samples=8, checkpoint_every=20)
    assert [json.loads(path.read_text(encoding="utf-8"))["settings"]["batched_with"] for path in written] == [[4, 5], [4, 5]]
    with pytest.raises(ValueError, match="seeds must be distinct"):
        deciding.run_b11_seeds([1, 1], steps=2)
