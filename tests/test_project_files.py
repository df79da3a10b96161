"""The project's front files agree with its package metadata: the licence pyproject names is the
LICENSE file's, and CITATION.cff cites the version pyproject ships."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_license_and_citation_match_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert project["license"]["text"] == "MIT" == cff["license"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == project["version"]
    assert cff["title"].startswith("InfoNCE Lab") and cff["authors"]
