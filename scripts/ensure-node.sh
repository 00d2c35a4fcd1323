#!/usr/bin/env bash
# Prints the directory of a Node.js the project supports (>= 22.12), for PATH.
# The `node` on PATH when it is new enough; otherwise the Node 24 the project pins (the
# optional dependency node-linux-<arch> in package.json), from node_modules when `npm ci` has
# installed it, else unpacked from the npm registry into a cache (~/.cache/mainline/node-<v>).
# With a version (e.g. 20.20.2): that exact Node, from the cache (the tests run the uploader on 20).
# Usage: PATH="$(bash scripts/ensure-node.sh):$PATH" npm ci
set -eu
wanted="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"

supported() { # $1: a node binary; true when it is 22.12 or newer
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=12)?0:1)' 2>/dev/null
}

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch="" ;;
esac
if [ "$(uname -s)" != Linux ] || [ -z "$arch" ]; then
  # Only Linux on x64 and arm64 has the pinned Node as a package; elsewhere install Node 24.
  node_on_path=$(command -v node || true)
  if [ -n "$node_on_path" ] && supported "$node_on_path"; then dirname "$node_on_path"; exit 0; fi
  echo "Mainline needs Node.js 22.12 or newer (24 LTS recommended): https://nodejs.org/" >&2
  exit 2
fi

package="node-linux-$arch"
if [ -n "$wanted" ]; then
  version=$wanted
else
  version=$(sed -n "s/.*\"$package\": \"\([0-9.]*\)\".*/\1/p" "$root/package.json" | head -n 1)
  installed="$root/node_modules/$package/bin/node"
  if [ -x "$installed" ]; then dirname "$installed"; exit 0; fi
  node_on_path=$(command -v node || true)
  if [ -n "$node_on_path" ] && supported "$node_on_path"; then dirname "$node_on_path"; exit 0; fi
fi

cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/mainline/node-$arch-$version"
if [ ! -x "$cache/bin/node" ]; then
  echo "Node.js $version: fetching $package@$version from the npm registry into $cache" >&2
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && npm pack --silent "$package@$version" >/dev/null)
  mkdir -p "$scratch/unpacked"
  tar -xzf "$scratch"/*.tgz -C "$scratch/unpacked"
  mkdir -p "$(dirname "$cache")"
  rm -rf "$cache"
  mv "$scratch/unpacked/package" "$cache"
fi
"$cache/bin/node" --version >/dev/null || { echo "$cache/bin/node does not run" >&2; exit 1; }
echo "$cache/bin"
