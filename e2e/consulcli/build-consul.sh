#!/usr/bin/env bash
# Builds Consul's CLI, unchanged, from its module source and prints the
# binary's path. The binary is cached per version under the user's cache
# directory (CAIRN_CONSUL_CLI_CACHE overrides it), so only the first run
# builds (a few minutes); later runs print the path at once. With --check
# it builds nothing: it prints the path if the binary is there, else exits
# with status 3.
#
# Consul's go.mod replaces its nested modules (api, sdk, ...) with
# directories of its repository, which the module zip does not hold; the
# build uses a copy of that go.mod without the replace lines instead, and
# the api release whose tests compat/consulsuite runs.
set -euo pipefail

version=1.22.7
api=v1.34.5
cache=${CAIRN_CONSUL_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn/consul-cli}
bin="$cache/consul-$version"
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
if [ "${1:-}" = --check ]; then
	echo "build-consul: $bin is not built yet" >&2
	exit 3
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time; a waiter finds the binary made meanwhile
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$(go mod download -json "github.com/hashicorp/consul@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ]; then
	echo "build-consul: no module source for consul v$version" >&2
	exit 1
fi
cp "$src/go.mod" "$src/go.sum" "$work/"
chmod u+w "$work/go.mod" "$work/go.sum"
for m in api envoyextensions proto-public sdk troubleshoot; do
	go mod edit -modfile="$work/go.mod" -dropreplace="github.com/hashicorp/consul/$m"
done
go mod edit -modfile="$work/go.mod" -require="github.com/hashicorp/consul/api@$api"
# -modfile keeps the read-only module cache untouched; -mod=mod lets go
# add the sums of the modules the replace lines stood for.
(cd "$src" && go build -modfile="$work/go.mod" -mod=mod -trimpath -o "$work/consul" .) >&2
mv "$work/consul" "$bin"
echo "$bin"
