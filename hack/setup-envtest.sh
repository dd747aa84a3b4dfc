#!/usr/bin/env bash
# setup-envtest.sh builds the local test control plane (kube-apiserver and
# etcd) and the kubectl that tests drive it with, from the Go module proxy,
# into bin/k8s/<version>/.
#
# The versions are pinned by hack/tools/envtest/go.mod. No binary is
# downloaded: all three are compiled from source, once. A cold build takes
# about fifteen minutes on two cores; later runs find the binaries and do
# nothing. When the pins are unchanged and only some binaries are missing,
# only those are built.
#
# When KUBEBUILDER_ASSETS is set it wins: the script checks that it holds
# kube-apiserver and etcd (kubectl is optional there) and builds nothing.
#
# Usage: hack/setup-envtest.sh          build if needed; print the directory
#        hack/setup-envtest.sh --print  print the directory only (no build)
set -euo pipefail

K8S_VERSION="1.37.1"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
moddir="${root}/hack/tools/envtest"
out="${root}/bin/k8s/${K8S_VERSION}"

log() { echo "setup-envtest: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
	for b in kube-apiserver etcd; do
		[[ -x "${KUBEBUILDER_ASSETS}/${b}" ]] ||
			die "KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS} has no executable ${b}; unset KUBEBUILDER_ASSETS to build the control plane into bin/k8s/${K8S_VERSION}/"
	done
	log "using KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS}; nothing to build"
	echo "${KUBEBUILDER_ASSETS}"
	exit 0
fi

if [[ "${1:-}" == "--print" ]]; then
	echo "${out}"
	exit 0
fi

binaries=(kube-apiserver etcd kubectl)

stamp="${out}/.built-from"
# The stamp records the go.mod and go.sum the binaries were built from, so a
# change of pinned versions rebuilds all of them and nothing else does.
want="$(cat "${moddir}/go.mod" "${moddir}/go.sum" | sha256sum | cut -d' ' -f1)"
todo=()
if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
	for b in "${binaries[@]}"; do
		[[ -x "${out}/${b}" ]] || todo+=("${b}")
	done
else
	todo=("${binaries[@]}")
fi
if [[ ${#todo[@]} -eq 0 ]]; then
	log "${binaries[*]} v${K8S_VERSION} already built in ${out}; nothing to do"
	echo "${out}"
	exit 0
fi

command -v go >/dev/null || die "go is not on PATH; install Go 1.26 (https://go.dev/doc/install) and run again"

log "building ${todo[*]} (Kubernetes v${K8S_VERSION}) from source into ${out}"
log "a cold build takes about fifteen minutes on two cores; later runs reuse the binaries"

log "downloading modules (pinned by hack/tools/envtest/go.mod)"
if ! (cd "${moddir}" && go mod download 2>&1 | tail -n 20 >&2); then
	die "could not download the modules from the Go module proxy ($(go env GOPROXY)). Check that the proxy is reachable (go env GOPROXY, GOFLAGS, network) and run 'make envtest' again."
fi

tmp="$(mktemp -d "${root}/bin/.envtest-build.XXXXXX" 2>/dev/null || { mkdir -p "${root}/bin" && mktemp -d "${root}/bin/.envtest-build.XXXXXX"; })"
trap 'rm -rf "${tmp}"' EXIT

pkg="k8s.io/component-base/version"
ldflags="-s -w"
ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
ldflags+=" -X ${pkg}.gitMajor=${K8S_VERSION%%.*}"
minor="${K8S_VERSION#*.}"
ldflags+=" -X ${pkg}.gitMinor=${minor%%.*}"
ldflags+=" -X ${pkg}.gitTreeState=clean"
ldflags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"

build() {
	local name="$1" importpath="$2" flags="$3" start=${SECONDS}
	log "go build ${importpath}"
	if ! (cd "${moddir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${flags}" -o "${tmp}/${name}" "${importpath}"); then
		die "building ${name} failed (see the compiler output above). If a module could not be fetched, check that the Go module proxy is reachable; then run 'make envtest' again."
	fi
	log "built ${name} in $((SECONDS - start))s"
}

# check runs a built binary and compares the first line it prints.
check() {
	local name="$1" want="$2" got
	shift 2
	got="$("${tmp}/${name}" "$@" 2>&1 | head -n 1 || true)"
	[[ "${got}" == "${want}" ]] || die "built ${name} reports '${got}', want '${want}'"
}

for b in "${todo[@]}"; do
	case "${b}" in
	kube-apiserver)
		build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${ldflags}"
		check kube-apiserver "Kubernetes v${K8S_VERSION}" --version
		;;
	etcd) build etcd go.etcd.io/etcd/server/v3 "-s -w" ;;
	kubectl)
		build kubectl k8s.io/kubernetes/cmd/kubectl "${ldflags}"
		check kubectl "Client Version: v${K8S_VERSION}" version --client
		;;
	esac
done

mkdir -p "${out}"
# A stale stamp must not vouch for binaries built from other pins: drop it
# before replacing any binary, write it once all of them are in place.
[[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]] || rm -f "${stamp}"
for b in "${todo[@]}"; do
	mv -f "${tmp}/${b}" "${out}/"
done
echo "${want}" >"${stamp}"
log "done: ${out} ($("${out}/etcd" --version 2>/dev/null | head -n 1))"
echo "${out}"
