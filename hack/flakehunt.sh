#!/usr/bin/env bash
# flakehunt runs the tests of every integration package (a package whose
# tests start a control plane: pkg/testenv, or generate and test projects)
# RUNS times, PARALLEL packages at once, each run as `make test` runs it
# (-race, the mutation detector, unregistered reads reported), and prints a
# table: package, runs, failures, the failed tests. Logs: $OUT/<pkg>.<n>.log.
#
#   hack/flakehunt.sh [package ...]     (make test-flakes)
#
# Packages of the modules nested in opkit's (MODULES, as the Makefile
# lists them) are found and run too, each in its own module.
#
# Environment: RUNS (3), PARALLEL (2), OUT (bin/flakehunt), GO (go),
# MODULES (the Makefile's).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
PARALLEL=${PARALLEL:-2}
OUT=${OUT:-bin/flakehunt}
GO=${GO:-go}
MODULES=${MODULES:-hack/apilist hack/bench hack/benchtable hack/image hack/matrix test/container}
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.rc

pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	# Integration packages: their tests start a control plane or build
	# and test generated projects.
	for mod in . $MODULES; do
		while read -r dir; do
			if grep -lqE 'testenv\.|envtest|exec\.Command' "$dir"/*_test.go 2>/dev/null; then
				pkgs+=("./$dir")
			fi
		done < <($GO -C "$mod" list -f '{{if .TestGoFiles}}{{.Dir}}{{else if .XTestGoFiles}}{{.Dir}}{{end}}' ./... | sed "s|^$PWD/||" | grep -v "^$PWD\$")
	done
fi

# modof prints the directory of the module that holds the package
# directory $1 (relative to the root), "." for opkit's own.
modof() {
	local d=${1#./}
	while [ "$d" != . ] && [ ! -f "$d/go.mod" ]; do d=$(dirname "$d"); done
	echo "$d"
}

# Rounds, so that the two packages running at once differ.
jobs=()
for n in $(seq "$RUNS"); do
	for p in "${pkgs[@]}"; do jobs+=("$p $n"); done
done

run() {
	local p=$1 n=$2 log
	log="$OUT/$(echo "${p#./}" | tr / _).$n"
	local start=$SECONDS dir=${p#./} mod rel
	mod=$(modof "$dir")
	if [ "$mod" = . ]; then rel=./$dir; elif [ "$mod" = "$dir" ]; then rel=.; else rel=./${dir#"$mod"/}; fi
	OPKIT_CACHE_MUTATION_DETECTOR=true OPKIT_CACHE_FAIL_UNREGISTERED_READS=true \
		$GO -C "$mod" test -race -count=1 -timeout=25m "$rel" >"$log.log" 2>&1
	echo "$? $((SECONDS - start))" >"$log.rc"
	echo "$(date -u +%T) $p run $n: exit $(cut -d' ' -f1 "$log.rc") in $((SECONDS - start))s" >&2
}
export -f run modof
export OUT GO
printf '%s\n' "${jobs[@]}" | xargs -P "$PARALLEL" -L 1 bash -c 'run $0 $1'

printf '\n%-40s %5s %9s  %s\n' package runs failures "failed tests (seconds per run)"
total=0
for p in "${pkgs[@]}"; do
	base="$OUT/$(echo "${p#./}" | tr / _)"
	fails=0
	tests=""
	secs=""
	for n in $(seq "$RUNS"); do
		read -r rc s <"$base.$n.rc"
		secs="$secs $s"
		if [ "$rc" != 0 ]; then
			fails=$((fails + 1))
			tests="$tests $(grep -oE -- '--- FAIL: [^ ]+' "$base.$n.log" | cut -d' ' -f3 | sort -u | tr '\n' ' ')[run $n]"
		fi
	done
	total=$((total + fails))
	printf '%-40s %5d %9d  %s (%s )\n' "${p#./}" "$RUNS" "$fails" "${tests:--}" "$secs"
done
echo
echo "failures: $total; logs in $OUT/"
[ "$total" -eq 0 ]
