#!/usr/bin/env bash
# setup-envtest.sh builds the local test control plane (kube-apiserver and
# etcd) and the kubectl that tests drive it with, from the Go module proxy,
# into the per-user directory every project shares
# ($XDG_CACHE_HOME/opkit/k8s/<version>/, else ~/.cache/opkit/k8s/<version>/).
#
# It is "opkit envtest" (cmd/opkit, internal/envtest), kept for scripts
# that call it. The versions are pinned by hack/tools/envtest/<version>/, which
# the opkit binary embeds. No binary is downloaded: all three are compiled
# from source, once per machine. When KUBEBUILDER_ASSETS is set it wins:
# it is checked and nothing is built.
#
# Usage: hack/setup-envtest.sh          build if needed; print the directory
#        hack/setup-envtest.sh --print  print the directory only (no build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./cmd/opkit envtest "$@"
