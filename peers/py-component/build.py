"""Builds handler.py (or `--source FILE`: a user's Python anywhere, with its own `--wit` world)
into a wasi:http/proxy component with componentize-py, as installed by `wasmlab setup py-component`
into TOOLS/bin:

    python3 build.py --tools TOOLS --out FILE.wasm [--source FILE.py] [--wit WORLD.wit --world NAME]

The source's directory is the application componentize-py bundles, the source's file name its
module. An output newer than its inputs (the source, its world, this script, componentize-py) is
kept. componentize-py ships CPython compiled to Wasm and imports the module at build time: the
component's initial memory is the interpreter with the module loaded. componentize-py carries no
WASI WIT of its own: the packages the world names are taken from the WIT that wasmtime-wasi-http
ships (a dependency of wasmlab's gateways, found with `cargo metadata`), relabelled with the WASI
version the world names.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parent.parent
WIT_CRATE = "wasmtime-wasi-http"


def options():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--source", type=Path, default=HERE / "handler.py")
    p.add_argument("--wit", type=Path, default=HERE / "world.wit")
    p.add_argument("--world", default="handler")
    o = p.parse_args()
    for name in ("tools", "out", "source", "wit"):
        setattr(o, name, getattr(o, name).resolve())
    return o


def up_to_date(out, inputs):
    try:
        built = out.stat().st_mtime
        return all(f.stat().st_mtime <= built for f in inputs)
    except FileNotFoundError:
        return False


def wasi_wit():
    """The directory of WASI's WIT packages that wasmtime-wasi-http ships (its `wit/deps`)."""
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    triple = re.search(r"^host: (\S+)$", host, re.M).group(1)
    cargo = os.environ.get("CARGO", "cargo")
    meta = subprocess.run(
        [cargo, "metadata", "--format-version", "1", "--filter-platform", triple,
         "--manifest-path", str(WORKSPACE / "Cargo.toml")],
        capture_output=True, text=True,
    )
    if meta.returncode != 0:
        raise RuntimeError(f"cargo metadata failed, so {WIT_CRATE}'s WIT cannot be found: {meta.stderr.strip()}")
    for package in json.loads(meta.stdout)["packages"]:
        if package["name"] == WIT_CRATE:
            deps = Path(package["manifest_path"]).parent / "wit" / "deps"
            if deps.is_dir():
                return deps
    raise RuntimeError(f"no {WIT_CRATE} with a wit/deps directory among the workspace's packages")


def main():
    o = options()
    tool = o.tools / "bin" / "componentize-py"
    if not tool.exists():
        raise RuntimeError(f"{tool} is missing (`wasmlab setup py-component` installs componentize-py)")
    inputs = [o.source, o.wit, Path(__file__).resolve(), tool]
    if up_to_date(o.out, inputs):
        print(f"{o.out} is up to date")
        return
    world = o.wit.read_text()
    named = set(re.findall(r"wasi:[a-z-]+/[a-z-]+@(0\.2\.\d+)", world))
    if len(named) != 1:
        raise RuntimeError(f"{o.wit} must name WASI 0.2 interfaces at one version, not {sorted(named) or 'none'}")
    version = named.pop()
    deps = wasi_wit()
    o.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wasmlab-py-component-") as work:
        wit = Path(work) / "wit"
        (wit / "deps").mkdir(parents=True)
        shipped = None
        for f in sorted(deps.glob("*.wit")):
            text = f.read_text()
            found = re.search(r"^package wasi:[a-z-]+@(0\.2\.\d+);", text, re.M)
            if found is None:
                continue
            shipped = found.group(1)
            (wit / "deps" / f.name).write_text(text.replace(f"@{shipped}", f"@{version}"))
        if shipped is None:
            raise RuntimeError(f"no WASI 0.2 package in {deps}")
        (wit / "world.wit").write_text(world)
        # Written beside and renamed into place: two runs (two tests at once) may build it together,
        # and a reader of `out` must never see half a component.
        partial = o.out.with_name(f"{o.out.name}.{os.getpid()}.partial")
        started = time.monotonic()
        built = subprocess.run(
            [str(tool), "--quiet", "-d", str(wit), "-w", o.world, "componentize",
             "-p", str(o.source.parent), o.source.stem, "-o", str(partial)],
            capture_output=True, text=True,
            env={k: v for k, v in os.environ.items() if k != "RUST_BACKTRACE"},
        )
        if built.returncode != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"componentize-py failed:\n{built.stderr.strip() or built.stdout.strip()}")
        partial.replace(o.out)
    secs = time.monotonic() - started
    print(
        f"componentize-py: {o.out}, {o.out.stat().st_size} bytes, built in {secs:.1f} s "
        f"(WASI WIT from {WIT_CRATE}'s {shipped}, as {version}); CPython with {o.source.name} imported"
    )


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print(f"build.py: error: {e}", file=sys.stderr)
        sys.exit(1)
