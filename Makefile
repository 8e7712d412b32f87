# chaoskit. `make demo` runs the bundled scenarios; `make test` is what CI runs.
# Every tool is pinned in go.mod (tool lines) and built here; nothing is
# assumed installed but Go.

GO       ?= go
BIN      := $(CURDIR)/bin
CACHE    := $(CURDIR)/.cache
# Fault-injection builds get their own build cache and scratch dir: the Go
# build cache cannot tell rewritten objects from normal ones (see faultbuild).
FI_CACHE := $(CACHE)/faultbuild
# The CLI's tag (vX.Y.Z; the nested modules' tags, inject/vX.Y.Z and the
# like, are not its versions): docs/modules.md, "Versions".
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
FUZZTIME ?= 20s
# A new input is minimised for at most this long, so that slow targets
# (the scenario loader) spend FUZZTIME fuzzing.
FUZZMINIMIZETIME ?= 5s
GOFUZZTIME ?= 20s
# Packages go-fuzz-build must leave uninstrumented: its rewriting breaks
# their compiler directives.
GOFUZZ_PRESERVE ?= crypto/internal/fips140/bigmod
FUZZ_DEMO_DIR ?= $(CURDIR)/out/fuzz-demo
ACK_RUNS ?= 20

.PHONY: all build fi-build demo demo-deps test vet unit truth check-build clean fuzz fuzz-ci gofuzz fuzz-demo ack-p99 proto bench-harness

all: build

$(BIN)/failpoint-toolexec: go.mod go.sum
	@mkdir -p $(BIN)
	$(GO) build -o $@ github.com/pingcap/failpoint/failpoint-toolexec

$(BIN)/go-fuzz $(BIN)/go-fuzz-build: $(BIN)/%: go.mod go.sum
	@mkdir -p $(BIN)
	$(GO) build -o $@ github.com/dvyukov/go-fuzz/$*

# The generated gRPC code is committed; this regenerates it with protoc
# (Debian's protobuf-compiler) and the plugins pinned in go.mod's tool lines.
PROTOS := demo/recommend/recommendpb/recommend.proto
proto:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	$(GO) build -o $(BIN)/protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc
	protoc --plugin=protoc-gen-go=$(BIN)/protoc-gen-go --plugin=protoc-gen-go-grpc=$(BIN)/protoc-gen-go-grpc \
		--go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative $(PROTOS)

# bin/chaoskit is a plain go build, as go install makes it: the demo's fault
# points are switches (inject.Switch), live in any build. A service of the
# user's with pingcap/failpoint markers is built with `chaoskit build` (the
# rewriting build, faultbuild); check-build proves that build's cache apart.
build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/chaoskit ./cmd/chaoskit

# bin/chaoskit-fi is chaoskit built with its own failpoint markers rewritten
# (failpoint-toolexec, its own build cache and scratch dir): check-build's
# subject, for faultbuild's cache separation.
fi-build: $(BIN)/failpoint-toolexec
	@mkdir -p $(FI_CACHE)/gocache
	@scratch=$$(mktemp -d $(FI_CACHE)/tmp-XXXXXX); \
	GOCACHE=$(FI_CACHE)/gocache TMPDIR=$$scratch \
		$(GO) build -toolexec=$(BIN)/failpoint-toolexec -ldflags '$(LDFLAGS)' -o $(BIN)/chaoskit-fi ./cmd/chaoskit >$$scratch.log 2>&1; \
	status=$$?; cat $$scratch.log; \
	if grep '\[failpoint-toolexec\]' $$scratch.log | grep -qv 'failed to run command'; then status=1; echo "failpoint-toolexec failed to rewrite markers" >&2; fi; \
	rm -rf $$scratch $$scratch.log; exit $$status
	@$(BIN)/chaoskit-fi version | grep -q 'failpoint markers: rewritten' || { echo "bin/chaoskit-fi has inert failpoint markers" >&2; exit 1; }

# Every report: the table here, report.json, junit.xml, report.md and
# out/report.html, the page README shows.
DEMO_FORMATS := table,json,junit,markdown,html
demo: build
	$(BIN)/chaoskit run scenarios/ --report-dir out --format $(DEMO_FORMATS)

# The scenarios on real dependencies (scenarios/deps): chaoskit starts
# PostgreSQL and Redis itself (apt-get install postgresql redis-server), on
# free loopback ports. make test runs them, and their broken variants, in
# the end-to-end package (TestDepsScenariosAndTheirBrokenVariants).
demo-deps: build
	$(BIN)/chaoskit run scenarios/deps/ --report-dir out/deps --format $(DEMO_FORMATS)

# inject, breakerimpl and breakerimpl's adapters are modules of their own
# (what services import; docs/modules.md), which the main module's ./...
# does not reach: every target that covers the main module's packages
# covers theirs too, module by module.
LIB_MODULES := inject $(patsubst %/go.mod,%,$(shell find breakerimpl -name go.mod -not -path '*/testdata/*' | sort))
BREAKER_MODULES := $(filter breakerimpl%,$(LIB_MODULES))
vet:
	$(GO) vet ./...
	@set -e; for m in $(LIB_MODULES) bench; do echo "== vet $$m"; (cd $$m && $(GO) vet ./...); done

# The end-to-end package runs alone, after the others: its contracts judge
# latencies, which CPU-heavy unit tests running beside it would distort.
E2E := ./cmd/chaoskit
# Packages whose tests drive load at an in-process demo and judge its
# real-time promises (100ms timeouts, a switch on its read latency): they run
# one after the other (-p 1), after the end-to-end package, as it runs alone,
# and without the race detector, which slows the demo several times: its
# SQLite reads alone then trip its degrade switch (fuzz/inproc skips under
# -race). The race detector covers chaostest in the normal pass.
FI_TESTS := ./fuzz/inproc ./chaostest
unit: build $(BIN)/failpoint-toolexec
	@mkdir -p $(CURDIR)/out/test-artifacts
	@set -e; for m in $(BREAKER_MODULES); do (cd $$m && $(GO) test -count=1 ./...); done
	$(GO) test -count=1 ./internal/breakerit/...
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_TOOLEXEC=$(BIN)/failpoint-toolexec $(GO) test -race -count=1 -artifacts -outputdir $(CURDIR)/out/test-artifacts $$($(GO) list ./... | grep -v -e '/cmd/chaoskit$$' -e '/fuzz/inproc$$' -e '/internal/breakerit/')
	cd inject && $(GO) test -race -count=1 ./...
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_TOOLEXEC=$(BIN)/failpoint-toolexec $(GO) test -race -count=1 -timeout 20m -artifacts -outputdir $(CURDIR)/out/test-artifacts $(E2E)
	CHAOSKIT_BIN=$(BIN)/chaoskit $(GO) test -p 1 -count=1 $(FI_TESTS)

# Proves normal and fault-injection builds never swap objects: a plain build
# made right after the fault-injection one has inert markers, and a
# fault-injection build made right after a plain one has live markers.
check-build: fi-build
	$(GO) build -o $(BIN)/chaoskit-plain ./cmd/chaoskit
	@$(BIN)/chaoskit-plain version -o json | grep -q '"markers_rewritten": false' || { echo "plain build picked up rewritten objects" >&2; exit 1; }
	@$(MAKE) --no-print-directory fi-build
	@echo "check-build: plain build inert, fault-injection build live"
	@rm -f $(BIN)/chaoskit-plain $(BIN)/chaoskit-fi

test: vet check-build unit fuzz-ci truth

# The truth corpus (testdata/truth/README.md): small services, each with a
# scenario and the right verdict of every contract written down for the
# correct service and its broken variants. Prints "N of N verdicts right".
TRUTH_PARALLEL ?= 2
truth: build
	$(GO) run ./internal/truthrun -chaoskit $(BIN)/chaoskit -parallel $(TRUTH_PARALLEL)

clean:
	rm -rf $(BIN) out

# Native Go fuzzing: every Fuzz* target of every package (of both modules),
# FUZZTIME each; FUZZ_EXCLUDE, an extended regexp, leaves packages out.
#
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime runs out, with no failing input
# (golang/go#75804, fixed in Go 1.27). A run that fails so and writes no new
# input to testdata/fuzz/FuzzX is reported and not counted as a failure;
# any other failure, or a new failing input, is.
fuzz:
	@set -e; mkdir -p $(CACHE); scratch=$$(mktemp -d $(CACHE)/tmp-XXXXXX); trap 'rm -rf $$scratch' EXIT; \
	for dir in $$(grep -rl --include='*_test.go' --exclude-dir=testdata --exclude-dir=bench --exclude-dir=.cache --exclude-dir=out '^func Fuzz[A-Za-z0-9_]*(f \*testing.F)' . | xargs -r -n1 dirname | sort -u); do \
		pkg=$$(cd $$dir && $(GO) list .); \
		if [ -n "$(FUZZ_EXCLUDE)" ] && echo "$$pkg" | grep -qE '$(FUZZ_EXCLUDE)'; then echo "== $$pkg: left out (FUZZ_EXCLUDE)"; continue; fi; \
		for f in $$(cd $$dir && $(GO) test -list '^Fuzz' . | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f ($(FUZZTIME))"; \
			before=$$(ls $$dir/testdata/fuzz/$$f 2>/dev/null | sort); \
			status=0; (cd $$dir && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) .) >$$scratch/log 2>&1 || status=$$?; \
			cat $$scratch/log; \
			if [ $$status -ne 0 ]; then \
				after=$$(ls $$dir/testdata/fuzz/$$f 2>/dev/null | sort); \
				if [ "$$before" = "$$after" ] && grep -q '^    context deadline exceeded$$' $$scratch/log && [ $$(grep -c '^    ' $$scratch/log) -eq 1 ]; then \
					echo "== $$f: the fuzzing coordinator's deadline race at the end of -fuzztime (golang/go#75804); no failing input: not a failure"; \
				else exit $$status; fi; \
			fi; \
		done; \
	done

# What make test (and so CI) runs of the fuzzing: every native target and
# every go-fuzz twin for CI_FUZZTIME each, so that each submission compiles
# and exercises them. FuzzShopInProcess (fuzz/inproc) is left out here: one
# of its inputs is a whole run of about 5 s, and its seeds already run in
# unit's in-process pass.
CI_FUZZTIME ?= 3s
fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(CI_FUZZTIME) FUZZMINIMIZETIME=1s FUZZ_EXCLUDE='/fuzz/inproc$$'
	@$(MAKE) --no-print-directory gofuzz GOFUZZTIME=$(CI_FUZZTIME)

# go-fuzz: every package with a file built only with the gofuzz tag (the
# go-fuzz twins of the native targets) is built with go-fuzz-build, and each
# of its Fuzz functions runs for GOFUZZTIME from the package's
# testdata/fuzz/corpus/FUNC, or testdata/fuzz/corpus when the package has
# one target. Work directories (corpus, crashers) stay in
# .cache/gofuzz. go-fuzz-build uses no build cache and takes about a minute
# a package, so its archives are kept in GOFUZZ_CACHE under a digest of the
# Go version, go.sum and every Go file of the tree, and reused by any
# checkout of the same sources (a fresh clone in CI among them); the last
# three digests are kept.
GOFUZZ_CACHE ?= $${XDG_CACHE_HOME:-$$HOME/.cache}/chaoskit/gofuzz
gofuzz: $(BIN)/go-fuzz $(BIN)/go-fuzz-build
	@set -e; dirs=$$(grep -rlx --include='*.go' --exclude-dir=testdata --exclude-dir=bench --exclude-dir=.cache '//go:build gofuzz' . | xargs -r grep -l '^func Fuzz' | xargs -r -n1 dirname | sort -u); \
	[ -n "$$dirs" ] || { echo "no go-fuzz targets (files with //go:build gofuzz)" >&2; exit 1; }; \
	digest=$$( { $(GO) version; echo '$(GOFUZZ_PRESERVE)'; cat go.sum; find . \( -path ./.cache -o -path ./out -o -path ./bin \) -prune -o -name '*.go' -type f -print | LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-20); \
	zips=$(GOFUZZ_CACHE)/$$digest; mkdir -p $$zips; touch $$zips; \
	ls -1dt $(GOFUZZ_CACHE)/*/ | tail -n +4 | xargs -r rm -rf; \
	for dir in $$dirs; do \
		pkg=$$(cd $$dir && $(GO) list .); work=$(CACHE)/gofuzz/$$(echo $$pkg | tr / _); mkdir -p $$work; \
		zip=$$zips/$$(echo $$pkg | tr / _).zip; \
		if [ -f $$zip ]; then \
			echo "== go-fuzz-build $$pkg: reused ($$zip)"; cp $$zip $$work/fuzz.zip; \
		else \
			echo "== go-fuzz-build $$pkg"; \
			$(BIN)/go-fuzz-build -preserve $(GOFUZZ_PRESERVE) -o $$work/fuzz.zip $$pkg; \
			cp $$work/fuzz.zip $$zip.tmp$$$$ && mv $$zip.tmp$$$$ $$zip; \
		fi; \
		for fn in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*(data \[\]byte) int' $$(grep -lx '//go:build gofuzz' $$dir/*.go) | sed 's/^func \([A-Za-z0-9_]*\).*/\1/'); do \
			fw=$$work/$$fn; mkdir -p $$fw/corpus; \
			if [ -d $$dir/testdata/fuzz/corpus/$$fn ]; then cp $$dir/testdata/fuzz/corpus/$$fn/* $$fw/corpus/; \
			elif [ -d $$dir/testdata/fuzz/corpus ]; then cp $$dir/testdata/fuzz/corpus/* $$fw/corpus/; fi; \
			echo "== go-fuzz $$pkg $$fn ($(GOFUZZTIME))"; \
			status=0; timeout -s INT $(GOFUZZTIME) $(BIN)/go-fuzz -bin $$work/fuzz.zip -func $$fn -workdir $$fw >$$fw/log 2>&1 || status=$$?; \
			grep 'execs:' $$fw/log | tail -1; \
			if [ $$status -ne 0 ] && [ $$status -ne 124 ]; then cat $$fw/log >&2; exit 1; fi; \
			if [ -n "$$(ls $$fw/crashers 2>/dev/null)" ]; then echo "go-fuzz found crashers in $$fw/crashers" >&2; exit 1; fi; \
		done; \
	done

# The acceptance run of fault-schedule fuzzing against the demo: the
# planted bug is found with seed 1 within 120 s, shrunk to at most 2 phases
# and 1 fault, and its reproducer fails chaoskit run; the correct demo
# passes the same search; explore prints the fault × invariant matrix.
fuzz-demo: build
	@rm -rf $(FUZZ_DEMO_DIR); set -e; dir=$(FUZZ_DEMO_DIR); \
	status=0; $(BIN)/chaoskit fuzz --bundled shop --var bug=stale-after-recovery --seed 1 --budget 120s --report-dir $$dir/bug || status=$$?; \
	[ $$status -eq 1 ] || { echo "fuzz did not find the planted bug (exit $$status)" >&2; exit 1; }; \
	shape=$$($(BIN)/chaoskit validate $$dir/bug/reproducer.yaml | sed -n 's/.*(\([0-9]*\) phases, \([0-9]*\) faults.*/\1 \2/p'); \
	set -- $$shape; [ "$$1" -le 2 ] && [ "$$2" -le 1 ] || { echo "reproducer has $$1 phases and $$2 faults" >&2; exit 1; }; \
	status=0; $(BIN)/chaoskit run $$dir/bug/reproducer.yaml --report-dir $$dir/replay || status=$$?; \
	[ $$status -eq 1 ] || { echo "the reproducer's run exited $$status, not 1" >&2; exit 1; }; \
	$(BIN)/chaoskit fuzz --bundled shop --seed 1 --budget 120s --report-dir $$dir/correct; \
	$(BIN)/chaoskit explore --bundled shop --report-dir $$dir/explore; \
	echo "fuzz-demo: bug found and shrunk to $$1 phases and $$2 fault(s), reproducer fails; correct demo passes; explore done"

# The time from the moment each fault switch was due until the control
# endpoint acknowledged it, over ACK_RUNS runs of the bundled scenarios:
# count, 99th percentile (nearest rank) and maximum.
# The demo diffed against itself DIFF_TRIES times (3 runs a side each),
# then again with one core kept busy: every diff must exit 0, noise is no
# regression (docs/diff.md). About 10 minutes; not part of make test.
DIFF_TRIES ?= 10
diff-noise: build
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_DIFF_NOISE=$(DIFF_TRIES) $(GO) test -count=1 -timeout 30m -run 'TestDiffSelfIsQuiet' -v ./cmd/chaoskit
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_DIFF_NOISE=$(DIFF_TRIES) CHAOSKIT_DIFF_BUSY=1 $(GO) test -count=1 -timeout 30m -run 'TestDiffSelfIsQuiet' -v ./cmd/chaoskit

ack-p99: build
	@rm -rf $(CACHE)/ack; for i in $$(seq $(ACK_RUNS)); do \
		$(BIN)/chaoskit run --bundled --report-dir $(CACHE)/ack/$$i >/dev/null || exit 1; \
	done; \
	cat $(CACHE)/ack/*/*/timeline.jsonl | grep -o '"ack_ns":[0-9]*' | cut -d: -f2 | sort -n | \
		awk '{a[NR]=$$1} END {i=int((99*NR+99)/100); printf "fault acks over %d runs: n=%d p99=%.2fms max=%.2fms\n", $(ACK_RUNS), NR, a[i]/1e6, a[NR]/1e6}'

# The harness's own cost at scale (BENCHMARKS.md, "The harness at scale"):
# raw vegeta (the CLI of the pinned module) and chaoskit side by side at
# HARNESS_RATE against a trivial loopback server, HARNESS_RUNS alternating
# rounds of HARNESS_DURATION each, the median of each figure printed.
HARNESS_RATE ?= 10000
HARNESS_DURATION ?= 10s
HARNESS_RUNS ?= 3
bench-harness: build
	$(GO) build -o $(BIN)/vegeta github.com/tsenart/vegeta/v12
	$(GO) build -o $(BIN)/harnessbench ./internal/harnessbench
	$(BIN)/harnessbench -chaoskit $(BIN)/chaoskit -vegeta $(BIN)/vegeta -rate $(HARNESS_RATE) -duration $(HARNESS_DURATION) -runs $(HARNESS_RUNS)
