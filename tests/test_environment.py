"""The pins in environment.yml (conda, Binder) and requirements.txt (make) must not drift apart."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_mirrors_the_requirement_pins():
    requirements = {
        line.strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    environment = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip_section = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    assert requirements <= set(pip_section), sorted(requirements - set(pip_section))
    assert "jupytext==1.19.6" in pip_section and "torch==2.13.0" in requirements
    assert all("==" in line for line in requirements), "requirements.txt holds exact pins only"
