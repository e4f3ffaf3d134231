#!/bin/sh
# Builds libsodium's own test programs (test/default/*.c, each with its .exp expected output) for
# wasm32-wasi and natively, with the same compiler and -O3, the way libsodium's
# dist-build/wasm32-wasi.sh --bench and `make check` do (clang-19 in place of zig cc). The source
# is the LATEST.tar.gz inside the crates.io package libsodium-sys-stable, pinned by checksum.
#
# Usage: scripts/build-libsodium.sh OUT_DIR [BUILD_DIR]
#   ITERATIONS (default 200, as dist-build/wasm32-wasi.sh --bench): how many times a benchmark
#   build runs its test body.
#   JOBS (default: the CPU count).
#   BUILD_DIR (default OUT_DIR/build) holds the source and the libraries, which do not depend on
#   ITERATIONS: sets of several iteration counts can share it.
#
# OUT_DIR receives a *program set* (docs/engines.md):
#   programs.txt                  the program names, one a line
#   exp/NAME.exp                  libsodium's expected output
#   wasm/NAME.wasm                benchmark build (-DBENCHMARKS), after wasm-opt -O4 as libsodium's
#                                 own wasi test wrapper does; prints its time per iteration in ps
#   wasm-verify/NAME.wasm         check build (`make check`'s): writes ./NAME.res and compares it
#                                 with ./NAME.exp itself: exit 0 when they match, 99 when not
#   native-portable/NAME (+ -verify)  native, --disable-asm: the same portable C as the Wasm build
#   native/NAME (+ -verify)           native with libsodium's default CPU dispatch (AVX2, AES-NI)
#   build.json                    versions, flags and checksums
# Idempotent: each stage is skipped when its stamp (the flags it was built with) matches.
set -eu

OUT=${1:?usage: scripts/build-libsodium.sh OUT_DIR [BUILD_DIR]}
mkdir -p "$OUT" "${2:-$OUT/build}"
OUT=$(cd "$OUT" && pwd)
BUILD=$(cd "${2:-$OUT/build}" && pwd)
ITERATIONS=${ITERATIONS:-200}
JOBS=${JOBS:-$(nproc)}
CLANG=${CLANG:-clang-19}

CRATE_VER=1.24.3
CRATE=libsodium-sys-stable-$CRATE_VER.crate
CRATE_SHA256=1f55c1c508d31e2cf0a649c9c889e4bcf554cbfb2a6803f049f219784b044283
TARBALL_SHA256=eb9873cc5ccd7b26ef058394264663c99e9c047b423be1ffd484071774198f26

log() { printf 'build-libsodium: %s\n' "$*" >&2; }

missing=""
for tool in "$CLANG" llvm-ar-19 llvm-ranlib-19 wasm-ld-19 wasm-opt make curl tar sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -d /usr/lib/llvm-19/lib/clang/19/lib/wasi ] || [ -n "$(ls /usr/lib/llvm-19/lib/clang/19/lib/wasm32* 2>/dev/null)" ] ||
  missing="$missing libclang_rt.builtins-wasm32"
[ -d /usr/share/wasi-sysroot ] || [ -d /usr/lib/wasm32-wasi ] || missing="$missing wasi-libc"
if [ -n "$missing" ]; then
  log "missing:$missing"
  log "install with: apt-get install clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32 binaryen make curl"
  exit 3
fi

# ------------------------------------------------------------------ the source, pinned
SRCROOT=$BUILD/src
if [ ! -f "$SRCROOT/$CRATE" ] || ! echo "$CRATE_SHA256  $SRCROOT/$CRATE" | sha256sum -c --status; then
  mkdir -p "$SRCROOT"
  rm -f "$SRCROOT/$CRATE.part"
  for f in "$HOME"/.cargo/registry/cache/*/"$CRATE"; do
    [ -f "$f" ] && cp "$f" "$SRCROOT/$CRATE.part" && break
  done
  if [ ! -s "$SRCROOT/$CRATE.part" ]; then
    log "fetching $CRATE from crates.io"
    curl -fsSL -m 300 -o "$SRCROOT/$CRATE.part" \
      "https://static.crates.io/crates/libsodium-sys-stable/$CRATE" ||
      curl -fsSL -m 300 -o "$SRCROOT/$CRATE.part" \
        "https://crates.io/api/v1/crates/libsodium-sys-stable/$CRATE_VER/download"
  fi
  echo "$CRATE_SHA256  $SRCROOT/$CRATE.part" | sha256sum -c --status ||
    { log "checksum mismatch for $CRATE"; exit 1; }
  mv "$SRCROOT/$CRATE.part" "$SRCROOT/$CRATE"
fi
SRC=$SRCROOT/libsodium-stable
if [ ! -f "$SRC/.extracted" ]; then
  log "extracting libsodium from $CRATE"
  rm -rf "$SRC" "$SRCROOT/libsodium-sys-stable-$CRATE_VER"
  tar xzf "$SRCROOT/$CRATE" -C "$SRCROOT"
  (cd "$SRCROOT/libsodium-sys-stable-$CRATE_VER" && echo "$TARBALL_SHA256  LATEST.tar.gz" | sha256sum -c --status) ||
    { log "checksum mismatch for LATEST.tar.gz"; exit 1; }
  tar xzf "$SRCROOT/libsodium-sys-stable-$CRATE_VER/LATEST.tar.gz" -C "$SRCROOT"
  touch "$SRC/.extracted"
fi
LIBSODIUM_VERSION=$(sed -n 's/^PACKAGE_VERSION=.\([0-9.]*\).*/\1/p' "$SRC/configure" | head -1)

# ------------------------------------------------------------------ libsodium.a per target
# build_lib NAME CONFIGURE_ARGS...   (env: CC CFLAGS LDFLAGS CPPFLAGS AR RANLIB)
build_lib() {
  name=$1; shift
  dir=$BUILD/$name
  stamp="CC=$CC|CFLAGS=$CFLAGS|LDFLAGS=$LDFLAGS|ARGS=$*"
  if [ -f "$dir/.lib-done" ] && [ "$(cat "$dir/.lib-done")" = "$stamp" ]; then
    return 0
  fi
  log "$name: configure and make libsodium (about a minute)"
  rm -rf "$dir"
  # An in-tree build on a private copy, as wasm32-wasi.sh does.
  cp -a "$SRC" "$dir"
  (cd "$dir" && ./configure "$@" >configure.out 2>&1) || { tail -30 "$dir/config.log"; exit 1; }
  (cd "$dir" && make -j"$JOBS" >make.out 2>&1) || { tail -30 "$dir/make.out"; exit 1; }
  echo "$stamp" >"$dir/.lib-done"
}

# build_tests NAME MODE DEST SUFFIX [wasm-opt]: MODE bench (-DBENCHMARKS) or verify (check mode)
build_tests() {
  name=$1 mode=$2 dest=$OUT/$3 suffix=$4 opt=${5:-}
  dir=$BUILD/$name
  base=$(sed -n 's/^CPPFLAGS = //p' "$dir/test/default/Makefile" |
    sed -e 's/-DBENCHMARKS//' -e 's/-DITERATIONS=[0-9]*//')
  case $mode in
    bench) cppflags="$base -DBENCHMARKS -DITERATIONS=$ITERATIONS" ;;
    verify) cppflags="$base" ;;
  esac
  cppflags=$(echo "$cppflags" | tr -s ' ')
  stamp="$(cat "$dir/.lib-done")|TESTS=$cppflags|OPT=$opt"
  if [ -f "$dest/.done" ] && [ "$(cat "$dest/.done")" = "$stamp" ]; then
    return 0
  fi
  log "$name: building the test programs, $mode mode"
  (cd "$dir/test/default" && make clean >/dev/null 2>&1 || true)
  # TESTS= builds check_PROGRAMS and runs none of them.
  (cd "$dir/test/default" && make -j"$JOBS" check TESTS= CPPFLAGS="$cppflags" >"make-$mode.out" 2>&1) ||
    { tail -30 "$dir/test/default/make-$mode.out"; exit 1; }
  rm -rf "$dest" && mkdir -p "$dest"
  for c in "$dir"/test/default/*.c; do
    n=$(basename "$c" .c)
    [ -f "$dir/test/default/$n" ] || continue
    if [ -n "$opt" ]; then
      # as libsodium's test/default/wasi-test-wrapper.sh does before running a test
      wasm-opt -O4 -o "$dest/$n$suffix" "$dir/test/default/$n"
    else
      cp "$dir/test/default/$n" "$dest/$n$suffix"
    fi
  done
  echo "$stamp" >"$dest/.done"
}

T0=$(date +%s)
# The libraries do not depend on the benchmark flags: only the test programs get them.
export CC=$CLANG AR=llvm-ar-19 RANLIB=llvm-ranlib-19 CPPFLAGS=""

# wasm32-wasi: dist-build/wasm32-wasi.sh --bench
export CFLAGS="--target=wasm32-wasi -O3" LDFLAGS="-s"
WASM_ARGS="--host=wasm32-wasi --disable-pie --disable-ssp --disable-shared --without-pthreads"
# shellcheck disable=SC2086
build_lib wasm $WASM_ARGS
build_tests wasm bench wasm .wasm opt
build_tests wasm verify wasm-verify .wasm opt

# native: the same compiler, -O3 and switches
export CFLAGS="-O3" LDFLAGS=""
NATIVE_ARGS="--disable-pie --disable-ssp --disable-shared --without-pthreads"
# --disable-asm: no cpuid dispatch, so no SIMD or AES-NI code is selected: the same portable C
# as the Wasm build runs.
# shellcheck disable=SC2086
build_lib native-portable $NATIVE_ARGS --disable-asm
build_tests native-portable bench native-portable ""
build_tests native-portable verify native-portable-verify ""
# shellcheck disable=SC2086
build_lib native $NATIVE_ARGS
build_tests native bench native ""
build_tests native verify native-verify ""

mkdir -p "$OUT/exp"
: >"$OUT/programs.txt.part"
for f in "$OUT"/wasm/*.wasm; do
  n=$(basename "$f" .wasm)
  cp "$SRC/test/default/$n.exp" "$OUT/exp/"
  echo "$n" >>"$OUT/programs.txt.part"
done
mv "$OUT/programs.txt.part" "$OUT/programs.txt"
cat >"$OUT/build.json" <<JSON
{
  "program_set": "libsodium",
  "libsodium_version": "$LIBSODIUM_VERSION",
  "source": "crates.io libsodium-sys-stable $CRATE_VER (LATEST.tar.gz)",
  "crate_sha256": "$CRATE_SHA256",
  "tarball_sha256": "$TARBALL_SHA256",
  "iterations": $ITERATIONS,
  "cc": "$($CLANG --version | head -1)",
  "wasm_opt": "$(wasm-opt --version | head -1)",
  "wasm_cflags": "--target=wasm32-wasi -O3",
  "native_cflags": "-O3",
  "verify": "self"
}
JSON
log "$(wc -l <"$OUT/programs.txt") programs in $OUT ($(($(date +%s) - T0)) s)"
