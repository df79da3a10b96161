"""``infonce-lab``: what a user runs by hand, beside ``dvc repro`` (which runs ``stages/``).

    infonce-lab check [params.yaml]        validate params, say what the study holds
    infonce-lab profiles list | show NAME | apply NAME   the named overrides of params.yaml
    infonce-lab plots [--check]            rewrite (or check) reports/dvc.yaml's generated plots
    infonce-lab exps [--all-metrics]       DVC's experiments: the params and headline metrics that differ
    infonce-lab encode MODEL INPUT OUT     features of a trained encoder (image or text)

Each command imports what it needs when it runs, so ``--help`` starts without torch.
"""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.stage import stage

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="InfoNCE Lab: check params, apply profiles, regenerate plots, encode.")


def _version(show: bool) -> None:
    if show:
        from importlib.metadata import version

        typer.echo(f"infonce-lab {version('infonce-lab')}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                          help="print the version and exit")) -> None:
    """InfoNCE Lab: check params, apply profiles, regenerate plots, encode."""


@app.command()
@stage(timed=False, announce=False, recover=False)
def check(params: Path = typer.Argument(Path("params.yaml"), help="the params file")) -> None:
    """Validate a params file (every key, before any stage runs) and summarise the study."""
    from infonce_lab.params.study import configurations
    from infonce_lab.params.work import estimates, fmt_duration
    from infonce_lab.stage import TIMINGS_DIR, params_or_exit

    p = params_or_exit(str(params))
    n_config = len(configurations(p.runs()))
    typer.echo(f"{params}: valid — {n_config} image configurations, "
               f"{len(p.runs())} image runs, {len(p.text_runs())} text runs, "
               f"{len(p.simulation.experiments)} simulations")
    found = [e for e in estimates(p, TIMINGS_DIR) if e.timed_seconds >= 1.0]
    if found:
        typer.echo(f"work, from each stage's last run ({TIMINGS_DIR}/), or its kind's slowest, "
                   "scaled by their counts (an upper bound; what no count says, such as another "
                   "dataset, is not seen):")
        for e in sorted(found, key=lambda e: -e.seconds)[:12]:
            grew = f"  ({e.key} ×{e.ratio:,.3g})" if e.key and e.ratio != 1.0 else ""
            kin = "" if e.basis == e.stage else f"  [from {e.basis}]"
            typer.echo(f"  {e.stage:56s} ≈ {fmt_duration(e.seconds):>10s}{grew}{kin}")


profiles_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                           help="The named overrides of params.yaml in profiles/.")
app.add_typer(profiles_app, name="profiles")


@profiles_app.command("list")
def profiles_list() -> None:
    """Every profile, with the first line of its comment."""
    from infonce_lab.devtools.profiles import listing

    for name, what in listing():
        typer.echo(f"{name:16s} {what}")


def _profile(name: str) -> Path:
    from infonce_lab.devtools.profiles import PROFILES, listing
    from infonce_lab.stage import fail

    path = PROFILES / f"{name}.yaml"
    if not path.is_file():
        fail(f"{path}: no such profile (known: {', '.join(n for n, _ in listing()) or 'none'})")
    return path


@profiles_app.command("show")
def profiles_show(name: str = typer.Argument(..., help="a profile (profiles/NAME.yaml)")) -> None:
    """The profile's file: the keys it would change, with its comments."""
    typer.echo(_profile(name).read_text(), nl=False)


@profiles_app.command("apply")
def profiles_apply(name: str = typer.Argument(..., help="a profile (profiles/NAME.yaml)"),
                   params: Path = typer.Option(Path("params.yaml"), help="the params file")) -> None:
    """Deep-merge a profile into params.yaml (mappings key by key; lists and scalars replaced),
    validated before it is written, comments kept; then `make repro` or `dvc exp run`."""
    from infonce_lab.devtools.profiles import apply
    from infonce_lab.params import ConfigError
    from infonce_lab.stage import fail

    try:
        typer.echo(f"{params} ← {apply(name, params)} (validated)")
    except ConfigError as exc:
        fail(str(exc))


@app.command()
def plots(check: bool = typer.Option(False, "--check", help="exit 1 if the list is stale"),
          params: Path = typer.Option(Path("params.yaml"))) -> None:
    """Write reports/dvc.yaml, DVC's plots of the study's runs (the report stage does too)."""
    from infonce_lab.devtools import dvc_plots

    args = ["--params", str(params)]
    raise typer.Exit(dvc_plots.main([*args, *(["--check"] if check else [])]))


@app.command()
def pull(targets: list[str] = typer.Argument(None, help="stages or files (default: all)")) -> None:
    """`dvc pull`, after checking that the default remote exists and, if it is a folder, that
    the folder is there; when it is not, says how to point the remote at your storage."""
    import subprocess
    import sys

    from infonce_lab.devtools.remote import SETUP, default_remote, problem
    from infonce_lab.stage import fail

    remote = default_remote(Path.cwd())
    if why := problem(remote):
        fail(why)
    proc = subprocess.run([sys.executable, "-m", "dvc", "pull", *(targets or [])], check=False)
    if proc.returncode != 0:
        fail(f"dvc pull failed; if the remote lacks these files, push them from the machine that "
             f"has them (`dvc push`), or {SETUP.format(name=remote[0] if remote else '<name>')}",
             proc.returncode)


@app.command()
def exps(all_metrics: bool = typer.Option(False, "--all-metrics",
                                          help="every headline metric, not only those that differ"),
         width: int = typer.Option(120, min=60, help="the widest line, in characters")) -> None:
    """DVC's experiments side by side: the params that differ and the headline metrics that
    differ, one column per experiment (`dvc exp show --json`, on its side to fit a screen)."""
    import json
    import subprocess
    import sys

    from infonce_lab.exps import experiments, table
    from infonce_lab.stage import fail

    proc = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "--json"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"dvc exp show --json failed: {proc.stderr.strip()[-600:]}")
    typer.echo(table(experiments(json.loads(proc.stdout)), all_metrics, width))


@app.command()
@stage(timed=False, announce=False, recover=False)
def encode(model: Path = typer.Argument(..., help="an image run's model.pt, or a text run's "
                                                   "folder (models/text/...)"),
           inputs: Path = typer.Argument(..., help="images: .npy (N, C, H, W), or .npz with x; "
                                                    "text: a .txt file, one sentence per line"),
           out: Path = typer.Argument(..., help="where the features go (.npz: h, z; text: h)"),
           batch_size: int = typer.Option(256, min=1),
           device: str = typer.Option("cpu", help="cpu, cuda, cuda:1, …")) -> None:
    """The frozen features of a trained encoder, as the evaluate stages compute them."""
    import numpy as np

    from infonce_lab.io import read_json, reading, save_npz_atomic
    from infonce_lab.stage import fail

    if not model.exists() or not inputs.is_file():
        fail(f"{model if not model.exists() else inputs}: no such file")
    if model.is_dir():
        from infonce_lab.models.text import encode as encode_text
        from infonce_lab.models.text import load_sentence_encoder

        encoder, tokenizer, meta = load_sentence_encoder(model)
        texts = [t for t in inputs.read_text().splitlines() if t.strip()]
        st_config = model / "sentence_bert_config.json"  # the study's evaluation max_length
        max_length = read_json(st_config)["max_seq_length"] if st_config.is_file() else 512
        h = encode_text(encoder, tokenizer, texts, max_length=max_length, batch_size=batch_size,
                        device=device)
        save_npz_atomic(out, h=h)
        typer.echo(f"{out}: h {h.shape} from {len(texts)} sentences ({meta['run']['loss']})")
        return
    from infonce_lab.models.build import extract_features, load_encoder

    encoder, _ = load_encoder(model)
    with reading(inputs, "image array (.npy, or .npz with x)", "Check the file."):
        loaded = np.load(inputs)
        x = loaded["x"] if isinstance(loaded, np.lib.npyio.NpzFile) else loaded
    if x.ndim != 4:
        fail(f"{inputs}: images must be (N, C, H, W); got shape {x.shape}")
    h, z = extract_features(encoder, x, batch_size=batch_size, device=device)
    save_npz_atomic(out, h=h, z=z)
    typer.echo(f"{out}: h {h.shape}, z {z.shape}")


if __name__ == "__main__":
    app()
