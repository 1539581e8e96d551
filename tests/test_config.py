import numpy as np
import pytest
import torch

from icllib import config


@pytest.mark.parametrize("value", ["quick", "default", "full"])
def test_mode_reads_the_variable(monkeypatch, value):
    monkeypatch.setenv("ICLLIB_MODE", value)
    assert config.mode() == value


def test_mode_defaults_to_default(monkeypatch):
    monkeypatch.delenv("ICLLIB_MODE", raising=False)
    assert config.mode() == "default"


@pytest.mark.parametrize("value", ["bogus", "", "Quick"])
def test_bad_mode_names_the_variable_and_the_choices(monkeypatch, value):
    monkeypatch.setenv("ICLLIB_MODE", value)
    with pytest.raises(ValueError, match=r"ICLLIB_MODE.*quick, default, full"):
        config.mode()


def test_by_mode_picks_the_current_value(monkeypatch):
    monkeypatch.setenv("ICLLIB_MODE", "full")
    assert config.by_mode(quick=1, default=2, full=3) == 3
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    assert config.by_mode(quick=1, default=2, full=3) == 1


def test_by_mode_needs_all_three_values():
    with pytest.raises(TypeError):
        config.by_mode(quick=1, default=2)


def test_generators_are_reproducible_and_independent():
    assert np.array_equal(config.rng(7).normal(size=5), config.rng(7).normal(size=5))
    assert not np.array_equal(config.rng(7).normal(size=5), config.rng(8).normal(size=5))
    first = torch.randn(5, generator=config.torch_generator(7))
    assert torch.equal(first, torch.randn(5, generator=config.torch_generator(7)))


@pytest.mark.parametrize("seed", [-1, 1.5, "3", None, True])
def test_bad_seed_raises(seed):
    with pytest.raises(ValueError, match="seed"):
        config.rng(seed)
    with pytest.raises(ValueError, match="seed"):
        config.torch_generator(seed)


def test_progress_is_silent_in_quick_mode(monkeypatch, capsys):
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    assert list(config.progress(range(3), desc="steps")) == [0, 1, 2]
    assert capsys.readouterr().err == ""
