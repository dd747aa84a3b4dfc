#!/usr/bin/env bash
# test-next.sh builds and tests a copy of the module against the next
# Kubernetes libraries (make test-next), and never touches the checkout's
# go.mod: it copies the module to a temporary directory (without bin/ and
# .git, as verify-manifests does), and there, with the next Go toolchain,
#
#   1. go get NEXT_MODULES (k8s.io/client-go, apimachinery, api and
#      apiextensions-apiserver) at NEXT_VERSION (controller-runtime stays
#      where go.mod has it: no release of it requires v0.38 yet, so MVS
#      lifts its k8s.io deps),
#   2. go mod tidy; if it fails, go mod tidy -e, so that the build still
#      shows what else fails (tidy also wants the test dependencies of
#      dependencies, which the build does not),
#   3. go build ./...,
#   4. go vet ./...,
#   5. go test the packages that need no control plane (NEXT_TEST_PKGS).
#
# It prints which steps passed; for a step that failed, the module versions
# the module proxy refused (parsed from the go command's "403 Forbidden" /
# "404 Not Found" / "not available" lines) and otherwise the compile or
# test errors, and exits 1. The steps after a failed go get are skipped:
# they would only test the current versions again. Each step's full
# output stays in bin/test-next/<step>.log.
#
# Environment:
#   NEXT_VERSION     the k8s.io version to get (default v0.38.0-beta.0)
#   NEXT_MODULES     the modules to get at NEXT_VERSION (default above)
#   NEXT_TOOLCHAIN   the Go toolchain (default go1.27.4; the go command
#                    downloads it through the module proxy)
#   NEXT_TEST_PKGS   the packages to test (default: below)
#   NEXT_TEST_FLAGS  go test flags (default -count=1 -timeout=10m)
#   NEXT_REPLACE     space-separated go mod edit -replace arguments
#                    (old[@v]=new[@v]) applied before go get, to get past a
#                    module version the proxy refuses; the summary lists them
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${NEXT_VERSION:-v0.38.0-beta.0}"
export GOTOOLCHAIN="${NEXT_TOOLCHAIN:-go1.27.4}"
# The packages whose tests need no control plane, among them the ones
# closest to client-go: the informer, the fence, the queue, the fake cache.
pkgs="${NEXT_TEST_PKGS:-./internal/informer/... ./internal/fence/... ./internal/actas/... ./internal/metrics/... \
./pkg/queue/... ./pkg/reconcile/... ./pkg/conditions/... ./pkg/metrics/... ./pkg/cache/cachetest/... ./pkg/webhook/requester/...}"
read -r -a test_flags <<<"${NEXT_TEST_FLAGS:--count=1 -timeout=10m}"
modules="${NEXT_MODULES:-k8s.io/client-go k8s.io/apimachinery k8s.io/api k8s.io/apiextensions-apiserver}"
logs="$root/bin/test-next"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$logs"
rm -f "$logs"/*.log
tar -C "$root" --exclude=./bin --exclude=./.git -cf - . | tar -C "$tmp" -xf -
cd "$tmp" || exit 1

declare -a summary=()
failed=0
blocked=""

# refused prints the module versions the proxy refused in log, one a line:
# module@version, the status, the proxy's reason (the go command's
# "server response:" line after it) and the URL it read.
refused() {
	awk '
	/^[[:space:]]*server response:/ && last != "" {
		sub(/^[[:space:]]*server response:[[:space:]]*/, "")
		reason[last] = $0
		last = ""
		next
	}
	{ last = "" }
	match($0, /[^[:space:]:]+@v[^[:space:]:]+: (reading|verifying|downloading) [^[:space:]]+: (403|404|410)[^:]*$/) {
		s = substr($0, RSTART, RLENGTH)
		i = index(s, ": "); mv = substr(s, 1, i - 1); s = substr(s, i + 2)
		s = substr(s, index(s, " ") + 1)
		i = index(s, ": "); url = substr(s, 1, i - 1); status = substr(s, i + 2)
		key = mv ": " status " (" url ")"
		if (!(key in reason)) { order[++n] = key; reason[key] = "" }
		last = key
	}
	END {
		for (j = 1; j <= n; j++) {
			k = order[j]
			print (reason[k] == "" ? k : k ", \"" reason[k] "\"")
		}
	}' "$1"
}

# errors prints the compile, vet and test failures in log, paths made
# relative to the module, at most 60 lines.
errors() {
	grep -E '^(#|[^[:space:]]+\.go:[0-9]+(:[0-9]+)?: |--- FAIL|FAIL|panic:|go: )' "$1" |
		sed -e "s#$tmp/##g" | grep -v '^go: downloading' | head -n 60
}

# step runs name's command, logs it, and notes the outcome.
step() {
	local name="$1"
	shift
	if [[ -n "$blocked" ]]; then
		summary+=("SKIP  $name (after $blocked failed)")
		return
	fi
	echo "=== test-next: $name: $*"
	if "$@" >"$logs/$name.log" 2>&1; then
		summary+=("PASS  $name")
		return
	fi
	failed=1
	summary+=("FAIL  $name (bin/test-next/$name.log)")
	local r
	r="$(refused "$logs/$name.log")"
	if [[ -n "$r" ]]; then
		summary+=("      the module proxy refused:" "$(sed 's/^/      /' <<<"$r")")
	else
		summary+=("$(errors "$logs/$name.log" | sed 's/^/      /')")
	fi
}

echo "=== test-next: $(go version) in a copy of $root"
for r in ${NEXT_REPLACE:-}; do
	go mod edit -replace "$r" || exit 1
	summary+=("NOTE  replace $r")
done
get=()
for m in $modules; do get+=("$m@$version"); done
step get go get "${get[@]}"
[[ "$failed" == 1 ]] && blocked=get
step tidy go mod tidy
if [[ "${summary[-1]}" != "PASS  tidy" && -z "$blocked" ]]; then
	go mod tidy -e >"$logs/tidy-e.log" 2>&1
	summary+=("NOTE  continuing after go mod tidy -e (bin/test-next/tidy-e.log)")
fi
step build go build ./...
step vet go vet ./...
# shellcheck disable=SC2086 # pkgs is a list of patterns
step test go test "${test_flags[@]}" $pkgs

echo
echo "=== test-next summary: k8s.io $version, $GOTOOLCHAIN"
if [[ -f go.mod ]]; then
	echo "      the copy's go.mod after the steps:"
	for m in k8s.io/client-go k8s.io/apimachinery k8s.io/api k8s.io/apiextensions-apiserver \
		sigs.k8s.io/controller-runtime sigs.k8s.io/structured-merge-diff/v6 sigs.k8s.io/structured-merge-diff/v7; do
		v="$(go list -m -f '{{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}' "$m" 2>/dev/null)" && echo "        $m $v"
	done
fi
printf '%s\n' "${summary[@]}"
if [[ "$failed" == 1 ]]; then
	echo "test-next: FAILED against k8s.io $version (logs in bin/test-next/)"
	exit 1
fi
echo "test-next: every step passed against k8s.io $version"
