#!/usr/bin/env bash
# Builds the pinned ollama release from the Go module proxy into a cache folder
# outside the source tree, for the tests and examples that run a real engine
# on the CPU. Running it again is a no-op once the binary exists.
#
#   .ci/build-ollama.sh            build if missing, print the binary's path
#   OLLAMA_VERSION=v0.17.4         the pinned release (override at your own risk)
#   RUNNER_CACHE_DIR=DIR           where builds land (default ${XDG_CACHE_HOME:-$HOME/.cache}/runner)
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
start=$(date +%s)
echo "build-ollama: building github.com/ollama/ollama@$version (several minutes on a cold build cache)" >&2
# go install pkg@version builds outside any module, so the project's go.mod
# and GOFLAGS do not apply; GOFLAGS is cleared so a -mod setting cannot break it.
# Release builds stamp the version with -ldflags; without it /api/version
# answers "0.0.0", and the version is what result manifests record.
env GOFLAGS= CGO_ENABLED=1 GOBIN="$bindir" \
	CGO_CPPFLAGS="-I$root/.ci/ollama/include ${CGO_CPPFLAGS:-}" \
	go install -ldflags "-X github.com/ollama/ollama/version.Version=${version#v}" "github.com/ollama/ollama@$version"
echo "build-ollama: built in $(($(date +%s) - start))s" >&2
echo "$bin"
