"""Sharing through real remotes: an SSH remote on an OpenSSH server started here on 127.0.0.1
(a throwaway host key and client key), and an S3 remote on moto's S3-compatible server started
in this process. For each: the cheapest stages that have cached outputs run in clone A
(profiles/tiny.yaml, a copy of the repository), `dvc push`; a fresh `git clone` B sets its own
credentials, `dvc pull`s, and its `dvc status` / `dvc repro` of those stages do nothing; one
experiment run in A goes through `dvc exp push` to a bare git repository and the DVC remote and
comes back into B with `dvc exp pull`, outputs included. Credentials go only to
`.dvc/config.local` or the environment, and a test checks that they cannot reach a commit.

Needs the plugins of the `ssh` and `s3` extras and moto (all in the `test` extra), and for SSH
OpenSSH's `sshd` (`make sshd`, which `make test` runs first; apt-get as root). Without `sshd`
the SSH test skips, except under CI, where it fails.
"""

from __future__ import annotations

import configparser
import getpass
import hashlib
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infonce_lab.devtools.smoke import prepare

REPO_ROOT = Path(__file__).resolve().parents[2]
# The stages with cached outputs that take seconds: params check, the digits and the text corpus.
TARGETS = ("download@digits", "download_text@gensim_lee")
CACHED = ("data/raw/digits", "data/raw/text/gensim_lee")
# The experiment: a knob only the digits download reads (its held-out share).
EXP_PARAM = "datasets.digits.test_fraction=0.3"
# What a remote's config may hold that is a secret or names one (DVC's remote options).
CREDENTIAL_KEYS = {"password", "passphrase", "keyfile", "access_key_id", "secret_access_key",
                   "session_token", "credentialpath", "account_key", "sas_token",
                   "connection_string", "client_secret", "token", "oss_key_secret",
                   "gdrive_client_secret", "gdrive_service_account_json_file_path"}
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").is_file() else None)
NO_SSHD = ("OpenSSH's sshd (and ssh-keygen) missing: `make sshd` installs Debian's "
           "openssh-server (apt-get, as root)")


class Clone:
    """A git clone of the lab with DVC on PATH, an isolated HOME (no ~/.ssh, ~/.aws) and no
    AWS_* variables from the caller: what a remote needs, it is given here."""

    def __init__(self, root: Path, home: Path, extra_env: dict[str, str] | None = None) -> None:
        self.root = root
        bindir = str(Path(sys.executable).parent)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.env = {**base, "PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(home),
                    "DVC_NO_ANALYTICS": "1", "OMP_NUM_THREADS": "2",
                    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                    **(extra_env or {})}

    def run(self, *cmd: str) -> str:
        proc = subprocess.run(list(cmd), cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def dvc(self, *args: str) -> str:
        return self.run(sys.executable, "-m", "dvc", *args)

    def ran(self, *args: str) -> set[str]:
        return set(re.findall(r"Running stage '([^']+)'", self.dvc(*args)))


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen | None, log: Path | None,
                   seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the server exited ({proc.returncode}):\n"
                        f"{log.read_text() if log and log.exists() else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[tuple[Clone, Path]]:
    """Clone A (the tiny profile, TARGETS reproduced and committed) and the bare git repository
    its branch is pushed to, which B clones and experiments travel through."""
    root = tmp_path_factory.mktemp("lab")
    home = tmp_path_factory.mktemp("home")
    a = Clone(root, home)
    prepare(REPO_ROOT, root, "tiny", a.env)
    assert set(TARGETS) <= a.ran("repro", *TARGETS)
    a.run("git", "add", "-A")  # dvc.lock and the stages' small outputs (cache: false)
    a.run("git", "commit", "-qm", "cheap stages")
    bare = tmp_path_factory.mktemp("origin") / "lab.git"
    a.run("git", "init", "-q", "--bare", str(bare))
    a.run("git", "remote", "add", "origin", str(bare))
    yield a, bare


def _round_trip(lab: tuple[Clone, Path], tmp_path: Path, name: str, url: str, *,
                shared: dict[str, str], local_a: dict[str, str], local_b: dict[str, str],
                secrets: tuple[str, ...], env_b: dict[str, str] | None = None) -> None:
    """A: `dvc remote add -d` and ``shared`` options (committed), credentials with --local; push.
    B: a fresh clone, its own credentials; pull; no-op status and repro; exp push → exp pull."""
    a, bare = lab
    a.dvc("remote", "add", "-d", name, url)
    for key, value in shared.items():
        a.dvc("remote", "modify", name, key, value)
    for key, value in local_a.items():
        a.dvc("remote", "modify", "--local", name, key, value)
    a.run("git", "add", "-A")
    a.run("git", "commit", "-qm", f"remote {name}")
    committed = a.run("git", "log", "-p", "--all")
    assert url in committed
    assert not any(s in committed for s in secrets), "a credential reached a commit"
    a.run("git", "push", "-q", "origin", "HEAD:main")
    a.dvc("push")
    before = {rel: _digest(a.root / rel) for rel in CACHED}

    b = Clone(tmp_path / "b", Path(a.env["HOME"]), env_b)
    subprocess.run(["git", "clone", "-q", "-b", "main", str(bare), str(b.root)], check=True,
                   env=b.env, capture_output=True)
    assert not (b.root / ".dvc" / "config.local").exists()
    for key, value in local_b.items():
        b.dvc("remote", "modify", "--local", name, key, value)
    b.dvc("pull", *TARGETS)  # the stages A ran (a full study: plain `dvc pull`)
    assert {rel: _digest(b.root / rel) for rel in CACHED} == before
    assert "up to date" in b.dvc("status", *TARGETS)
    assert b.ran("repro", *TARGETS) == set()

    exp = f"{name}-split"
    a.dvc("exp", "run", "-n", exp, "-S", EXP_PARAM, TARGETS[0])
    expected = _digest(a.root / CACHED[0])
    assert expected != before[CACHED[0]], "the experiment changed nothing"
    a.run("git", "checkout", "--", ".")  # A's workspace back to HEAD
    a.dvc("checkout", "--force", *TARGETS)
    assert a.run("git", "status", "--porcelain") == ""
    a.dvc("exp", "push", "origin", exp)

    b.dvc("exp", "pull", "origin", exp)
    assert exp in b.dvc("exp", "list", "--name-only")
    # `dvc exp apply` checks out every output of dvc.yaml; B takes the experiment's commit as a
    # branch and checks out the stage it ran (from the cache that `exp pull` filled)
    b.dvc("exp", "branch", exp, exp)
    b.run("git", "checkout", "-q", exp)
    b.dvc("checkout", TARGETS[0])
    assert _digest(b.root / CACHED[0]) == expected
    assert "test_fraction: 0.3" in (b.root / "params.yaml").read_text()
    assert "up to date" in b.dvc("status", TARGETS[0])


@pytest.fixture(scope="module")
def openssh() -> tuple[str, str]:
    """(sshd, ssh-keygen); missing: a skip, or under CI a failure."""
    keygen = shutil.which("ssh-keygen")
    if SSHD is None or keygen is None:
        if os.environ.get("CI"):
            pytest.fail(NO_SSHD)
        pytest.skip(NO_SSHD)
    return SSHD, keygen


@pytest.fixture()
def sshd(openssh: tuple[str, str], tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """OpenSSH on 127.0.0.1, key logins only: (port, the client's private key)."""
    server, keygen = openssh
    if os.geteuid() == 0:  # sshd as root wants its privilege separation folder (a tmpfs: /run)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    d = tmp_path / "sshd"
    d.mkdir()
    for key in ("host", "client"):
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", key, "-f",
                        str(d / key)], check=True, capture_output=True)
    shutil.copy(d / "client.pub", d / "authorized_keys")
    port = _free_port()
    config = d / "sshd_config"
    config.write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {d / "host"}
PidFile {d / "sshd.pid"}
AuthorizedKeysFile {d / "authorized_keys"}
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
""")
    check = subprocess.run([server, "-t", "-f", str(config)], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stderr
    log = d / "sshd.log"
    proc = subprocess.Popen([server, "-D", "-f", str(config), "-E", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, log)
        yield port, d / "client"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture()
def moto_s3() -> Iterator[str]:
    """moto's S3-compatible server on 127.0.0.1 (a thread of this process): its endpoint url."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    requests = logging.getLogger("werkzeug")  # one line per request: a failure's log drowns
    level = requests.level
    requests.setLevel(logging.WARNING)
    server.start()
    try:
        _wait_for_port(port, None, None)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        requests.setLevel(level)


@pytest.mark.pipeline
def test_ssh_remote_round_trip(openssh, lab, tmp_path, sshd):  # openssh first: skip before lab
    port, key = sshd
    store = tmp_path / "ssh-store"
    store.mkdir()
    credentials = {"user": getpass.getuser(), "keyfile": str(key)}
    _round_trip(lab, tmp_path, "ssh", f"ssh://127.0.0.1:{port}{store}", shared={},
                local_a=credentials, local_b=credentials, secrets=(str(key),))
    assert (store / "files" / "md5").is_dir()


@pytest.mark.pipeline
def test_s3_remote_round_trip(lab, tmp_path, moto_s3):
    import boto3

    key_id, secret = "AKIAINFONCELABTEST01", "infonce-lab-test-secret-0123456789abcdef"
    s3 = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1",
                      aws_access_key_id=key_id, aws_secret_access_key=secret)
    s3.create_bucket(Bucket="lab")
    # A keeps its keys in .dvc/config.local, B in the environment; the endpoint is shared config
    # (committed with the url), as for any S3-compatible store.
    _round_trip(lab, tmp_path, "s3", "s3://lab/infonce-lab", shared={"endpointurl": moto_s3},
                local_a={"access_key_id": key_id, "secret_access_key": secret}, local_b={},
                secrets=(key_id, secret),
                env_b={"AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret,
                       "AWS_DEFAULT_REGION": "us-east-1"})
    listed = s3.list_objects_v2(Bucket="lab", Prefix="infonce-lab/files/md5/")
    assert listed["KeyCount"] > 0


def _remote_options(text: str) -> dict[str, set[str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return {s: set(parser[s]) for s in parser.sections() if s.strip("'\"").startswith("remote")}


def test_committed_dvc_config_holds_no_credentials(repo_root: Path):
    tracked = subprocess.run(["git", "ls-files", ".dvc"], cwd=repo_root, capture_output=True,
                             text=True, check=True).stdout.split()
    assert ".dvc/config" in tracked and ".dvc/config.local" not in tracked
    for section, keys in _remote_options((repo_root / ".dvc" / "config").read_text()).items():
        assert not keys & CREDENTIAL_KEYS, f"{section}: {sorted(keys & CREDENTIAL_KEYS)}"


def test_credentials_set_with_local_never_reach_git(copy_worktree, tmp_path: Path):
    """`dvc remote modify --local` writes .dvc/config.local, which the repository's
    .dvc/.gitignore ignores: `git add -A` and a commit leave every secret out."""
    root = copy_worktree(tmp_path / "clone", skip=("reports/", "tests/"))
    c = Clone(root, tmp_path / "home")
    c.run("git", "init", "-q")
    c.run("git", "add", "-A")
    c.run("git", "commit", "-qm", "clone")
    c.dvc("remote", "add", "store", "s3://bucket/infonce-lab")
    c.dvc("remote", "add", "box", "ssh://host.example/srv/infonce-lab")
    secrets = {("store", "access_key_id"): "AKIANEVERCOMMITTED01",
               ("store", "secret_access_key"): "never-committed-secret-key",
               ("box", "password"): "never-committed-password",
               ("box", "keyfile"): str(tmp_path / "never-committed-key")}
    for (remote, key), value in secrets.items():
        c.dvc("remote", "modify", "--local", remote, key, value)
    c.run("git", "check-ignore", "-q", ".dvc/config.local")
    local = (root / ".dvc" / "config.local").read_text()
    assert all(v in local for v in secrets.values())
    shared = (root / ".dvc" / "config").read_text()
    assert not any(v in shared for v in secrets.values())
    status = c.run("git", "status", "--porcelain", "--untracked-files=all", "--ignored=no")
    assert "config.local" not in status and ".dvc/config" in status  # the remotes' urls
    c.run("git", "add", "-A")
    c.run("git", "commit", "-qm", "remotes")
    history = c.run("git", "log", "-p", "--all")
    assert "s3://bucket/infonce-lab" in history
    assert not any(v in history for v in secrets.values())
    assert c.run("git", "ls-files", ".dvc/config.local") == ""
    for section, keys in _remote_options(shared).items():
        assert not keys & CREDENTIAL_KEYS, f"{section}: {sorted(keys & CREDENTIAL_KEYS)}"
