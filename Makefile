# opkit's Makefile. 'make' alone lists the targets.
#
# Everything the targets need is built here from versions pinned in go.mod
# files: the developer tools by hack/tools/go.mod, promtool by
# hack/tools/promtool/go.mod, the test control planes by
# hack/tools/envtest/<version>/go.mod; hack/tools/kustomize/go.mod pins the
# kustomize scaffolded projects render config/ with. Nothing is downloaded
# but Go modules.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      := $(CURDIR)/bin
TOOLS    := $(CURDIR)/hack/tools
GOFILES   = $(shell find . -path ./bin -prune -o -name '*.go' -print)

# Modules of their own beside the SDK's: the programs and tests that are not
# the SDK (benchmarks, the image builder and the test that runs its image,
# the API listing, benchmark table and test matrix tools), so that the SDK's go.mod holds
# only what the SDK imports. Each replaces opkit with this checkout; no
# go.work. build, lint and test cover them, each run in its own directory.
MODULES := hack/apilist hack/bench hack/bench/mcrcost hack/benchtable hack/image hack/matrix test/container

# Tests run with opkit's cache mutation detector on (testenv.Main also
# turns it on), so a test that mutates an object shared through the cache
# fails, naming the object and the fields that changed. client-go's own
# detector stays off: it panics from an informer goroutine with less to go on.
# A read through the cached client of a kind nobody registered fails the
# tests too (testenv.Main also turns this on), even where the reader
# swallows the error, so that a missing registration never reaches
# production.
TEST_ENV := OPKIT_CACHE_MUTATION_DETECTOR=true OPKIT_CACHE_FAIL_UNREGISTERED_READS=true
TEST_FLAGS ?= -race -count=1 -timeout=20m

STATICCHECK    := $(BIN)/staticcheck
CONTROLLER_GEN := $(BIN)/controller-gen
PROMTOOL       := $(BIN)/promtool
PROMTOOL_MOD   := $(TOOLS)/promtool

# What controller-gen generates from the markers in cmd/sample-operator: the
# Mirror API's deepcopy code, its apply configurations, its CRD, the operator's ClusterRole and its
# admission webhook configurations (config/webhook/manifests.yaml, from the
# +kubebuilder:webhook markers); examples/website's deepcopy code, apply
# configurations and CRD; and examples/dynamic's deepcopy code and CRD. Run
# from the root of a copy of the module.
GENERATE_MANIFESTS = \
  $(CONTROLLER_GEN) object applyconfiguration paths=./cmd/sample-operator/api/... && \
  $(CONTROLLER_GEN) crd rbac:roleName=mirror-operator webhook paths=./cmd/sample-operator/... \
    output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
    output:webhook:artifacts:config=config/webhook && \
  $(CONTROLLER_GEN) object applyconfiguration crd paths=./examples/website/... output:crd:artifacts:config=examples/website/config/crd && \
  $(CONTROLLER_GEN) object crd paths=./examples/dynamic/... output:crd:artifacts:config=examples/dynamic/config/crd
GENERATED := config/crd config/rbac config/webhook/manifests.yaml cmd/sample-operator/api \
  examples/website/api examples/website/config/crd \
  examples/dynamic/zz_generated.deepcopy.go examples/dynamic/config/crd

##@ General

.PHONY: help
help: ## List the targets (the default).
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
	  /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-10s %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Develop

.PHONY: build
build: ## Compile every package and the commands into bin/.
	$(GO) build ./...
	for m in $(MODULES); do $(GO) -C $$m build -o /dev/null ./... || exit 1; done
	$(GO) build -o $(BIN)/opkit-testenv ./cmd/opkit-testenv
	$(GO) build -o $(BIN)/sample-operator ./cmd/sample-operator
	$(GO) build -o $(BIN)/opkit ./cmd/opkit
	$(GO) build -o $(BIN)/fleet-example ./examples/fleet

# The sample operator serves metrics and probes on loopback ports of their
# own, so that 'make run' does not collide with anything on :8080.
# It refuses a taken port before it starts the control plane; move one with,
# say, make run RUN_FLAGS='--metrics-bind-address 127.0.0.1:18090 --health-probe-bind-address 127.0.0.1:18091'.
RUN_FLAGS ?= --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081

.PHONY: run
run: envtest build ## Run the sample Mirror operator against a local control plane with sample objects, until Ctrl-C.
	$(BIN)/sample-operator --local --local-dir $(BIN)/run $(RUN_FLAGS)

# make run-fleet starts a hub and FLEET_MEMBERS member control planes on
# this machine, each a kube-apiserver and etcd of its own, puts each
# member's kubeconfig in a Secret on the hub, creates sample objects and
# runs examples/fleet against the hub; it prints the kubectl commands that
# look at each cluster (examples/fleet/README.md walks through them).
FLEET_MEMBERS ?= 2

.PHONY: run-fleet
run-fleet: envtest ## Run the example fleet operator (examples/fleet) against a local hub and FLEET_MEMBERS (2) members with sample objects, until Ctrl-C.
	$(GO) build -o $(BIN)/fleet-example ./examples/fleet
	$(BIN)/fleet-example --local --members $(FLEET_MEMBERS) --local-dir $(BIN)/run-fleet

.PHONY: run-control-plane
run-control-plane: envtest build ## Run a local control plane alone until Ctrl-C; prints a kubeconfig.
	$(BIN)/opkit-testenv --kubeconfig $(BIN)/run/kubeconfig

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the Mirror API's deepcopy code, apply configurations, CRD, RBAC role and webhook configurations from their markers.
	$(GENERATE_MANIFESTS)

# verify-manifests regenerates into a copy of the module, so it never writes
# to the working tree, and compares: it fails when a marker changed and
# 'make manifests' was not run, or when a generated file was edited by hand.
.PHONY: verify-manifests
verify-manifests: $(CONTROLLER_GEN) ## Fail if the files 'make manifests' generates are out of date (part of 'make test').
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	tar -C $(CURDIR) --exclude=./bin --exclude=./.git -cf - . | tar -C "$$tmp" -xf -; \
	(cd "$$tmp" && $(GENERATE_MANIFESTS)); \
	stale=0; for p in $(GENERATED); do diff -ruN "$$p" "$$tmp/$$p" || stale=1; done; \
	if [[ "$$stale" != 0 ]]; then \
	  echo "verify-manifests: the generated files above are out of date; run 'make manifests' and commit the result"; exit 1; \
	fi

# api/opkit.txt lists opkit's exported API, one line per exported name of
# the packages under pkg/ outside internal/ (hack/apilist; the format is in
# its package doc, what it promises in docs/versioning.md). verify-api fails,
# naming the lines that changed, when the API changed and 'make api' was not
# run, so that every change to the API shows in review as a change to the
# listing. make api-count counts the exported names per package.
API_LISTING := api/opkit.txt
APILIST     := $(GO) -C hack/apilist build -o $(BIN)/apilist . && $(BIN)/apilist

.PHONY: api
api: ## Rewrite api/opkit.txt, the listing of opkit's exported API, after changing the API.
	$(APILIST) -o $(API_LISTING)

.PHONY: verify-api
verify-api: ## Fail if the exported API differs from api/opkit.txt and name the lines; 'make api' rewrites it (part of 'make test').
	@$(APILIST) -check $(API_LISTING)

.PHONY: api-count
api-count: ## Count the exported names of each package under pkg/, largest first.
	@$(APILIST) -count

.PHONY: lint
lint: $(STATICCHECK) ## Check formatting (gofmt), then run go vet and staticcheck.
	@unformatted="$$(gofmt -l $(GOFILES))"; \
	if [[ -n "$$unformatted" ]]; then \
	  echo "gofmt: these files need formatting (run 'gofmt -w' on them):"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(GO) vet -tags nolocal ./cmd/sample-operator
	$(STATICCHECK) ./...
	for m in $(MODULES); do (cd $$m && $(GO) vet ./... && $(STATICCHECK) ./...) || exit 1; done

.PHONY: test
test: lint verify-api verify-manifests test-alerts envtest ## Lint, check the API listing, generated files and alert rules, then run unit and integration tests with -race against a local control plane.
	$(TEST_ENV) $(GO) test $(TEST_FLAGS) ./...
	for m in $(MODULES); do (cd $$m && $(TEST_ENV) $(GO) test $(TEST_FLAGS) ./...) || exit 1; done

# make test-matrix runs the tests of the main module (every integration
# suite: cache, manager, sharding, controller, webhooks, faults, the
# sample's end-to-end and deployed tests, the scaffolded projects) on each
# Kubernetes version of MATRIX_VERSIONS, building the control planes it
# lacks into the shared directory (about fifteen minutes each, once per
# machine), and on the newest with MATRIX_NEXT_GO too; then prints a table
# of the cells (hack/matrix): pass or fail, tests skipped and why, and the
# paths the cache took. Logs and the table: bin/matrix/. Without -race
# (MATRIX_FLAGS), so a cell costs about what make test's go test does.
MATRIX_VERSIONS ?= 1.34.4 1.35.4 1.36.3 1.37.2
MATRIX_NEXT_GO  ?= go1.27.4
MATRIX_FLAGS    ?= -count=1 -timeout=40m
MATRIX_PKGS     ?= ./...

.PHONY: test-matrix
test-matrix: ## Run the tests on every Kubernetes version of MATRIX_VERSIONS (and Go MATRIX_NEXT_GO on the newest) and print the table (about an hour on two cores, once the control planes are built).
	VERSIONS="$(MATRIX_VERSIONS)" NEXT_GO="$(MATRIX_NEXT_GO)" FLAGS="$(MATRIX_FLAGS)" PKGS="$(MATRIX_PKGS)" \
	  TEST_ENV="$(TEST_ENV)" GO=$(GO) hack/test-matrix.sh

# make test-soak runs the run-time watch soak tests at full size: 50
# custom resource kinds acquired and released 1,000 times by several owners
# under a write load (make test runs them with 5 kinds and 60 cycles).
SOAK_KINDS  ?= 50
SOAK_CYCLES ?= 1000

.PHONY: test-soak
test-soak: envtest ## Run the run-time watch soak tests at full size: SOAK_KINDS=50 kinds, SOAK_CYCLES=1000 acquires and releases.
	OPKIT_SOAK_KINDS=$(SOAK_KINDS) OPKIT_SOAK_CYCLES=$(SOAK_CYCLES) $(TEST_ENV) $(GO) test $(TEST_FLAGS) -run 'Soak' -v ./pkg/cache/

# make test-flakes runs every integration package's tests RUNS times (3),
# PARALLEL packages at once (2), as make test runs them, and prints a table
# of the failures (hack/flakehunt.sh; logs in bin/flakehunt). About three
# times as long as make test. FLAKE_PKGS limits it to some packages.
RUNS ?= 3
PARALLEL ?= 2
FLAKE_PKGS ?=

.PHONY: test-flakes
test-flakes: envtest build ## Run every integration package's tests RUNS=3 times, PARALLEL=2 packages at once, and print the failures by package.
	RUNS=$(RUNS) PARALLEL=$(PARALLEL) GO=$(GO) MODULES="$(MODULES)" hack/flakehunt.sh $(FLAKE_PKGS)

.PHONY: test-alerts
test-alerts: $(PROMTOOL) ## Check the alert rules in config/monitoring and run their unit tests with promtool (part of 'make test').
	$(PROMTOOL) check rules config/monitoring/rules.yaml
	$(PROMTOOL) test rules config/monitoring/tests/*.yaml

# Every row runs for BENCH_TIME, BENCH_COUNT times; benchtable takes the
# medians. Rows of one workload run back to back, so their ratios hold up on
# a noisy machine better than their absolute figures. BENCH_QUICK=1 runs
# every benchmark once, and the end-to-end one on a smaller workload.
BENCH_QUICK ?=
ifneq ($(filter-out 0,$(BENCH_QUICK)),)
BENCH_QUICK_DEFAULT := 1
endif
BENCH_TIME  ?= 1s
BENCH_COUNT ?= $(if $(BENCH_QUICK_DEFAULT),1,3)

# The cache benchmarks create 40,000 objects in a local control plane first,
# and run with the mutation detectors off: they keep a copy of every object.
# BenchmarkColdStart creates COLD_OBJECTS ConfigMaps and Secrets more and
# times the Mirror's caches from start to synced beside controller-runtime's.
CACHE_BENCH_COUNT ?= $(if $(BENCH_QUICK_DEFAULT),1,3)
COLD_OBJECTS      ?= $(if $(BENCH_QUICK_DEFAULT),3000,20000)

# A source benchmark op is 100,000 watch updates through an informer: a
# fixed number of ops gives every row the same work. Each row runs in a
# process of its own, and the rows take turns, SOURCE_BENCH_COUNT rounds,
# so that a change in the machine's load during the run falls on both
# implementations alike. With one process for all rows, a row's figures
# depended on the rows before it (their heap, their garbage): in five runs
# on a quiet machine two rows had a run 70% slower than their others; in
# a process each, no row's runs spread more than 12%.
SOURCE_BENCH_TIME  ?= 3x
SOURCE_BENCH_COUNT ?= $(if $(BENCH_QUICK_DEFAULT),1,7)
SOURCE_ROWS := opkitlag opkit opkitlagloaded opkitloaded ctrlruntime default ctrlruntimedefault controller controllertraced

# What acting as the tenant costs (pkg/manager): creates through a
# controller's Writer and its WriterAs in turn, in one run, each row's time
# per create and their ratio (as/own); then 1,000 identities, one create
# each, and the heap and goroutines they leave behind.
WRITERAS_CREATES ?= $(if $(BENCH_QUICK_DEFAULT),100,1000)

# The end-to-end benchmark runs the Mirror operator on opkit, on
# controller-runtime and as a bare client, in alternation (see
# hack/bench/e2e), in three scenarios: the original workload, the same in a
# cluster filled with 30,000 ConfigMaps and Secrets, and a noisy neighbour
# flooding the operator while quiet tenants wait for their copies.
# E2E_FLAGS passes it flags, such as -rounds 3 or -scenarios original,noisy.
E2E_FLAGS ?=

# The scale-out benchmark runs one and three replicas of an operator in
# sharded mode, in alternation (see hack/bench/scaleout): objects converged
# per second when reconciles wait on a slow dependency, heap per replica,
# and the time to converge after a replica is killed. SCALEOUT_FLAGS passes
# it flags, such as -rounds 5 or -objects 1200.
SCALEOUT_FLAGS ?=

# The memory benchmark (make bench-memory, also run by make bench) fills a
# control plane with OBJECTS ConfigMaps and Secrets of one shape, then runs
# opkit's Mirror operator and two of controller-runtime's (caching
# ConfigMaps and Secrets in full, and ConfigMaps only), each inside a
# memory cgroup of its own with its binary's pages charged to it, as in a
# container: peak during the initial sync, steady state, time to ready,
# OOM kills, the smallest limit each survives, bisected, and the time and
# CPU to converge there against the unlimited run (hack/bench/e2e's memory
# scenario). It runs once per shape of MEMORY_SHAPES (realistic and small),
# each on a control plane of its own, and writes memory-SHAPE.txt and
# memory.txt. It needs root, to make the cgroups. No warm-up run: the fill
# warms the control plane up. MEMORY_FLAGS passes it flags, such as
# -memory-max 2048, -memory-steps 6, -memory-precision 8 or
# -memory-peer-gomemlimit.
OBJECTS       ?= $(if $(BENCH_QUICK_DEFAULT),6000,60000)
MEMORY_SHAPES ?= realistic small
MEMORY_FLAGS  ?=

# Where make bench writes its tables (and the end-to-end chart).
RESULTS := $(CURDIR)/bench/results

# hack/benchtable turns go test -bench output into the tables.
BENCHTABLE := $(GO) -C hack/benchtable run .

.PHONY: bench
bench: envtest ## Run the benchmarks side by side with the peers and print the ratios (over an hour on two cores; BENCH_QUICK=1: a few minutes).
	mkdir -p $(BIN)/bench $(RESULTS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=$(BENCH_TIME) -count=$(BENCH_COUNT) -timeout=30m ./pkg/queue/ \
	  | tee $(BIN)/bench/queue.txt | $(BENCHTABLE) | tee $(RESULTS)/queue.txt
	OPKIT_CACHE_MUTATION_DETECTOR=false KUBE_CACHE_MUTATION_DETECTOR=false OPKIT_BENCH_COLD_OBJECTS=$(COLD_OBJECTS) $(GO) test -run '^$$' -bench . -benchmem -benchtime=$(BENCH_TIME) -count=$(CACHE_BENCH_COUNT) -timeout=60m ./pkg/cache/ \
	  | tee $(BIN)/bench/cache.txt | $(BENCHTABLE) | tee $(RESULTS)/cache.txt
	$(GO) test -c -o $(BIN)/bench/source.test ./pkg/source/
	for i in $$(seq $(SOURCE_BENCH_COUNT)); do \
	  for row in $(SOURCE_ROWS); do \
	    OPKIT_CACHE_MUTATION_DETECTOR=false KUBE_CACHE_MUTATION_DETECTOR=false $(BIN)/bench/source.test -test.run '^$$' \
	      -test.bench "^BenchmarkInformerUpdates$$/^$$row$$" -test.benchmem -test.benchtime=$(SOURCE_BENCH_TIME) -test.timeout=30m || exit 1; \
	  done; \
	done | tee $(BIN)/bench/source.txt | $(BENCHTABLE) | tee $(RESULTS)/source.txt
	{ $(GO) test -run '^$$' -bench '^BenchmarkWriterAs$$' -benchtime=$(WRITERAS_CREATES)x -count=$(BENCH_COUNT) -timeout=30m ./pkg/manager/ && \
	  $(GO) test -run '^$$' -bench '^BenchmarkWriterAsIdentities$$' -benchtime=1x -count=$(BENCH_COUNT) -timeout=30m ./pkg/manager/; } \
	  | grep -E '^(Benchmark|goos|goarch|cpu)' | tee $(RESULTS)/writeras.txt
	BENCH_QUICK=$(BENCH_QUICK) $(GO) -C hack/bench run ./e2e -out $(RESULTS) -scenarios original,fill,noisy $(E2E_FLAGS) | tee $(RESULTS)/e2e.txt
	BENCH_QUICK=$(BENCH_QUICK) $(GO) -C hack/bench run ./scaleout -out $(RESULTS) $(SCALEOUT_FLAGS) | tee $(RESULTS)/scaleout.txt
	$(MAKE) --no-print-directory bench-fleet
	$(MAKE) --no-print-directory bench-budget
	$(MAKE) --no-print-directory bench-memory
	@{ echo; echo "=== make bench, $$(date -u +%F): every table ($(RESULTS)/, chart: e2e.png)"; \
	  for t in queue cache source writeras e2e scaleout fleet budget memory; do echo; echo "--- $$t"; cat $(RESULTS)/$$t.txt; done; } | tee $(RESULTS)/bench.txt

# make bench-fleet engages 10, 100 and 1,000 members (namespaces of the
# test control plane, three empty kinds each), and 10 on 10 control planes
# of their own, and reports the goroutines
# and live heap each adds (pkg/fleet's BenchmarkCostPerMember), beside
# multicluster-runtime engaging as many (hack/bench/mcrcost, a module of
# its own on the controller-runtime it needs); then one
# member floods a controller ten times the others' rate, and the quiet
# members' p99 latency is reported against a run without the flood, with
# the queue fair across members and without, and on multicluster-runtime
# (BenchmarkFlood); then one of
# four members' API servers is stopped and started again, and the others'
# p99 latency before and during, and the time to notice it and to rejoin,
# are reported (BenchmarkMemberOutage); and what a member's writers add,
# and a skipped apply's time against a sent one's (BenchmarkMemberWriters); and a
# review's cost on a member's path (BenchmarkMemberWebhook).
.PHONY: bench-fleet
bench-fleet: envtest ## Measure what each engaged member of a fleet costs, at 10, 100 and 1,000 members, the quiet members' latency under one member's flood, the others' latency while one member's API server is down, and what a member's writers add.
	mkdir -p $(RESULTS)
	OPKIT_CACHE_MUTATION_DETECTOR=false $(GO) test -run '^$$' -bench '^Benchmark(CostPerMember|Flood|MemberOutage|MemberWriters|MemberWebhook)$$' -benchtime=1x -timeout=50m ./pkg/fleet/ \
	  | grep -E '^(Benchmark|goos|goarch|cpu)' | tee $(RESULTS)/fleet.txt

# make bench-budget runs pkg/manager's two API budget scenarios: three
# controllers (weights 1, 1, 2) flooding a budget of 100 requests a second
# while a fourth reconciles a Secret stamped every 50ms (the operator's
# rate at the server against the budget, the quiet controller's p99
# against its floor before the flood, the flooders' shares against their
# weights: BenchmarkBudgetFlood); and one workload, as a user whose
# requests a priority level of a single seat serves, rejecting the rest
# with 429, on opkit, on controller-runtime (QPS -1) and on
# controller-runtime with a client-go token bucket (20 a second, burst
# 30): writes a second, 429s and leases lost, and opkit's ratios
# (BenchmarkBudgetServerLimit). BENCH_COUNT times each.
.PHONY: bench-budget
bench-budget: envtest ## Measure the API budget: three controllers flooding beside a quiet one, and a server's priority-and-fairness limit on opkit, controller-runtime and a client-go token bucket.
	mkdir -p $(RESULTS)
	OPKIT_CACHE_MUTATION_DETECTOR=false $(GO) test -run '^$$' -bench '^BenchmarkBudget(Flood|ServerLimit)$$' -benchtime=1x -count=$(BENCH_COUNT) -timeout=30m ./pkg/manager/ \
	  | grep -E '^(Benchmark|goos|goarch|cpu)' | tee $(RESULTS)/budget.txt

# Sharding past five replicas (issue 52): the scale-out benchmark at each
# of SHARDING_REPLICAS against one replica, the slots balanced by load
# (SHARDING_FLAGS), with the objects in one namespace; five replicas with
# them in namespaces of skewed sizes, after two warm-up changes of every
# object (loads measured in the first are skewed by the count
# assignment's uneven load on the API server; the second measures them
# again on balanced slots), at the SDK's default half-life (SKEWED_FLAGS,
# after SHARDING_FLAGS: the later flag wins), whose meter weighs a burst's
# reconciles more alike than a short one does; then the capacity under
# the objective (p99 queue ≤ 1s, reconcile ≤ 5s) of CAPACITY_REPLICAS.
SHARDING_REPLICAS ?= 2 3 4 5 6 7 8
SHARDING_FLAGS ?= -balance-half-life 15s
SKEWED_FLAGS ?= -balance-half-life 1m
CAPACITY_REPLICAS ?= 1,2,3,4,5,6,7,8
.PHONY: bench-sharding
bench-sharding: envtest ## Measure sharding from 2 to 8 replicas (uniform keys), at 5 with skewed keys, and the capacity under a latency objective of 1–8 replicas (about an hour on two cores).
	mkdir -p $(RESULTS)/sharding
	for n in $(SHARDING_REPLICAS); do \
	  $(GO) -C hack/bench run ./scaleout -rounds 1 -replicas $$n -fill 20000 -out $(RESULTS)/sharding/uniform-$$n $(SHARDING_FLAGS) $(SCALEOUT_FLAGS) || exit 1; \
	done | tee $(RESULTS)/sharding/throughput.txt
	$(GO) -C hack/bench run ./scaleout -rounds 1 -replicas 5 -skewed -warmup 2 -fill 20000 -out $(RESULTS)/sharding/skewed-5 $(SHARDING_FLAGS) $(SKEWED_FLAGS) $(SCALEOUT_FLAGS) | tee $(RESULTS)/sharding/skewed.txt
	$(GO) -C hack/bench run ./scaleout -capacity $(CAPACITY_REPLICAS) -probes 6 -window 10s -out $(RESULTS)/sharding $(SHARDING_FLAGS) $(SCALEOUT_FLAGS) | tee $(RESULTS)/sharding/capacity.txt

.PHONY: bench-memory
bench-memory: envtest ## Run opkit's Mirror and controller-runtime's two (Secrets cached, ConfigMaps only) under a real memory limit among OBJECTS (60000) objects of each of MEMORY_SHAPES (realistic small); bisect the smallest limit each survives, and its speed there (root).
	mkdir -p $(RESULTS)/memory
	set -o pipefail; for shape in $(MEMORY_SHAPES); do \
	  BENCH_QUICK=$(BENCH_QUICK) $(GO) -C hack/bench run ./e2e -out $(RESULTS)/memory/$$shape -scenarios memory -warmup=false \
	    -memory-objects $(OBJECTS) -memory-shape $$shape $(MEMORY_FLAGS) | tee $(RESULTS)/memory-$$shape.txt || exit 1; \
	done
	for shape in $(MEMORY_SHAPES); do cat $(RESULTS)/memory-$$shape.txt; echo; done > $(RESULTS)/memory.txt

# make test-leader-freeze freezes the leader of two replicas past its lease
# and thaws it, LEADER_FREEZE_RUNS times on opkit and as many on
# controller-runtime (hack/bench/crmirror) in alternation, and prints a
# table: how often and for how long each old leader went on reconciling
# and writing after the new one began (test/sharding's
# TestFrozenLeaderStopsActing; OPKIT_LEADER_FREEZE_RUNS turns the
# comparison on). opkit's overlaps fail it; controller-runtime's are only
# reported. 'make test' runs the opkit scenario once.
LEADER_FREEZE_RUNS ?= 10

.PHONY: test-leader-freeze
test-leader-freeze: envtest ## Freeze the leader of two replicas past its lease on opkit and on controller-runtime, LEADER_FREEZE_RUNS (10) times each, and compare how long each old leader still acts.
	OPKIT_LEADER_FREEZE_RUNS=$(LEADER_FREEZE_RUNS) $(TEST_ENV) $(GO) test -count=1 -timeout=60m -v -run '^TestFrozenLeaderStopsActing$$' ./test/sharding/

# make test-outage-compare runs the sample operator and controller-runtime's
# Mirror (hack/bench/crmirror), each as two processes with leader election
# at their default lease timings, through four faults: kube-apiserver
# stopped for 60 s and etcd frozen for 30 s after a load, a minute of load
# that saturates clients limited to 5 requests a second, and SIGTERM of the
# leader under load. It prints a table: processes that exited, the time to
# the first reconcile or write and to convergence, relists, and whether
# the leader lost its Lease (test/faults' TestOutageCompare;
# OPKIT_OUTAGE_COMPARE turns it on). opkit breaking a promise fails it;
# controller-runtime's figures are only reported.

.PHONY: test-outage-compare
test-outage-compare: envtest ## Run opkit and controller-runtime through an API server outage, an etcd freeze, a saturated client and a SIGTERM of the leader, and print a table of both (about ten minutes).
	OPKIT_OUTAGE_COMPARE=1 $(TEST_ENV) $(GO) test -count=1 -timeout=60m -v -run '^TestOutageCompare$$' ./test/faults/

# make test-next tries the next Kubernetes libraries (hack/test-next.sh) in
# a copy of the module, never in the checkout: with Go NEXT_TOOLCHAIN
# (go1.27.4) it gets k8s.io/client-go, apimachinery, api and
# apiextensions-apiserver at NEXT_VERSION (v0.38.0-beta.0), tidies, builds,
# vets and runs the unit tests that need no control plane, then prints which
# steps passed and, for a failed one, the module versions the proxy refused
# or the compile errors left. Logs in bin/test-next/. Not part of make test.
NEXT_VERSION ?= v0.38.0-beta.0

.PHONY: test-next
test-next: ## Build, vet and unit-test a copy of the module against client-go NEXT_VERSION (v0.38.0-beta.0) with Go 1.27; print what the proxy refused or what fails to compile.
	NEXT_VERSION=$(NEXT_VERSION) hack/test-next.sh

# make image builds the operator's OCI image without Docker (hack/image):
# an OCI layout in bin/image/oci and a tarball, bin/image/sample-operator.tar,
# for docker load, kind load image-archive or ctr import. IMAGE_PUSH=
# registry/repository:tag pushes it too, with docker login's credentials.
# IMAGE_TAG names it in the tarball and the layout (default: IMAGE_PUSH, else
# ghcr.io/opkit-dev/sample-operator:latest, config/manager's image).
# SOURCE_DATE_EPOCH sets its timestamps (default: the epoch), so the same
# commit gives the same digest.
IMAGE_PUSH ?=
IMAGE_TAG  ?=

.PHONY: image
image: ## Build the sample operator's container image into bin/image/ without Docker; IMAGE_PUSH=registry/repo:tag pushes it.
	IMAGE_PUSH=$(IMAGE_PUSH) $(GO) -C hack/image run . -out $(BIN)/image -tag "$(IMAGE_TAG)"

##@ Build dependencies

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kubectl into the directory every project shares (once per machine; about fifteen minutes cold).
	@$(GO) run ./cmd/opkit envtest >/dev/null

# envtest-pins copies every version's pins, which hack/envtest-pin.sh
# <version> writes, into the opkit binary's embedded copy.
.PHONY: envtest-pins
envtest-pins: ## Copy the control planes' pins (hack/tools/envtest/<version>) into the opkit binary's embedded copy.
	rm -rf internal/envtest/pins && mkdir -p internal/envtest/pins
	for d in hack/tools/envtest/*/; do v="$$(basename "$$d")"; mkdir -p internal/envtest/pins/$$v; \
	  cp "$$d/go.mod" internal/envtest/pins/$$v/go.mod.txt; cp "$$d/go.sum" internal/envtest/pins/$$v/go.sum.txt; done

.PHONY: tools
tools: $(STATICCHECK) $(CONTROLLER_GEN) $(PROMTOOL) ## Build the pinned developer tools into bin/.

$(STATICCHECK): $(TOOLS)/go.mod $(TOOLS)/go.sum
	cd $(TOOLS) && $(GO) build -o $@ honnef.co/go/tools/cmd/staticcheck

$(CONTROLLER_GEN): $(TOOLS)/go.mod $(TOOLS)/go.sum
	cd $(TOOLS) && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# promtool has a module of its own: its dependencies are many, and
# hack/tools/go.mod is copied into every project opkit scaffolds. A cold
# build takes minutes.
$(PROMTOOL): $(PROMTOOL_MOD)/go.mod $(PROMTOOL_MOD)/go.sum
	cd $(PROMTOOL_MOD) && $(GO) build -tags remove_all_sd -o $@ github.com/prometheus/prometheus/cmd/promtool

.PHONY: clean
clean: ## Remove bin/ except the control plane (bin/k8s), which is slow to rebuild.
	find $(BIN) -mindepth 1 -maxdepth 1 ! -name k8s -exec rm -rf {} + 2>/dev/null || true
