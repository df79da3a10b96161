"""Before ``dvc pull``: is there a default remote, and can a local one be reached? DVC's own
answer to an absent remote folder is a list of files and "Is your cache up to date?", which
does not say that the remote, not the cache, is what is missing."""

from __future__ import annotations

from pathlib import Path

SETUP = ("point it at your storage without touching the committed config: "
         "`dvc remote modify --local {name} url <path or s3://bucket/prefix>` "
         "(or add your own: `dvc remote add -d --local <name> <url>`; docs/sharing.md)")


def default_remote(repo: Path) -> tuple[str, str] | None:
    """(name, url as DVC resolves it: a relative folder against .dvc/) of the default remote,
    or None when there is none. Read through DVC's own config loader (all its levels: the
    committed config, config.local, the user's and the system's)."""
    from dvc.repo import Repo

    with Repo(str(repo)) as dvc:
        config = dvc.config
    name = config["core"].get("remote")
    if not name or name not in config["remote"]:
        return None
    return name, str(config["remote"][name]["url"])


def problem(remote: tuple[str, str] | None) -> str | None:
    """Why ``dvc pull`` cannot work, when that is knowable before trying: no default remote, or
    a local one whose folder does not exist. Remotes with a scheme (s3://, ssh://, …) are left
    to DVC, which names the host it could not reach."""
    if remote is None:
        return "no default DVC remote is configured; " + SETUP.format(name="<name>")
    name, url = remote
    if "://" not in url and not Path(url).is_dir():
        return f"the default DVC remote {name!r} is the folder {url}, which does not exist; " + \
            SETUP.format(name=name)
    return None
