#!/usr/bin/env bash
# envtest-pin.sh pins a Kubernetes version's test control plane: it writes
# hack/tools/envtest/<version>/go.mod and go.sum, a module whose tools are
# that version's kube-apiserver and kubectl and the etcd server its
# k8s.io/kubernetes requires. k8s.io/kubernetes replaces its staging
# modules (k8s.io/api, client-go, ...) with ./staging/...; outside its
# repository those paths do not exist, so every one of them is replaced by
# its published copy, v0.<minor>.<patch>. Then 'make envtest-pins' copies
# the pins into the opkit binary, and 'opkit envtest --version <version>'
# builds them.
#
# Usage: hack/envtest-pin.sh 1.34.4
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="${1:?usage: hack/envtest-pin.sh <kubernetes version, for example 1.34.4>}"
if [[ ! "$version" =~ ^1\.[0-9]+\.[0-9]+(-[a-z]+\.[0-9]+)?$ ]]; then
  echo "envtest-pin: $version is not a Kubernetes version such as 1.34.4 or 1.38.0-beta.0" >&2
  exit 2
fi
staging="v0.${version#1.}"
dir="hack/tools/envtest/$version"
mkdir -p "$dir"
export GOFLAGS=-mod=mod GOWORK=off
kmod="$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
if [[ -z "$kmod" ]]; then
  echo "envtest-pin: the Go module proxy did not serve k8s.io/kubernetes v$version" >&2
  exit 1
fi
# The Go version k8s.io/kubernetes asks for, and its staging modules.
goline="$(grep -m1 '^go ' "$kmod")"
mapfile -t mods < <(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod" | sort -u)
{
  echo "// Module envtest pins Kubernetes v$version's test control plane: written by"
  echo "// hack/envtest-pin.sh, built by 'opkit envtest --version $version'."
  echo "module github.com/opkit-dev/opkit/hack/tools/envtest/v$version"
  echo
  echo "$goline"
  echo
  echo "// k8s.io/kubernetes replaces its staging modules with ./staging/...; outside"
  echo "// its repository those paths do not exist, so use the published copies."
  echo "replace ("
  for m in "${mods[@]}"; do echo "	$m => $m $staging"; done
  echo ")"
  echo
  echo "tool ("
  echo "	go.etcd.io/etcd/server/v3"
  echo "	k8s.io/kubernetes/cmd/kube-apiserver"
  echo "	k8s.io/kubernetes/cmd/kubectl"
  echo ")"
  echo
  echo "require k8s.io/kubernetes v$version"
} >"$dir/go.mod"
rm -f "$dir/go.sum"
(cd "$dir" && go mod tidy)
echo "envtest-pin: wrote $dir/go.mod and go.sum; run 'make envtest-pins' to embed them"
