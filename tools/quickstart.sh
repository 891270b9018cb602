#!/usr/bin/env bash
# tritium's quick start: installs what is missing (Debian 12), builds, and then either runs
# the examples on the default device or runs every test.
#
#   bash tools/quickstart.sh examples   # install, build, run the tutorials
#   bash tools/quickstart.sh test       # install, build, run the whole test suite, then
#                                       # again under sanitizers (tools/sanitize.sh)
#
# BUILD_DIR (default: build) and JOBS (default: all cores) may be set.
set -euo pipefail

mode=${1:-examples}
case "$mode" in
  examples | test) ;;
  *)
    echo "usage: $0 [examples|test]" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# The Debian 12 packages the build needs. LLVM 19 is linked statically into libtritium.
packages=(
  cmake ninja-build g++ pkg-config
  llvm-19-dev llvm-19-tools lld-19 liblld-19-dev libpolly-19-dev
  zlib1g-dev libzstd-dev libxml2-dev libz3-dev
  libboost-dev libboost-context-dev doctest-dev libfmt-dev libamdhip64-dev
  libtbb-dev libopenblas-dev libdlpack-dev gnuplot-nox rocm-device-libs
  clang-19 libclang-rt-19-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== configuring and building in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"

if [ "$mode" = examples ]; then
  status=0
  for ex in "$build"/examples/[0-9]*; do
    [ -x "$ex" ] || continue
    echo "== $(basename "$ex")"
    "$ex" || status=1
  done
  exit $status
fi

echo "== running the test suite"
cd "$build"
set +e
ctest --output-on-failure --timeout 1500 -j "$jobs" > ctest.log 2>&1
status=$?
set -e
grep -v -E '^\s+Start ' ctest.log || true
# Each doctest program's own summary, from CTest's log of the whole run.
echo "== doctest summaries"
awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3} /\[doctest\] (test cases|assertions|Status)/{print name ": " $0}' \
  Testing/Temporary/LastTest.log
echo "== CTest summary"
grep -E "tests passed|tests failed out of|Total Test time" ctest.log

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, short fuzzing runs, and
# the runtime tests under ThreadSanitizer, each in a build folder of its own. TRITIUM_SANITIZERS=0
# skips them (a quick local run).
if [ "${TRITIUM_SANITIZERS:-1}" != 0 ]; then
  JOBS=$jobs bash "$root/tools/sanitize.sh" || status=1
fi
exit $status
