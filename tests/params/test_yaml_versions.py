"""DVC reads params.yaml as YAML 1.2 (ruamel.yaml) and hashes what it reads; the stages read it
with the same parser (params/load.py). Where YAML 1.1 reads a value otherwise, the file is refused
with the key and both readings, so no one gets 8 where they wrote 010 thinking of DVC, or 10
thinking of PyYAML. Each case goes through DVC's own parser and ours: the same value, or a
refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from dvc.utils.serialize import parse_yaml

from infonce_lab.params import ConfigError, load_params
from infonce_lab.params.load import read_yaml

ROOT = Path(__file__).resolve().parents[2]

# (text, the key a refusal names; None: both read it the same and it is accepted)
CASES = {
    "octal-looking int": ("training:\n  epochs: 010\n", "training.epochs"),
    "sexagesimal": ("training:\n  batch_size: 2:08\n", "training.batch_size"),
    "yes as a value": ("training:\n  compile: yes\n", "training.compile"),
    "yes as a key": ("yes: 1\n", "yes"),
    "on as a value": ("flag: on\n", "flag"),
    "0o octal": ("losses:\n  name: 0o17\n", "losses.name"),
    "a name 1e3": ("study:\n  losses: [1e3]\n", None),   # 1000.0 and '1e3': the schema's to refuse
    "scientific lr": ("training:\n  lr: 3e-4\n", None),   # a float, or its text: one number
    "plain decimal": ("training:\n  lr: 0.0003\n  epochs: 10\n", None),
    "merge keys": ("base: &b {lr: 0.1, epochs: 3}\ntraining:\n  <<: *b\n  epochs: 5\n", None),
    "quoted": ("a: '010'\nb: 'yes'\n", None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dvc_and_the_stages_read_the_same_value_or_the_file_is_refused(tmp_path: Path,
                                                                      case: str) -> None:
    text, key = CASES[case]
    path = tmp_path / "params.yaml"
    path.write_text(text)
    dvc = parse_yaml(text, str(path))
    if key is None:
        assert read_yaml(path) == dvc
        return
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    message = str(err.value)
    assert f"  - {key}" in message and "YAML 1.1" in message and "YAML 1.2" in message, message


def test_the_shipped_params_read_the_same_in_both(tmp_path: Path) -> None:
    text = (ROOT / "params.yaml").read_text()
    assert read_yaml(ROOT / "params.yaml") == parse_yaml(text, "params.yaml")
    # an epochs the two YAMLs read as 60 and 48 is refused before any validation
    (tmp_path / "params.yaml").write_text(text.replace("\n  epochs: 60", "\n  epochs: 060", 1))
    with pytest.raises(ConfigError, match=r"training\.epochs = 48 in YAML 1\.1, 60 in YAML 1\.2"):
        load_params(tmp_path / "params.yaml")


def test_a_non_utf8_file_is_refused_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_bytes(b"training:\n  lr: 0.1 \xff\n")
    with pytest.raises(ConfigError, match=r"params\.yaml: not UTF-8 \(byte 20"):
        load_params(tmp_path / "params.yaml")


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    """Nine aliases of nine aliases …: 9^9 strings from 700 bytes ("billion laughs")."""
    lines, prev = ["a: &a [" + ", ".join(["lol"] * 9) + "]"], "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    (tmp_path / "params.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"aliases expand it to 4\d\d,\d{3},\d{3} values"):
        load_params(tmp_path / "params.yaml")


@pytest.mark.parametrize("text", [
    "a: " + "[" * 70 + "]" * 70 + "\n",                              # flow lists
    "a: " + "{b: " * 70 + "1" + "}" * 70 + "\n",                      # flow mappings
    "a:\n" + "".join("  " * i + "- \n" for i in range(1, 80)),       # block lists
], ids=["lists", "mappings", "block"])
def test_deep_nesting_is_refused_with_its_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"nested more than 64 levels deep \(line \d+\)"):
        load_params(tmp_path / "params.yaml")


def test_nesting_that_overflows_the_c_parser_is_refused_not_a_crash(tmp_path: Path) -> None:
    """100,000 nested lists overflow the C stack of the YAML composer (a segmentation fault,
    which DVC itself suffers); the file is refused before any parser reads it. In a child
    process, so that a crash fails this test instead of the test run."""
    import subprocess
    import sys

    (tmp_path / "params.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    proc = subprocess.run([sys.executable, "-m", "infonce_lab.params", "params.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "nested more than 64 levels" in proc.stderr, proc
