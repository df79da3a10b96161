"""An offline HTML template for ``dvc plots show`` / ``dvc plots diff``.

DVC's default page loads vega, vega-lite and vega-embed from a CDN (``dvc_render.vega``), so its
plots are blank without the internet. ``.dvc/plots/offline.html`` is a page with the three
minified libraries inlined; ``.dvc/config`` names it (``plots.html_template``), so plain
``dvc plots show`` and ``dvc plots diff`` write a self-contained ``dvc_plots/index.html``.

The template holds DVC's ``{plot_divs}`` placeholder and, on purpose, not its scripts
placeholder: DVC would put the CDN ``<script src>`` tags there.

Rebuild it (needs ``npm`` and the npm registry) after changing a version below::

    python -m infonce_lab.devtools.vega_offline            # writes .dvc/plots/offline.html
    python -m infonce_lab.devtools.vega_offline --check    # the shipped file matches VENDORED

The three libraries are BSD-3-Clause (University of Washington Interactive Data Lab); their
licences are in ``.dvc/plots/LICENSES/``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / ".dvc" / "plots" / "offline.html"


@dataclass(frozen=True)
class Library:
    name: str  # npm package
    version: str
    member: str  # the file inside the npm tarball
    sha256: str  # of that file, exactly as npm ships it

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


# The latest releases of the majors DVC's own page uses (vega 5, vega-lite 5, vega-embed 6; DVC
# 3.67 loads vega@5.20.2, vega-lite@5.2.0, vega-embed@6.18.2 from the CDN). Order matters:
# vega-embed needs the globals `vega` and `vegaLite`.
VENDORED = (
    Library("vega", "5.33.1", "package/build/vega.min.js",
            "463f3db6a40b20e9747b4ed38f37ed0add508838f9141b1cf8366784b07b30c8"),
    Library("vega-lite", "5.23.0", "package/build/vega-lite.min.js",
            "58c27358e26f2d319cf62f45bc17a4c8362f08645001df2ec8d341eee4097c7f"),
    Library("vega-embed", "6.29.0", "package/build/vega-embed.min.js",
            "12d02acfbe3ec59ef9a37dd4822a2e04e2961b5bbb671bbe661d2221715b99da"),
)

_HEAD = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
{refresh_tag}
<title>DVC Plot</title>
<!-- Offline template for `dvc plots show/diff` (set in .dvc/config: plots.html_template).
     Built by `python -m infonce_lab.devtools.vega_offline`; do not edit by hand.
     vega, vega-lite and vega-embed are inlined below instead of DVC's CDN script tags. -->
"""

_LIB = """<!-- {spec} ({member}, sha256 {sha256}). BSD-3-Clause, Copyright (c)
     University of Washington Interactive Data Lab: see .dvc/plots/LICENSES/{name}.txt -->
<script data-vendored="{spec}">
{source}
</script>
"""

_TAIL = """<style>
  table { border-spacing: 15px; }
</style>
</head>
<body>
{plot_divs}
</body>
</html>
"""

_INLINED = re.compile(r'<script data-vendored="([^"]+)">\n(.*?)\n</script>', re.S)


def fetch(lib: Library, workdir: Path) -> str:
    """The library's minified build from its npm tarball (``npm pack``), its sha256 checked."""
    subprocess.run(["npm", "pack", lib.spec, "--pack-destination", str(workdir), "--silent"],
                   check=True, capture_output=True, text=True, timeout=300)
    tgz = workdir / f"{lib.name}-{lib.version}.tgz"
    with tarfile.open(tgz) as tar:
        member = tar.extractfile(lib.member)
        if member is None:
            raise FileNotFoundError(f"{lib.member} not in {tgz.name}")
        data = member.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != lib.sha256:
        raise ValueError(f"{lib.spec} {lib.member}: sha256 {digest}, expected {lib.sha256}")
    return data.decode("utf-8")


def render(sources: dict[str, str]) -> str:
    """The template text, given each library's source by package name."""
    parts = [_HEAD]
    for lib in VENDORED:
        source = sources[lib.name]
        if "</script" in source.lower() or re.search(r"\{(plot_divs|scripts|refresh_tag)\}",
                                                     source):
            raise ValueError(f"{lib.spec} cannot be inlined as is")
        parts.append(_LIB.format(spec=lib.spec, member=lib.member, sha256=lib.sha256,
                                 name=lib.name, source=source.rstrip("\n")))
    parts.append(_TAIL)
    return "".join(parts)


def inlined(template: str) -> dict[str, str]:
    """``{'vega@5.33.1': source, ...}``: the libraries inlined in a template's text."""
    return {m.group(1): m.group(2) for m in _INLINED.finditer(template)}


def problems(template: str) -> list[str]:
    """What is wrong with a template's text (empty: it is the one VENDORED describes)."""
    out = []
    if "{plot_divs}" not in template:
        out.append("no {plot_divs} placeholder: DVC refuses the template")
    if "{scripts}" in template:
        out.append("a {scripts} placeholder: DVC would insert its CDN script tags there")
    if re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//",
                 template, re.I):
        out.append("a tag that loads from the network")
    found = inlined(template)
    expected = [lib.spec for lib in VENDORED]
    if list(found) != expected:
        out.append(f"inlined libraries {list(found)}, expected {expected} in that order")
    for lib in VENDORED:
        source = found.get(lib.spec)
        if source is not None:
            digest = hashlib.sha256((source + "\n").encode()).hexdigest()
            digest_bare = hashlib.sha256(source.encode()).hexdigest()
            if lib.sha256 not in (digest, digest_bare):
                out.append(f"{lib.spec}: inlined source differs from npm's {lib.member}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TEMPLATE)
    parser.add_argument("--check", action="store_true",
                        help="only check the existing template against VENDORED")
    args = parser.parse_args(argv)
    if args.check:
        issues = problems(args.out.read_text(encoding="utf-8"))
        for issue in issues:
            print(f"{args.out}: {issue}", file=sys.stderr)
        return 1 if issues else 0
    with tempfile.TemporaryDirectory() as tmp:
        sources = {lib.name: fetch(lib, Path(tmp)) for lib in VENDORED}
    text = render(sources)
    issues = problems(text)
    if issues:
        raise SystemExit("; ".join(issues))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {', '.join(lib.spec for lib in VENDORED)} "
          f"({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
