#!/usr/bin/env bash
# test-matrix runs opkit's tests on every Kubernetes version of VERSIONS
# with the default Go, and on the newest of them with NEXT_GO too, one
# cell at a time, then prints the table of cells (hack/matrix). It builds
# each version's control plane it lacks first ('opkit envtest --version').
#
#   hack/test-matrix.sh                (make test-matrix)
#
# Environment: VERSIONS (the pinned ones), NEXT_GO (go1.27.4; empty: no Go
# cell), FLAGS (go test flags), PKGS (./...), TEST_ENV (the Makefile's),
# OUT (bin/matrix), GO (go). A cell's go test -json output is
# $OUT/<version>-<go>.json, its time $OUT/<version>-<go>.seconds; the table
# is $OUT/table.md.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSIONS=${VERSIONS:-$($GO run ./cmd/opkit envtest --list | cut -f1 | tr '\n' ' ')}
NEXT_GO=${NEXT_GO-go1.27.4}
FLAGS=${FLAGS:--count=1 -timeout=40m}
PKGS=${PKGS:-./...}
TEST_ENV=${TEST_ENV:-OPKIT_CACHE_MUTATION_DETECTOR=true OPKIT_CACHE_FAIL_UNREGISTERED_READS=true}
OUT=${OUT:-bin/matrix}
mkdir -p "$OUT"

for v in $VERSIONS; do
	echo "test-matrix: control plane $v" >&2
	$GO run ./cmd/opkit envtest --version "$v" >/dev/null || exit 1
done

default_go=$($GO env GOVERSION)
newest=${VERSIONS##* }
cells=()
for v in $VERSIONS; do cells+=("$v $default_go"); done
if [[ -n "$NEXT_GO" ]]; then cells+=("$newest $NEXT_GO"); fi

for cell in "${cells[@]}"; do
	read -r v goversion <<<"$cell"
	name="$v-$goversion"
	echo "test-matrix: Kubernetes $v, $goversion: go test $FLAGS $PKGS" >&2
	start=$(date +%s)
	# shellcheck disable=SC2086 # FLAGS, PKGS and TEST_ENV are word lists
	env $TEST_ENV OPKIT_K8S_VERSION="$v" GOTOOLCHAIN="$goversion" \
		$GO test -json $FLAGS $PKGS >"$OUT/$name.json" 2>"$OUT/$name.stderr"
	echo $(($(date +%s) - start)) >"$OUT/$name.seconds"
	echo "test-matrix: $name done in $(cat "$OUT/$name.seconds") s" >&2
done

files=()
for cell in "${cells[@]}"; do
	read -r v goversion <<<"$cell"
	files+=("$OUT/$v-$goversion.json")
done
$GO -C hack/matrix run . "${files[@]/#/$PWD/}" | tee "$OUT/table.md"
