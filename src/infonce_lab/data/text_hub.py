"""SimCSE's corpora through ``datasets.load_dataset`` (WEINCE §4.2 trains on Gao et al.'s
Wikipedia-1M and selects on STS-B dev): each dataset repository at a pinned commit, cached under
the downloads folder, read offline from that cache once fetched. A hub that cannot be reached fails
in seconds with what to do, as the URL route does (``data/fetch.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infonce_lab.data.fetch import hub_reachable
from infonce_lab.data.text_corpus import normalise_space, pairset
from infonce_lab.params import SimCSEWikiDataset

# sentence-transformers/stsb's split names, as the TSV route names them.
STSB_SPLITS = {"train": "train", "validation": "dev", "test": "test"}


def _load(repo: str, revision: str, cache_dir: Path, key: str, offline: bool,
          **kwargs: Any) -> Any:
    import datasets

    datasets.disable_progress_bars()
    if offline:
        datasets.config.HF_HUB_OFFLINE = True   # read before each call: cache only, no retries
    try:
        return datasets.load_dataset(repo, revision=revision, cache_dir=str(cache_dir), **kwargs)
    except (OSError, ValueError, datasets.exceptions.DatasetNotFoundError) as exc:
        where = ("the hub is not reachable and it is not in the cache" if offline
                 else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        raise ValueError(
            f"{key}: could not load {repo} at {revision[:12]} ({where}). Fetch it once where "
            f"huggingface.co is reachable (the cache is {cache_dir}), or use via: url with the two "
            "files placed by hand in data/downloads/text/") from None


def stsb_pairsets(splits: Any) -> dict[str, Any]:
    """sentence-transformers/stsb (score ∈ [0, 1]) as the TSV route's PairSets, keyed train, dev,
    test; Spearman correlations do not depend on the scale."""
    out = {}
    for split, name in STSB_SPLITS.items():
        if split in splits:
            d = splits[split]
            rows = [(normalise_space(a), normalise_space(b), float(s))
                    for a, b, s in zip(d["sentence1"], d["sentence2"], d["score"], strict=True)]
            out[name] = pairset(f"stsb_{name}", rows, (0.0, 1.0))
    return out


def load_hub_simcse(cfg: SimCSEWikiDataset, cache_dir: str | Path, key: str
                    ) -> tuple[list[str], dict[str, Any], str]:
    """(Wikipedia-1M sentences in file order, STS-B PairSets, a provenance line)."""
    if not (cfg.wiki_revision and cfg.stsb_revision):  # the params validator requires both
        raise ValueError("text.datasets.<name>: via: hub needs wiki_revision and stsb_revision "
                         "(40-hex commits of the two dataset repositories)")
    cache_dir = Path(cache_dir)
    offline = not hub_reachable()
    wiki = _load(cfg.wiki_repo, cfg.wiki_revision, cache_dir, f"{key}.wiki_revision", offline,
                 data_files=cfg.wiki_file, split="train")
    sets = stsb_pairsets(_load(cfg.stsb_repo, cfg.stsb_revision, cache_dir,
                               f"{key}.stsb_revision", offline))
    train = [s for s in (normalise_space(t) for t in wiki["text"]) if s]
    source = (f"{cfg.wiki_repo}@{cfg.wiki_revision} ({cfg.wiki_file}), "
              f"{cfg.stsb_repo}@{cfg.stsb_revision}, through datasets.load_dataset")
    return train, sets, source


__all__ = ["stsb_pairsets", "load_hub_simcse"]
