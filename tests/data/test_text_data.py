"""Text corpora (gensim's shipped test data, STS-B, SimCSE wiki1m) and the careful downloader.

No test touches the internet: downloads go to a local http.server on 127.0.0.1, to a closed local
port, or are skipped because the file is already in place.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import hashlib
import http.server
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest

from infonce_lab.data import fetch as fetch_module
from infonce_lab.data import text as T
from infonce_lab.data.fetch import DownloadError, fetch, verify_sha256
from infonce_lab.params import GensimTextDataset, SimCSEWikiDataset

REPLACEMENT = "\ufffd"
MARKUP = ("[[", "]]", "{{", "}}", "|", "==", "'''", "''", "<ref", "&nbsp;", "Category:", "File:")


# ------------------------------------------------------------------------------- helpers
def _closed_port() -> int:
    """A local port nothing listens on: bound, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static file server on 127.0.0.1 over a temporary folder: (base URL, folder)."""
    root = tmp_path / "served"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def _no_leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


STSB_HEADER = ["split", "genre", "dataset", "year", "sid", "score", "sentence1", "sentence2"]
STSB_ROWS = [
    ["train", "main-captions", "MSRvid", "2012test", "0001", "5.000", "A plane is taking off.",
     "An air plane is taking off."],
    ["dev", "main-captions", "MSRvid", "2012test", "0000", "5.000", "A man with a hard hat is dancing.",
     "A man wearing a hard hat is dancing."],
    ["dev", "main-captions", "MSRvid", "2012test", "0002", "0.500", "A man with a hard hat is dancing.",
     'A "young" child is riding a horse.'],
    ["test", "main-news", "headlines", "2016", "0003", "2.400", "Obama signs bill.",
     "Bush vetoes bill."],
    ["test", "main-news", "headlines", "2016", "0004", "4.250", "Bush vetoes bill.",
     "President Bush vetoes the bill."],
    ["test", "main-forum", "answers-forums", "2015", "0005", "0.000", "It's 5' tall.",
     "Obama signs bill."],
]


def _write_stsb(path: Path, rows: list[list[str]] = STSB_ROWS) -> Path:
    with gzip.open(path, "wt", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n",
                            escapechar=None, quotechar=None)
        writer.writerow(STSB_HEADER)
        writer.writerows(rows)
    return path


def _assert_corpus_equal(a: T.TextCorpus, b: T.TextCorpus) -> None:
    assert a.train == b.train
    assert a.source == b.source
    for x, y in [(a.sts_test, b.sts_test), (a.sts_val, b.sts_val)]:
        assert (x is None) == (y is None)
        if x is None or y is None:
            continue
        assert (x.name, x.texts, x.scale) == (y.name, y.texts, y.scale)
        assert x.pairs.dtype == y.pairs.dtype == np.int64
        np.testing.assert_array_equal(x.pairs, y.pairs)
        np.testing.assert_array_equal(x.scores, y.scores)
    assert (a.labelled is None) == (b.labelled is None)
    if a.labelled is not None and b.labelled is not None:
        assert (a.labelled.texts, a.labelled.classes) == (b.labelled.texts, b.labelled.classes)
        np.testing.assert_array_equal(a.labelled.labels, b.labelled.labels)


# ------------------------------------------------------------------------- sentence splitting
@pytest.mark.parametrize("text, expected", [
    ("Mr. Smith went to Washington. He arrived on Monday.",
     ["Mr. Smith went to Washington.", "He arrived on Monday."]),
    ("Dr. Jones and J. R. Smith met. It cost 3.5 million dollars.",
     ["Dr. Jones and J. R. Smith met.", "It cost 3.5 million dollars."]),
    ("Tools, e.g. Hammers, are sold in the U.S. They are cheap.",
     ["Tools, e.g. Hammers, are sold in the U.S.", "They are cheap."]),
    ("The U.S. Senate voted. Really? Yes! \"Fine.\" She left.",
     ["The U.S. Senate voted.", "Really?", "Yes!", "\"Fine.\"", "She left."]),
    ("Born c. 1815 in France. In 1990 it grew 2.5 per cent. 2001 was calm.",
     ["Born c. 1815 in France.", "In 1990 it grew 2.5 per cent.", "2001 was calm."]),
    ("  Spaces\tand\nnewlines   are normalised.  Next one.  ",
     ["Spaces and newlines are normalised.", "Next one."]),
    ("no split before lower case. like this", ["no split before lower case. like this"]),
    ("", []),
])
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert T.split_sentences(text) == expected


# ----------------------------------------------------------------------------------- Lee set
def test_lee_similarity() -> None:
    lee = T.lee_similarity()
    assert lee.name == "lee50" and lee.scale == (0.2, 1.0)
    assert lee.scores.min() == pytest.approx(0.2)  # a 1–5 scale divided by 5
    assert len(lee.texts) == 50 and all(lee.texts)
    assert lee.pairs.shape == (1225, 2) and lee.pairs.dtype == np.int64
    assert lee.scores.shape == (1225,) and lee.scores.dtype == np.float64
    assert np.all(lee.pairs[:, 0] < lee.pairs[:, 1])
    assert len({tuple(p) for p in lee.pairs.tolist()}) == 1225
    assert lee.scores.min() >= 0.0 and lee.scores.max() <= 1.0
    # First two entries of the matrix's first row: similarities0-1.txt starts "1\t0.3\t0.24".
    assert tuple(lee.pairs[0]) == (0, 1) and lee.scores[0] == pytest.approx(0.3)
    assert tuple(lee.pairs[1]) == (0, 2) and lee.scores[1] == pytest.approx(0.24)
    # lee.cor's only non-ASCII byte is 0xA3, the pound sign in Latin-1.
    assert sum("£3,000" in t for t in lee.texts) == 1
    assert not any(REPLACEMENT in t or "\n" in t for t in lee.texts)


def test_lee_background_sentences() -> None:
    sentences = T.lee_background_sentences(5, 80)
    assert 2550 <= len(sentences) <= 2800           # 2,678 with gensim 4.4.0
    assert sentences[0].startswith("Hundreds of people have been forced to vacate their homes")
    assert all(5 <= len(s.split()) <= 80 for s in sentences)
    assert not any(REPLACEMENT in s or "\n" in s for s in sentences)
    assert len(T.lee_background_sentences(1, 10**6)) >= len(sentences)


# ------------------------------------------------------------------------------------ polarity
def test_polarity() -> None:
    pol = T.polarity()
    assert pol.classes == ["neg", "pos"]
    assert len(pol.texts) == 200 and pol.labels.dtype == np.int64
    assert np.bincount(pol.labels).tolist() == [100, 100]
    assert pol.texts[0] == "simplistic , silly and tedious ."
    assert not any(REPLACEMENT in t or t.startswith("__label__") for t in pol.texts)
    joined = "\n".join(pol.texts)
    # cp1252 bytes in the file: 0xE9 é, 0xF3 ó, 0xED í, and 0x97 — (undefined in Latin-1).
    assert "the action clichés just pile up ." in pol.texts
    assert "el ladrón de orquídeas" in joined
    assert "bender — and i know" in joined
    assert "\x97" not in joined


# ---------------------------------------------------------------------------------- Wikipedia
def test_wiki_sentences() -> None:
    sentences = T.wiki_sentences(5, 80)
    assert 16000 <= len(sentences) <= 17700         # 16,830 with gensim 4.4.0
    assert sentences[0] == ("Anarchism is a political philosophy that advocates self-governed "
                            "societies based on voluntary institutions.")
    assert all(5 <= len(s.split()) <= 80 for s in sentences)
    for s in sentences:
        assert not any(m in s for m in MARKUP), s
        assert s == " ".join(s.split()) and "#REDIRECT" not in s.upper()
    assert not any(REPLACEMENT in s for s in sentences)
    assert T.wiki_sentences(5, 80) == sentences                       # deterministic
    assert len(T.wiki_sentences(10, 20)) < len(sentences)


# -------------------------------------------------------------------------------- gensim corpus
def test_drop_overlap_catches_evaluation_sentences() -> None:
    docs = ["Alpha beta gamma delta. The quick brown fox jumps over the lazy dog."]
    kept, dropped = T.drop_overlap(
        ["the quick brown fox  jumps over the LAZY dog!", "A different sentence here.",
         "quick brown"], docs)
    # Word-for-word inside a document counts, whatever the case, punctuation or spacing.
    assert kept == ["A different sentence here."] and dropped == 2


def test_gensim_corpus() -> None:
    cfg = GensimTextDataset()
    corpus = T.gensim_corpus(cfg)
    train, counts = T.gensim_train(cfg)
    assert corpus.train == train and counts["n_train"] == len(train)
    assert len(set(train)) == len(train)
    assert counts["n_wiki"] + counts["n_lee_background"] == (
        len(train) + counts["n_duplicates_dropped"] + counts["n_eval_overlap_dropped"])
    # The evaluation documents never leak into training, even sentence by sentence.
    lee_sentences = {s for d in T.lee_documents() for s in T.split_sentences(d)}
    assert not lee_sentences & set(train)
    assert T.drop_overlap(train, T.lee_documents())[1] == 0
    assert corpus.sts_test.name == "lee50" and corpus.sts_val is None
    assert corpus.labelled is not None and len(corpus.labelled.texts) == 200
    assert "Lee" in corpus.source and "dropped" in corpus.source
    # Sources keep the configured order: the Wikipedia sentences come first.
    assert train[0].startswith("Anarchism is a political philosophy")


def test_gensim_corpus_subset_is_seeded_and_ordered() -> None:
    full, _ = T.gensim_train(GensimTextDataset(train_sources=["lee_background"]))
    a, _ = T.gensim_train(GensimTextDataset(train_sources=["lee_background"], max_sentences=300,
                                            seed=1))
    b, _ = T.gensim_train(GensimTextDataset(train_sources=["lee_background"], max_sentences=300,
                                            seed=1))
    c, _ = T.gensim_train(GensimTextDataset(train_sources=["lee_background"], max_sentences=300,
                                            seed=2))
    assert a == b and a != c and len(a) == 300
    position = {s: i for i, s in enumerate(full)}
    assert [position[s] for s in a] == sorted(position[s] for s in a)   # original order kept
    assert T.seeded_subset(full, 10**9, 0) == full


# ------------------------------------------------------------------------------ on-disk format
def _small_corpus(with_val: bool) -> T.TextCorpus:
    test = T.PairSet(name="toy", texts=["a b", "c d", "é ü “q”"],
                     pairs=np.array([[0, 1], [1, 2]], dtype=np.int64),
                     scores=np.array([0.1, 4.75]), scale=(0.0, 5.0))
    val = T.PairSet(name="toy_val", texts=["x", "y"], pairs=np.array([[0, 1]], dtype=np.int64),
                    scores=np.array([1.0 / 3.0]), scale=(0.0, 5.0)) if with_val else None
    labelled = T.LabelledTexts(texts=["good", "bad"], labels=np.array([1, 0], dtype=np.int64),
                               classes=["neg", "pos"])
    return T.TextCorpus(train=["First sentence.", "Ünïcödé — ok.", "", "Last."], sts_test=test,
                        sts_val=val, labelled=labelled, source="toy corpus")


@pytest.mark.parametrize("with_val", [True, False])
def test_materialise_round_trip(tmp_path: Path, with_val: bool) -> None:
    corpus = _small_corpus(with_val)
    manifest = T.materialise_text(corpus, tmp_path / "raw", extra={"digests": {"f": "0" * 64}})
    assert manifest["counts"] == {"n_train": 4, "n_sts_test_pairs": 2,
                                  "n_sts_val_pairs": 1 if with_val else 0, "n_labelled": 2}
    assert manifest["extra"] == {"digests": {"f": "0" * 64}}
    assert ("sts_val.json" in manifest["files"]) is with_val
    assert (tmp_path / "raw" / "train.txt").read_text(encoding="utf-8").count("\n") == 4
    _assert_corpus_equal(T.load_text_raw(tmp_path / "raw"), corpus)


def test_materialise_round_trip_gensim(tmp_path: Path) -> None:
    corpus = T.gensim_corpus(GensimTextDataset(max_sentences=200, seed=3))
    T.materialise_text(corpus, tmp_path / "raw")
    _assert_corpus_equal(T.load_text_raw(tmp_path / "raw"), corpus)


def test_load_detects_tampering(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    T.materialise_text(_small_corpus(True), out)
    path = out / "sts_test.json"
    data = bytearray(path.read_bytes())
    data[data.index(b"4.75")] = ord("3")
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"sts_test\.json.*checksum mismatch.*download stage"):
        T.load_text_raw(out)
    (out / "sts_test.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"sts_test\.json.*download stage"):
        T.load_text_raw(out)
    (out / "MANIFEST.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"MANIFEST\.json.*download stage"):
        T.load_text_raw(out)


def test_materialise_rejects_line_breaks_and_keeps_old_output(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    T.materialise_text(_small_corpus(False), out)
    before = (out / "MANIFEST.json").read_bytes()
    bad = _small_corpus(False)
    bad = T.TextCorpus(train=["two\nlines"], sts_test=bad.sts_test, sts_val=None, labelled=None,
                       source="bad")
    with pytest.raises(ValueError, match="line break"):
        T.materialise_text(bad, out)
    assert (out / "MANIFEST.json").read_bytes() == before


# ------------------------------------------------------------------------------- STS-B, wiki1m
def test_read_stsb(tmp_path: Path) -> None:
    sets = T.read_stsb(_write_stsb(tmp_path / "stsbenchmark.tsv.gz"))
    assert set(sets) == {"train", "dev", "test"}
    dev, test = sets["dev"], sets["test"]
    assert dev.name == "stsb_dev" and test.name == "stsb_test" and test.scale == (0.0, 5.0)
    # The repeated sentence is stored once; bare quotes survive QUOTE_NONE.
    assert dev.texts == ["A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.",
                         'A "young" child is riding a horse.']
    np.testing.assert_array_equal(dev.pairs, [[0, 1], [0, 2]])
    np.testing.assert_array_equal(dev.scores, [5.0, 0.5])
    assert test.texts == ["Obama signs bill.", "Bush vetoes bill.", "President Bush vetoes the bill.",
                          "It's 5' tall."]
    np.testing.assert_array_equal(test.pairs, [[0, 1], [1, 2], [3, 0]])
    np.testing.assert_allclose(test.scores, [2.4, 4.25, 0.0])
    for ps in (dev, test):
        assert [[ps.texts[i], ps.texts[j]] for i, j in ps.pairs] == [
            r[6:8] for r in STSB_ROWS if f"stsb_{r[0]}" == ps.name]


def test_read_stsb_rejects_bad_scores(tmp_path: Path) -> None:
    rows = [["test", "g", "d", "y", "1", "7.5", "One.", "Two."]]
    with pytest.raises(ValueError, match=r"outside \[0, 5\]"):
        T.read_stsb(_write_stsb(tmp_path / "bad.tsv.gz", rows))


def test_simcse_corpus_uses_files_placed_by_hand(tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / T.SIMCSE_WIKI_NAME).write_text(
        "First  sentence.\n\n  Second one.\r\nThird.\nFirst  sentence.\n", encoding="utf-8")
    _write_stsb(downloads / T.STSB_NAME)
    port = _closed_port()   # any network access would fail the test
    cfg = SimCSEWikiDataset(wiki_url=f"https://127.0.0.1:{port}/wiki.txt",
                            stsb_url=f"https://127.0.0.1:{port}/stsb.tsv.gz", timeout_s=1.0)
    corpus = T.simcse_corpus(cfg, downloads)
    digests = T.fetch_simcse(cfg, downloads)
    assert corpus.train == ["First sentence.", "Second one.", "Third.", "First sentence."]
    assert corpus.sts_test.name == "stsb_test" and corpus.sts_val is not None
    assert corpus.sts_val.name == "stsb_dev" and len(corpus.sts_val.pairs) == 2
    assert digests == {name: hashlib.sha256((downloads / name).read_bytes()).hexdigest()
                       for name in (T.SIMCSE_WIKI_NAME, T.STSB_NAME)}
    assert all(f"{name} sha256 {d}" in corpus.source for name, d in digests.items())
    sub = T.simcse_corpus(cfg.model_copy(update={"max_sentences": 2, "seed": 0}), downloads)
    assert len(sub.train) == 2
    T.materialise_text(corpus, tmp_path / "raw", extra={"sha256": digests})
    _assert_corpus_equal(T.load_text_raw(tmp_path / "raw"), corpus)


# ------------------------------------------------------------------------------------- fetch()
def test_fetch_downloads_and_verifies(http_root: tuple[str, Path], tmp_path: Path) -> None:
    base, root = http_root
    payload = b"line one\nline two\n" * 1000
    (root / "data.txt").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    dest = tmp_path / "dl" / "data.txt"
    assert fetch(f"{base}/data.txt", dest, digest, timeout_s=5.0) == digest
    assert dest.read_bytes() == payload and _no_leftovers(dest.parent) == []
    # Trust on first use: no digest pinned, the digest is returned for the caller to record.
    dest2 = tmp_path / "dl" / "tofu.txt"
    assert fetch(f"{base}/data.txt", dest2, None, timeout_s=5.0) == digest


def test_fetch_checksum_mismatch_leaves_nothing(http_root: tuple[str, Path],
                                                tmp_path: Path) -> None:
    base, root = http_root
    (root / "data.txt").write_bytes(b"tampered")
    dest = tmp_path / "dl" / "data.txt"
    wrong = "0" * 64
    with pytest.raises(DownloadError) as err:
        fetch(f"{base}/data.txt", dest, wrong, timeout_s=5.0)
    msg = str(err.value)
    assert f"{base}/data.txt" in msg and wrong in msg
    assert hashlib.sha256(b"tampered").hexdigest() in msg
    assert not dest.exists() and _no_leftovers(dest.parent) == []


def test_fetch_http_error(http_root: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = http_root
    dest = tmp_path / "dl" / "missing.txt"
    with pytest.raises(DownloadError, match="HTTP 404") as err:
        fetch(f"{base}/missing.txt", dest, None, timeout_s=5.0)
    assert str(dest) in str(err.value)
    assert not dest.exists() and _no_leftovers(dest.parent) == []


def test_fetch_file_url(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"\x00\x01binary")
    dest = tmp_path / "dl" / "copy.bin"
    digest = fetch(src.as_uri(), dest, None)
    assert dest.read_bytes() == b"\x00\x01binary"
    assert digest == verify_sha256(dest, digest)


def test_fetch_offline_fails_fast_with_manual_instructions(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/wiki1m_for_simcse.txt"
    dest = tmp_path / "downloads" / "wiki1m_for_simcse.txt"
    t0 = time.monotonic()
    with pytest.raises(DownloadError) as err:
        fetch(url, dest, None, timeout_s=2.0)
    assert time.monotonic() - t0 < 5.0
    msg = str(err.value)
    assert url in msg and str(dest) in msg
    assert "download it on a machine with internet and put it at" in msg
    assert "run the stage again" in msg
    assert not dest.exists() and _no_leftovers(dest.parent) == []


def test_fetch_uses_placed_file_without_network(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("fetch() went to the network for a file already in place")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    monkeypatch.setattr("socket.getaddrinfo", no_network)
    dest = tmp_path / "placed.txt"
    dest.write_bytes(b"placed by hand")
    digest = hashlib.sha256(b"placed by hand").hexdigest()
    url = "http://unreachable.invalid/placed.txt"
    assert fetch(url, dest, digest, timeout_s=1.0) == digest
    assert fetch(url, dest, None, timeout_s=1.0) == digest
    with pytest.raises(DownloadError, match="sha256 mismatch") as err:
        fetch(url, dest, "f" * 64, timeout_s=1.0)
    assert str(dest) in str(err.value)
    assert dest.read_bytes() == b"placed by hand"    # a file placed by hand is never deleted


def _refused_within(url: str, dest: Path, match: str, seconds: float) -> None:
    """fetch() of ``url`` fails with ``match`` within ``seconds``, naming the URL and ``dest``,
    and leaves nothing in ``dest``'s folder."""
    t0 = time.monotonic()
    with pytest.raises(DownloadError, match=match) as err:
        fetch(url, dest, None, timeout_s=1.0)
    assert time.monotonic() - t0 < seconds
    assert url in str(err.value) and str(dest) in str(err.value)
    assert not dest.exists() and _no_leftovers(dest.parent) == []


def test_fetch_silent_server_times_out(tmp_path: Path) -> None:
    # A socket that listens but never answers: connect succeeds, the first read must time out.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/stsbenchmark.tsv.gz"
        _refused_within(url, tmp_path / "stsbenchmark.tsv.gz", "timed out", 4.0)


def test_fetch_bounds_a_stalled_name_lookup(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Socket timeouts do not cover DNS; an offline resolver that hangs must not hang the stage.
    monkeypatch.setattr("socket.getaddrinfo", lambda *a, **k: time.sleep(3.0))
    url = "http://example.invalid/wiki1m_for_simcse.txt"
    t0 = time.monotonic()
    with pytest.raises(DownloadError, match="name resolution") as err:
        fetch(url, tmp_path / "wiki.txt", None, timeout_s=0.5)
    assert time.monotonic() - t0 < 2.0
    assert url in str(err.value)


class _Streaming(http.server.BaseHTTPRequestHandler):
    """Answers every GET with headers, then ``pace(wfile)`` writes the body."""

    pace: Callable[[BinaryIO], None]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.end_headers()
        self.wfile.flush()
        with contextlib.suppress(OSError):     # the client hung up, as it should
            type(self).pace(self.wfile)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def streaming_server() -> Iterator[Callable[[Callable[[BinaryIO], None]], str]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(pace: Callable[[BinaryIO], None]) -> str:
        handler = type("Handler", (_Streaming,), {"pace": staticmethod(pace)})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/wiki1m_for_simcse.txt"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_fetch_cuts_off_a_trickling_server(tmp_path: Path, streaming_server,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # A byte every 0.1 s never trips the 1 s per-read timeout; the rate floor must end it.
    def trickle(out: BinaryIO) -> None:
        for _ in range(600):
            out.write(b"x")
            out.flush()
            time.sleep(0.1)

    monkeypatch.setattr(fetch_module, "RATE_WINDOW_S", 1.0)
    _refused_within(streaming_server(trickle), tmp_path / "wiki1m_for_simcse.txt", "bytes/s", 10.0)


def test_fetch_refuses_an_endless_reply_without_a_pinned_size(
        tmp_path: Path, streaming_server, monkeypatch: pytest.MonkeyPatch) -> None:
    def endless(out: BinaryIO) -> None:
        while True:
            out.write(b"y" * 65536)

    monkeypatch.setattr(fetch_module, "UNSIZED_MAX_BYTES", 1 << 20)
    dest = tmp_path / "wiki1m_for_simcse.txt"
    with pytest.raises(DownloadError, match="UNSIZED_MAX_BYTES"):
        fetch(streaming_server(endless), dest, None, timeout_s=5.0)
    assert not dest.exists() and _no_leftovers(tmp_path) == []


def test_fetch_keeps_a_slow_but_steady_download(tmp_path: Path, streaming_server,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Above the floor, however small each read: about 80 KiB/s against 16 KiB/s, 1 s windows.
    def steady(out: BinaryIO) -> None:
        for _ in range(30):
            out.write(b"z" * 8192)
            out.flush()
            time.sleep(0.1)

    monkeypatch.setattr(fetch_module, "RATE_WINDOW_S", 1.0)
    dest = tmp_path / "wiki1m_for_simcse.txt"
    body = b"z" * (8192 * 30)
    assert fetch(streaming_server(steady), dest, None, timeout_s=5.0) == \
        hashlib.sha256(body).hexdigest()
    assert dest.read_bytes() == body
