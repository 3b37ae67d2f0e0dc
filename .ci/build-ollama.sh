#!/usr/bin/env bash
# Builds the pinned ollama release from the Go module proxy into a cache folder
# outside the source tree, for the tests and examples that run a real engine
# on the CPU. Running it again is a no-op once the binary exists: the cache is
# keyed by the version.
#
#   .ci/build-ollama.sh            build if missing, print the binary's path
#   OLLAMA_VERSION=v0.17.4         the pinned release (override at your own risk)
#   RUNNER_CACHE_DIR=DIR           where builds land (default ${XDG_CACHE_HOME:-$HOME/.cache}/runner)
#   BUILD_PROGRESS_EVERY=30        seconds between progress lines
#
# What it compiles: ollama's Go code, ggml's CPU backend (the only backend a Go
# build of ollama has: CUDA, ROCm, Vulkan and Metal are built by CMake, never
# here) and llama.cpp, which ollama links to read a model's metadata and for its
# older runner. With the compiler's defaults (-O2 -g) about four fifths of the
# compile time is llama.cpp's C++. The compiler wrapper .ci/ollama/cc builds
# llama.cpp at -O0 and every C and C++ file of ollama without debug
# information; ggml, where every token is computed, keeps the optimisation its
# package asks for. The go command compiles the C and C++ files of a package in
# parallel, on every core.
#
# The module zip leaves out llama.cpp's vendor/ folder, so three headers come
# from elsewhere: nlohmann/json.hpp and stb/stb_image.h from Debian packages,
# and miniaudio/miniaudio.h from .ci/ollama/include, a stand-in whose audio
# functions all fail (the runner never sends audio).
set -euo pipefail

version="${OLLAMA_VERSION:-v0.17.4}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${RUNNER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/runner}"
bindir="$cache/ollama-$version/bin"
bin="$bindir/ollama"
every="${BUILD_PROGRESS_EVERY:-30}"

if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

need=()
for pkg in nlohmann-json3-dev libstb-dev; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		need+=("$pkg")
	fi
done
if [ "${#need[@]}" -gt 0 ]; then
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		sudo=(sudo)
	fi
	echo "build-ollama: installing ${need[*]}" >&2
	"${sudo[@]}" apt-get update >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends "${need[@]}" >&2
fi
for cmd in gcc g++; do
	if ! command -v "$cmd" >/dev/null; then
		echo "build-ollama: $cmd is required (apt-get install -y build-essential)" >&2
		exit 1
	fi
done

mkdir -p "$bindir"
work="$(mktemp -d -t build-ollama.XXXXXX)"
log="$work/build.log"
builder=
cleanup() {
	if [ -n "$builder" ]; then
		# The build runs in a process group of its own: its compilers stop with it.
		kill -- -"$builder" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap, which stops the build.
trap 'exit 143' TERM
trap 'exit 130' INT

# go install pkg@version builds outside any module, so the project's go.mod
# and GOFLAGS do not apply; GOFLAGS is cleared so a -mod setting cannot break it.
# Release builds stamp the version with -ldflags; without it /api/version
# answers "0.0.0", and the version is what result manifests record. -s -w
# leave out the symbol table and DWARF, which only make the link longer.
build=(env GOFLAGS= CGO_ENABLED=1 GOBIN="$bindir"
	CC="$root/.ci/ollama/cc ${CC:-gcc}" CXX="$root/.ci/ollama/cc ${CXX:-g++}"
	CGO_CPPFLAGS="-I$root/.ci/ollama/include ${CGO_CPPFLAGS:-}"
	go install -ldflags "-s -w -X github.com/ollama/ollama/version.Version=${version#v}")
pkg="github.com/ollama/ollama@$version"

start=$(date +%s)
echo "build-ollama: building $pkg on $(nproc) cores (several minutes on a cold build cache; a line every ${every}s)" >&2
# The dry run lists every command the build would run: how many C and C++ files and Go
# packages there are to compile, for the progress lines. It downloads the modules first.
"${build[@]}" -n "$pkg" >"$work/plan.log" 2>&1 || {
	cat "$work/plan.log" >&2
	exit 1
}
c_re=' -c [^ ]+\.(c|cc|cpp)$'
go_re='/compile -o '
c_total=$(grep -cE "$c_re" "$work/plan.log" || true)
go_total=$(grep -cE "$go_re" "$work/plan.log" || true)
echo "build-ollama: modules ready after $(($(date +%s) - start))s; to compile: $c_total C/C++ files, $go_total Go packages" >&2

# -x prints each command as it starts: the log is how far along the build is.
setsid "${build[@]}" -x "$pkg" >"$log" 2>&1 &
builder=$!
while kill -0 "$builder" 2>/dev/null; do
	for _ in $(seq "$every"); do
		kill -0 "$builder" 2>/dev/null || break
		sleep 1
	done
	kill -0 "$builder" 2>/dev/null || break
	c_done=$(grep -cE "$c_re" "$log" || true)
	go_done=$(grep -cE "$go_re" "$log" || true)
	# The files cgo writes itself (_cgo_export.c, NAME.cgo2.c, _cgo_main.c) say nothing.
	now=$(grep -oE "$c_re" "$log" | sed -E 's/^ -c //; s#^.*/##' | grep -vE '^_cgo_|\.cgo2\.c$' | tail -n 1 || true)
	echo "build-ollama: $(($(date +%s) - start))s: C/C++ $c_done of $c_total files, Go $go_done of $go_total packages${now:+; compiling $now}" >&2
done
status=0
wait "$builder" || status=$?
builder=
if [ "$status" -ne 0 ]; then
	# The commands -x printed are noise here: show what failed.
	grep -vE '^(mkdir|cd|cat|echo|mv|cp|rm|TERM=|\$WORK|/usr/local/go/pkg/tool|[A-Z_]+=)' "$log" | tail -n 60 >&2
	echo "build-ollama: the build failed (exit $status); the full log is above" >&2
	exit "$status"
fi
echo "build-ollama: built in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
