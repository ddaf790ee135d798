# shellcheck shell=bash
# need-node.sh defines need_node, for bash scripts to source (.ci/run does).
#
# need_node MAJOR fails, saying why and what to do, unless node on PATH is
# Node.js MAJOR or later: the TypeScript client (clients/typescript) and the
# MCP TypeScript SDK test need Node.js 20, and Debian bookworm's nodejs
# package is 18, so installing it is not enough there.
need_node() {
	local want=$1 node version major
	if ! node=$(command -v node); then
		echo "Node.js $want or later is needed (the TypeScript client's tests) and there is no node on PATH." >&2
		echo "Install Node.js $want or later (nodejs.org, or Debian trixie's nodejs) and put it on PATH." >&2
		return 1
	fi
	version=$(node --version 2>/dev/null) || version=
	major=${version#v}
	major=${major%%.*}
	if ! [[ $major =~ ^[0-9]+$ ]] || ((major < want)); then
		echo "Node.js $want or later is needed (the TypeScript client's tests); $node is ${version:-not a working node}." >&2
		echo "Debian bookworm's nodejs is 18: install Node.js $want or later (nodejs.org, or Debian trixie's nodejs) and put it first on PATH." >&2
		return 1
	fi
}
