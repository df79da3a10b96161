"""Text corpora for unsupervised SimCSE, and the sets they are evaluated on.

Two sources:

* **gensim** (offline default): the test data shipped inside the installed ``gensim`` package, read
  in place with ``gensim.test.utils.datapath`` — a shortened English Wikipedia dump (107 articles)
  and the Lee background corpus (300 news documents) for training; the Lee et al. (2005) document
  similarity set (50 news documents, 1,225 human-rated pairs) as the reported figure; and Pang &
  Lee's polarity sample (200 labelled sentences) for the probe and kNN.
* **simcse_wiki1m** (online, WEINCE §4.2): the SimCSE paper's 1M Wikipedia sentences and STS-B
  (dev for checkpoint selection, test for the reported figure), fetched with
  :func:`infonce_lab.data.fetch.fetch`.

The download stage writes a corpus once with :func:`materialise_text` (plain text and JSON plus a
checksum manifest); every later stage reads it back with :func:`load_text_raw`.

Encodings of gensim's files, found by inspecting their bytes (gensim 4.4.0): ``lee.cor`` is
Latin-1 with a single non-ASCII byte (0xA3, "£" in "£3,000"); ``lee_background.cor`` is pure
ASCII; ``pang_lee_polarity.cor`` is Windows-1252 (0x97 "—", 0xE9 "é", 0xF3 "ó", 0xED "í"). Each is
decoded strictly, trying UTF-8 first so that a future gensim that re-encodes them still reads right.
"""

from __future__ import annotations

import bz2
import csv
import functools
import gzip
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from infonce_lab.data.fetch import fetch
from infonce_lab.data.splits import verify_manifest
from infonce_lab.data.text_corpus import (
    LabelledTexts,
    PairSet,
    TextCorpus,
    normalise_space,
    pairset,
)
from infonce_lab.io import atomic_dir, read_json, sha256_file, write_json_atomic, write_text_atomic
from infonce_lab.params import GensimTextDataset, SimCSEWikiDataset

WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LEE_FILE = "lee.cor"
LEE_SIMILARITIES_FILE = "similarities0-1.txt"
LEE_BACKGROUND_FILE = "lee_background.cor"
POLARITY_FILE = "pang_lee_polarity.cor"
POLARITY_CLASSES = ["neg", "pos"]

SIMCSE_WIKI_NAME = "wiki1m_for_simcse.txt"
STSB_NAME = "stsbenchmark.tsv.gz"

MANIFEST = "MANIFEST.json"
TRAIN_TXT = "train.txt"
STS_TEST_JSON = "sts_test.json"
STS_VAL_JSON = "sts_val.json"
LABELLED_JSON = "labelled.json"


# ------------------------------------------------------------------------------- small helpers
def n_words(text: str) -> int:
    return len(text.split())


def _gensim_path(name: str) -> Path:
    # Imported lazily: gensim is only needed by the stage that reads its files.
    from gensim.test.utils import datapath

    return Path(datapath(name))


def _decode(data: bytes, legacy: str, what: str) -> str:
    """UTF-8 if the bytes are valid UTF-8, else the file's legacy 8-bit encoding, both strict.

    Strict decoding turns an unexpected byte into an error instead of a silent U+FFFD.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode(legacy)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}: neither UTF-8 nor {legacy}: {exc}") from exc


def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines would also split on characters such as U+2028 that can
    # occur inside a document.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _keep_by_length(sentences: list[str], min_words: int, max_words: int) -> list[str]:
    return [s for s in sentences if min_words <= n_words(s) <= max_words]


def dedupe(texts: list[str]) -> list[str]:
    """Drop repeated strings, keeping each first occurrence in place."""
    return list(dict.fromkeys(texts))


def seeded_subset(texts: list[str], k: int | None, seed: int) -> list[str]:
    """``k`` items drawn without replacement with ``seed``, in their original order (all if k is
    None or at least len(texts))."""
    if k is None or k >= len(texts):
        return list(texts)
    idx = np.sort(np.random.default_rng(seed).choice(len(texts), size=k, replace=False))
    return [texts[i] for i in idx]


# ------------------------------------------------------------------------- sentence splitting
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Never a sentence end: a title before a name.
_TITLES = _wordset(
    "mr mrs ms messrs dr prof st mt ft gen lt col maj capt cmdr sgt adm rev hon sen rep gov pres "
    "supt insp det fr")
# Usually not a sentence end, but can be one; see _STARTERS.
_ABBREVIATIONS = _wordset(
    "v c jr sr etc inc ltd co corp bros plc no nos vol vols pp p ch fig figs eq ed eds approx ca cf "
    "al vs viz dept univ assn est op ave blvd rd jan feb mar apr jun jul aug sep sept oct nov dec "
    "a.m p.m")
# Words that start sentences but rarely follow an abbreviation inside one: "… in the U.S. The
# company …" splits, "U.S. President" does not.
_STARTERS = _wordset(
    "The It He She They This That These Those There In But However We His Her Their Its "
    "After When While Although")
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*\s+")
_OPENERS = "\"'“‘(["
_INITIAL = re.compile(r"[A-Z]")
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")   # U.S, e.g, i.e, J.R.R (last dot stripped)


_WORD = re.compile(r"\S+")


def _next_word(text: str, pos: int) -> str:
    m = _WORD.match(text, pos)
    return m.group(0).lstrip(_OPENERS) if m else ""


def _token_before(text: str, end: int) -> str:
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _is_boundary(text: str, m: re.Match[str]) -> bool:
    """Whether the punctuation run matched by ``m`` ends a sentence."""
    nxt = _next_word(text, m.end())
    if not nxt or not (nxt[0].isupper() or nxt[0].isdigit()):
        return False
    punct = m.group(0).rstrip()
    if not punct.startswith(".") or punct.startswith(".."):
        return True            # "!", "?" and ellipses before a capital end a sentence
    token = _token_before(text, m.start()).lstrip(_OPENERS)
    low = token.lower()
    if low in _TITLES:
        return False
    if low in _ABBREVIATIONS or _INITIAL.fullmatch(token) or _DOTTED.fullmatch(token):
        return nxt in _STARTERS
    return True


def _split_raw(text: str) -> list[str]:
    """Sentence spans with their inner whitespace untouched (wiki cleaning reads double spaces)."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if _is_boundary(text, m):
            out.append(text[start: m.end()].strip())
            start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences with a regular expression and a few rules; normalise whitespace.

    A sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets)
    when whitespace and then an upper-case letter or a digit (optionally after an opening quote or
    bracket) follow. A full stop does not end a sentence after a title ("Mr.", "Dr.", "Sen."), and
    after other abbreviations ("Inc.", "etc.", "Jan.", "e.g.", "U.S.") or an initial ("J. Smith")
    only when the next word is a common sentence opener ("The", "It", "However", …). Decimals
    ("3.5") never split because no whitespace follows the point.

    Limits: good enough for news and Wikipedia prose, not a parser. It misses boundaries after an
    abbreviation followed by an uncommon opener ("… in the U.S. Congress met …" is right, "… made
    in the U.S. Prices rose" stays one sentence), splits after an unlisted abbreviation before a
    capital ("approx. Ten" is listed, "Gov't. Officials" is not), does not split when the next
    sentence starts in lower case, and knows nothing of quotations spanning sentences.
    """
    return [normalise_space(s) for s in _split_raw(text)]


# ------------------------------------------------------------------------------ Wikipedia extract
_REDIRECT = re.compile(r"\s*#redirect", re.IGNORECASE)
_MARKUP_START = tuple("*#:;=|!{}<")
_META_PREFIXES = ("file:", "image:", "category:", "alt=", "thumb", "wikipedia:")
_EMPHASIS = re.compile(r"'{2,}")          # ''italic'', '''bold''', '''''both'''''
_RESIDUE = re.compile(
    r"\[\[|\]\]|\{\{|\}\}|\||==|''|<|>|&#?\w+;|https?:|www\.|\b(?:Category|File|Image):"
    r"|\bthumb\b|\bpx\b|\balt=")
# Holes left where filter_wiki removed a template, math or a link target: "the Greek , i.e.",
# "where  is the albedo", "( or )".
_GAP = re.compile(r"\s[,.;:)\]]|[(\[]\s|\(\s*[,;]|\(\s*\)|\S\s{2,}\S")
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*$")


@functools.cache
def _wiki_texts() -> tuple[str, ...]:
    """filter_wiki'ed text of each non-redirect article in the extract, in file order."""
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    texts = []
    with bz2.open(_gensim_path(WIKI_FILE), "rb") as fh:
        for _title, text, _pageid in extract_pages(fh, filter_namespaces=("0",)):
            if not _REDIRECT.match(text):
                texts.append(filter_wiki(text))
    return tuple(texts)


def _prose_line(line: str) -> bool:
    """Whether a line of filter_wiki output is a paragraph of running text.

    Drops headings, lists, definition and indent lines, table cells (they start with whitespace
    after filter_wiki), gallery and caption leftovers (they keep a "|"), and caption fragments
    whose first words were a removed link (they start in lower case).
    """
    if not line or line[0].isspace() or line.startswith(_MARKUP_START) or "|" in line:
        return False
    body = _EMPHASIS.sub("", line).lstrip(_OPENERS)
    if not body or body.lower().startswith(_META_PREFIXES):
        return False
    return body[0].isupper() or body[0].isdigit()


def _clean_wiki_sentence(raw: str) -> str | None:
    """A normalised sentence, or None when it carries markup residue or holes."""
    if _RESIDUE.search(raw) or _GAP.search(raw):
        return None
    s = normalise_space(raw)
    if not (s[0].isupper() or s[0].isdigit() or (s[0] in _OPENERS and s[1:2].isupper())):
        return None
    # Unbalanced brackets or quotes mean a removed span or a quotation cut by the splitter.
    if not _ENDS_SENTENCE.search(s) or s.count("(") != s.count(")") or s.count('"') % 2:
        return None
    return s


@functools.cache
def _wiki_all_sentences() -> tuple[str, ...]:
    out = []
    for text in _wiki_texts():
        for line in text.split("\n"):
            if not _prose_line(line):
                continue
            for raw in _split_raw(_EMPHASIS.sub("", line)):
                s = _clean_wiki_sentence(raw)
                if s is not None:
                    out.append(s)
    return tuple(out)


def wiki_sentences(min_words: int, max_words: int) -> list[str]:
    """Clean prose sentences of gensim's shortened Wikipedia dump (107 articles), in file order.

    Redirect pages (99 of the 206 main-namespace pages) are skipped; of the rest only running-text
    paragraphs are kept, emphasis quotes are removed, and any sentence still carrying markup or
    a hole left by a removed template or formula is dropped rather than repaired.
    """
    return _keep_by_length(list(_wiki_all_sentences()), min_words, max_words)


# ----------------------------------------------------------------------------------- Lee corpora
@functools.cache
def _lee_documents() -> tuple[str, ...]:
    path = _gensim_path(LEE_FILE)
    docs = [normalise_space(d) for d in _lines(_decode(path.read_bytes(), "latin-1", str(path)))]
    if len(docs) != 50 or not all(docs):
        raise ValueError(f"{path}: expected 50 non-empty documents, found {len(docs)}")
    return tuple(docs)


@functools.cache
def _lee_background_documents() -> tuple[str, ...]:
    path = _gensim_path(LEE_BACKGROUND_FILE)
    text = _decode(path.read_bytes(), "cp1252", str(path))   # ASCII in gensim 4.4.0
    return tuple(d for d in (normalise_space(line) for line in _lines(text)) if d)


def lee_documents() -> list[str]:
    """The 50 Lee evaluation documents (``lee.cor``), whitespace-normalised."""
    return list(_lee_documents())


def lee_background_sentences(min_words: int, max_words: int) -> list[str]:
    """Sentences of the Lee background corpus (300 news documents, ``lee_background.cor``)."""
    out = [s for doc in _lee_background_documents() for s in split_sentences(doc)]
    return _keep_by_length(out, min_words, max_words)


def lee_similarity() -> PairSet:
    """Lee et al. (2005): 50 news documents, mean human similarity of all 1,225 pairs.

    ``similarities0-1.txt`` is a 50×50 matrix whose upper triangle holds the ratings (the lower
    triangle is 0 and the diagonal 1); pairs come in row-major order of the upper triangle. The
    raters used a 1–5 scale and the file divides the mean by 5 (0.2222… = mean 10/9 of 9 raters),
    so the scale is [0.2, 1]: what a fraction of the scale means (``align_min_gold``) uses that.
    """
    docs = lee_documents()
    path = _gensim_path(LEE_SIMILARITIES_FILE)
    sims = np.loadtxt(path, delimiter="\t", dtype=np.float64)
    if sims.shape != (len(docs), len(docs)):
        raise ValueError(f"{path}: expected a {len(docs)}×{len(docs)} matrix, got {sims.shape}")
    i, j = np.triu_indices(len(docs), k=1)
    return PairSet(
        name="lee50",
        texts=docs,
        pairs=np.stack([i, j], axis=1).astype(np.int64),
        scores=sims[i, j].astype(np.float64),
        scale=(0.2, 1.0),
    )


# ------------------------------------------------------------------------------------- polarity
def polarity() -> LabelledTexts:
    """Pang & Lee's polarity sample: 200 lower-cased, space-tokenised sentences, 100 per class."""
    path = _gensim_path(POLARITY_FILE)
    texts, labels = [], []
    for n, line in enumerate(_lines(_decode(path.read_bytes(), "cp1252", str(path))), 1):
        if not line.strip():
            continue
        tag, _, text = line.partition(" ")
        label = tag.removeprefix("__label__")
        if not tag.startswith("__label__") or label not in POLARITY_CLASSES:
            raise ValueError(f"{path}:{n}: expected '__label__neg' or '__label__pos', got {tag!r}")
        texts.append(normalise_space(text))
        labels.append(POLARITY_CLASSES.index(label))
    return LabelledTexts(texts=texts, labels=np.asarray(labels, dtype=np.int64),
                         classes=list(POLARITY_CLASSES))


# ------------------------------------------------------------------------- the gensim corpus
def _overlap_key(text: str) -> str:
    # Case and punctuation are ignored so a sentence that differs from an evaluation sentence only
    # in quotes or spacing still counts as a leak.
    return " ".join(re.findall(r"\w+", text.casefold()))


def drop_overlap(sentences: list[str], documents: list[str]) -> tuple[list[str], int]:
    """Remove sentences that occur inside any of ``documents`` (word-for-word, ignoring case and
    punctuation); return the survivors and how many were dropped."""
    haystack = "\n".join(f" {_overlap_key(d)} " for d in documents)
    kept = [s for s in sentences if f" {_overlap_key(s)} " not in haystack]
    return kept, len(sentences) - len(kept)


def gensim_train(cfg: GensimTextDataset) -> tuple[list[str], dict[str, int]]:
    """The training sentences of the gensim corpus and the counts behind them.

    Sources in ``cfg.train_sources`` order, de-duplicated (first kept), then any sentence that
    also occurs in the 50 Lee evaluation documents is dropped so they never leak into training,
    then the seeded subset of ``cfg.max_sentences``.
    """
    readers = {"wiki": wiki_sentences, "lee_background": lee_background_sentences}
    counts: dict[str, int] = {}
    pooled: list[str] = []
    for src in cfg.train_sources:
        sentences = readers[src](cfg.min_words, cfg.max_words)
        counts[f"n_{src}"] = len(sentences)
        pooled.extend(sentences)
    unique = dedupe(pooled)
    counts["n_duplicates_dropped"] = len(pooled) - len(unique)
    clean, counts["n_eval_overlap_dropped"] = drop_overlap(unique, lee_documents())
    train = seeded_subset(clean, cfg.max_sentences, cfg.seed)
    counts["n_train"] = len(train)
    return train, counts


def gensim_corpus(cfg: GensimTextDataset) -> TextCorpus:
    train, c = gensim_train(cfg)
    parts = " + ".join(f"{src} ({c[f'n_{src}']} sentences)" for src in cfg.train_sources)
    subset = (f"; seeded subset (seed {cfg.seed}) of {c['n_train']}"
              if cfg.max_sentences is not None else "")
    return TextCorpus(
        train=train,
        sts_test=lee_similarity(),
        sts_val=None,
        labelled=polarity(),
        source=(f"gensim test data: train = {parts}, {cfg.min_words}-{cfg.max_words} words, "
                f"{c['n_duplicates_dropped']} duplicates and {c['n_eval_overlap_dropped']} "
                f"sentences found in the Lee evaluation documents dropped{subset}; "
                "sts_test = Lee et al. (2005) 50 documents; labelled = Pang & Lee polarity (200)"),
    )


# --------------------------------------------------------------------- SimCSE wiki1m and STS-B
_STSB_COLUMNS = ("split", "genre", "dataset", "year", "sid", "score", "sentence1", "sentence2")


def read_stsb(path: str | Path) -> dict[str, PairSet]:
    """sentence-transformers' ``stsbenchmark.tsv.gz``, one :class:`PairSet` per split.

    The file is a gzipped TSV with a header (split, genre, dataset, year, sid, score, sentence1,
    sentence2), split in train/dev/test, score in [0, 5], no quoting (sentences contain bare
    quotes). Within a split each distinct sentence is stored once and pairs index into it. Keys are
    the split names; the PairSet names are ``stsb_<split>``.
    """
    path = Path(path)
    rows: dict[str, list[tuple[str, str, float]]] = {}
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = set(_STSB_COLUMNS[5:] + ("split",)) - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: not an STS-B file, columns {sorted(missing)} missing")
        for n, row in enumerate(reader, 2):
            # Fields beyond the header (row[None]) are ignored, as sentence-transformers does.
            s1, s2, score = row["sentence1"], row["sentence2"], row["score"]
            if s1 is None or s2 is None or score is None:
                raise ValueError(f"{path}:{n}: expected {len(_STSB_COLUMNS)} tab-separated fields")
            value = float(score)
            if not 0.0 <= value <= 5.0:
                raise ValueError(f"{path}:{n}: score {value} outside [0, 5]")
            rows.setdefault(row["split"], []).append(
                (normalise_space(s1), normalise_space(s2), value))
    return {split: pairset(f"stsb_{split}", r, (0.0, 5.0)) for split, r in rows.items()}


def read_simcse_wiki(path: str | Path) -> list[str]:
    """Non-empty lines of ``wiki1m_for_simcse.txt`` (UTF-8), whitespace-normalised, in order.

    Repeated lines are kept: SimCSE trains on the file as it is.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc}); delete it and run the stage again") from exc
    return [s for s in (normalise_space(line) for line in text.split("\n")) if s]


def fetch_simcse(cfg: SimCSEWikiDataset, downloads: str | Path) -> dict[str, str]:
    """Make sure both SimCSE files are in ``downloads``; return ``{file name: sha256}``.

    A file already there (placed by hand, or kept from an earlier run) is only verified. The
    digests let the caller record what was used, which pins them when the config has none.
    """
    downloads = Path(downloads)
    return {
        SIMCSE_WIKI_NAME: fetch(cfg.wiki_url, downloads / SIMCSE_WIKI_NAME, cfg.wiki_sha256,
                                cfg.timeout_s),
        STSB_NAME: fetch(cfg.stsb_url, downloads / STSB_NAME, cfg.stsb_sha256, cfg.timeout_s),
    }


def simcse_corpus(cfg: SimCSEWikiDataset, downloads: str | Path,
                  key: str = "text.datasets.wiki1m_stsb") -> TextCorpus:
    """SimCSE's unsupervised training sentences with STS-B dev (selection) and test (reported).

    ``via: url`` fetches with :func:`fetch_simcse`; the SHA-256 of both files is written into
    ``source`` so the manifest records exactly which files were used (trust on first use when none
    is pinned). ``via: hub`` reads both through ``datasets.load_dataset`` at the pinned commits
    (``data/text_hub.py``). ``key``: the params entry, named in errors.
    """
    downloads = Path(downloads)
    downloads.mkdir(parents=True, exist_ok=True)
    if cfg.via == "hub":
        from infonce_lab.data.text_hub import load_hub_simcse

        sentences, sets, origin = load_hub_simcse(cfg, downloads / "hub", key)
        where, stsb_where = f"{cfg.wiki_repo}@{cfg.wiki_revision}", cfg.stsb_repo
    else:
        digests = fetch_simcse(cfg, downloads)
        sets = read_stsb(downloads / STSB_NAME)
        sentences = read_simcse_wiki(downloads / SIMCSE_WIKI_NAME)
        where, stsb_where = cfg.wiki_url, cfg.stsb_url
        origin = "; ".join(f"{name} sha256 {d}" for name, d in digests.items())
    for split in ("dev", "test"):
        if split not in sets:
            raise ValueError(f"{stsb_where}: no STS-B '{split}' rows; {key} does not point at "
                             "STS-B (delete the download and run the stage again)")
    train = seeded_subset(sentences, cfg.max_sentences, cfg.seed)
    subset = f" (seeded subset, seed {cfg.seed})" if cfg.max_sentences is not None else ""
    return TextCorpus(
        train=train,
        sts_test=sets["test"],
        sts_val=sets["dev"],
        labelled=polarity(),
        source=(f"SimCSE wiki1m: train = {len(train)} sentences of {where}{subset}; "
                f"sts_val/sts_test = STS-B dev/test from {stsb_where}; labelled = Pang & Lee "
                f"polarity (200, gensim test data); {origin}"),
    )


# ---------------------------------------------------------------------------- on-disk format
# Every text dataset kind's reader: (its params entry, the downloads folder, its params key, named
# in errors) → the corpus.
TEXT_READERS: dict[str, Callable[[Any, Path, str], TextCorpus]] = {
    "gensim": lambda cfg, downloads, key: gensim_corpus(cfg),
    "simcse_wiki1m": simcse_corpus,
}


def read_text_corpus(cfg: GensimTextDataset | SimCSEWikiDataset, downloads: str | Path,
                     key: str) -> TextCorpus:
    """Text dataset ``cfg`` (``key``: its params entry) read by its kind's reader."""
    return TEXT_READERS[cfg.kind](cfg, Path(downloads), key)


def _pairset_json(ps: PairSet) -> dict[str, Any]:
    if not np.all(np.isfinite(ps.scores)):
        raise ValueError(f"{ps.name}: non-finite gold scores")
    return {"name": ps.name, "texts": list(ps.texts), "pairs": ps.pairs.astype(np.int64).tolist(),
            "scores": ps.scores.astype(np.float64).tolist(), "scale": list(ps.scale)}


def _pairset_from_json(obj: dict[str, Any]) -> PairSet:
    return PairSet(name=obj["name"], texts=list(obj["texts"]),
                   pairs=np.asarray(obj["pairs"], dtype=np.int64).reshape(-1, 2),
                   scores=np.asarray(obj["scores"], dtype=np.float64),
                   scale=(float(obj["scale"][0]), float(obj["scale"][1])))


def materialise_text(corpus: TextCorpus, out_dir: str | Path,
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``corpus`` into ``out_dir`` atomically, with a checksum manifest; return the manifest.

    Files: ``train.txt`` (UTF-8, one sentence a line), ``sts_test.json``, ``sts_val.json`` and
    ``labelled.json`` when present, and ``MANIFEST.json`` (source, counts, SHA-256 of each file,
    ``extra``).
    """
    bad = next((s for s in corpus.train if "\n" in s or "\r" in s), None)
    if bad is not None:
        raise ValueError(f"training sentence contains a line break: {bad[:80]!r}")
    with atomic_dir(out_dir) as tmp:
        write_text_atomic(tmp / TRAIN_TXT, "".join(f"{s}\n" for s in corpus.train))
        write_json_atomic(tmp / STS_TEST_JSON, _pairset_json(corpus.sts_test))
        files = [TRAIN_TXT, STS_TEST_JSON]
        if corpus.sts_val is not None:
            write_json_atomic(tmp / STS_VAL_JSON, _pairset_json(corpus.sts_val))
            files.append(STS_VAL_JSON)
        if corpus.labelled is not None:
            lab = corpus.labelled
            write_json_atomic(tmp / LABELLED_JSON, {"texts": list(lab.texts),
                                                    "labels": lab.labels.astype(np.int64).tolist(),
                                                    "classes": list(lab.classes)})
            files.append(LABELLED_JSON)
        manifest = {
            "kind": "text",
            "source": corpus.source,
            "counts": {
                "n_train": len(corpus.train),
                "n_sts_test_pairs": len(corpus.sts_test.pairs),
                "n_sts_val_pairs": len(corpus.sts_val.pairs) if corpus.sts_val else 0,
                "n_labelled": len(corpus.labelled.texts) if corpus.labelled else 0,
            },
            "files": {f: sha256_file(tmp / f) for f in files},
            "extra": dict(extra or {}),
        }
        write_json_atomic(tmp / MANIFEST, manifest)
    return manifest


def verify_text_manifest(data_dir: str | Path) -> dict[str, Any]:
    """Check every file listed in ``data_dir``'s manifest against its SHA-256; return the manifest."""
    return verify_manifest(data_dir, (TRAIN_TXT, STS_TEST_JSON), "dvc repro")


def load_text_raw(data_dir: str | Path) -> TextCorpus:
    """Read a corpus written by :func:`materialise_text`, after checking its manifest."""
    data_dir = Path(data_dir)
    manifest = verify_text_manifest(data_dir)
    files = manifest["files"]
    train_text = (data_dir / TRAIN_TXT).read_bytes().decode("utf-8")
    train = train_text.split("\n")[:-1] if train_text else []
    val = (_pairset_from_json(read_json(data_dir / STS_VAL_JSON))
           if STS_VAL_JSON in files else None)
    labelled = None
    if LABELLED_JSON in files:
        obj = read_json(data_dir / LABELLED_JSON)
        labelled = LabelledTexts(texts=list(obj["texts"]),
                                 labels=np.asarray(obj["labels"], dtype=np.int64),
                                 classes=list(obj["classes"]))
    return TextCorpus(train=train, sts_test=_pairset_from_json(read_json(data_dir / STS_TEST_JSON)),
                      sts_val=val, labelled=labelled, source=manifest["source"])


__all__ = [
    "PairSet", "LabelledTexts", "TextCorpus", "split_sentences", "wiki_sentences",
    "lee_documents", "lee_background_sentences", "lee_similarity", "polarity", "drop_overlap",
    "gensim_train", "gensim_corpus", "read_stsb", "read_simcse_wiki", "fetch_simcse",
    "simcse_corpus",
    "materialise_text", "verify_text_manifest", "load_text_raw", "dedupe", "seeded_subset",
    "normalise_space",
]
