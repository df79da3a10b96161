"""The hub route of SimCSE's corpora: sentence-transformers/stsb's rows become the PairSets the
TSV route gives (scores rescaled, nothing else); without the hub it fails in seconds naming the
params key; ``via: hub`` needs both commits pinned."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_text_data import STSB_ROWS, _write_stsb

from infonce_lab.data import text as T
from infonce_lab.data.fetch import hub_reachable
from infonce_lab.data.text_hub import stsb_pairsets

HUB_SPLIT = {"train": "train", "dev": "validation", "test": "test"}


def test_hub_stsb_rows_give_the_tsv_routes_pairsets(tmp_path: Path) -> None:
    import datasets

    cols: dict[str, dict[str, list]] = {}
    for split, *_, score, s1, s2 in STSB_ROWS:
        c = cols.setdefault(HUB_SPLIT[split], {"sentence1": [], "sentence2": [], "score": []})
        c["sentence1"].append(s1)
        c["sentence2"].append(s2)
        c["score"].append(float(score) / 5.0)
    hub = stsb_pairsets(datasets.DatasetDict(
        {k: datasets.Dataset.from_dict(v) for k, v in cols.items()}))
    tsv = T.read_stsb(_write_stsb(tmp_path / "stsbenchmark.tsv.gz"))
    assert set(hub) == set(tsv) == {"train", "dev", "test"}
    for name in tsv:
        a, b = hub[name], tsv[name]
        assert a.name == b.name and a.texts == b.texts and a.scale == (0.0, 1.0)
        np.testing.assert_array_equal(a.pairs, b.pairs)
        np.testing.assert_allclose(5.0 * a.scores, b.scores)


def test_offline_means_offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")
    t0 = time.perf_counter()
    assert hub_reachable() is False and time.perf_counter() - t0 < 0.1   # no probe at all


@pytest.mark.parametrize("hub", ["offline", "refusing", "silent"])
def test_an_unreachable_hub_fails_fast_naming_the_key(tmp_path: Path, repo_root, hub: str,
                                                      request) -> None:
    # The whole path, in a fresh process: offline means no contact at all; a hub that refuses
    # or (online) accepts and never answers fails on the probe's 10 s, not on huggingface_hub's
    # minutes of retries.
    env = {"offline": lambda: {"HF_HUB_OFFLINE": "1"},
           "refusing": lambda: {"HF_ENDPOINT": "http://127.0.0.1:1"},
           "silent": lambda: {"HF_ENDPOINT": request.getfixturevalue("silent_endpoint")}}[hub]()
    code = f"""
from infonce_lab.data.text import simcse_corpus
from infonce_lab.params import SimCSEWikiDataset
cfg = SimCSEWikiDataset(via="hub", wiki_revision="{'a' * 40}", stsb_revision="{'b' * 40}")
simcse_corpus(cfg, {str(tmp_path)!r}, "text.datasets.wiki_hub")
"""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(repo_root / "src"),
                               "HF_HOME": str(tmp_path / "hf"), **env})
    assert proc.returncode != 0
    assert "text.datasets.wiki_hub.wiki_revision: could not load " \
           "princeton-nlp/datasets-for-simcse at aaaaaaaaaaaa" in proc.stderr, proc.stderr[-2000:]
    assert "not reachable" in proc.stderr
    assert time.perf_counter() - t0 < 45


def test_via_hub_needs_both_commits(raw, config_error) -> None:
    raw["text"]["datasets"]["wiki1m_stsb"]["via"] = "hub"
    raw["text"]["datasets"]["wiki1m_stsb"]["wiki_revision"] = "c" * 40
    msg = config_error(raw)
    assert "text.datasets.wiki1m_stsb" in msg and "stsb_revision" in msg
    assert "wiki_revision and" not in msg
    raw["text"]["datasets"]["wiki1m_stsb"]["stsb_revision"] = "not-a-commit"
    assert "stsb_revision" in config_error(raw)


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts connections and never answers (a dead backend behind a proxy)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def _online(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def test_a_hub_that_accepts_and_never_answers_is_unreachable(silent_endpoint: str,
                                                             monkeypatch) -> None:
    _online(monkeypatch, silent_endpoint)
    t0 = time.perf_counter()
    assert hub_reachable(timeout_s=1.0) is False
    assert time.perf_counter() - t0 < 3.0


def test_a_hub_that_answers_is_reachable_whatever_the_status(monkeypatch) -> None:
    class Missing(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(404)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Missing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _online(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
        assert hub_reachable(timeout_s=5.0) is True
    finally:
        server.shutdown()
        server.server_close()
