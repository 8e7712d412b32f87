# chaoskit. `make demo` runs the bundled scenarios; `make test` is what CI runs.
# Every tool is pinned in go.mod (tool lines) and built here; nothing is
# assumed installed but Go.

GO       ?= go
BIN      := $(CURDIR)/bin
CACHE    := $(CURDIR)/.cache
# Fault-injection builds get their own build cache and scratch dir: the Go
# build cache cannot tell rewritten objects from normal ones (see faultbuild).
FI_CACHE := $(CACHE)/faultbuild
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
FUZZTIME ?= 20s
ACK_RUNS ?= 20

.PHONY: all build demo test vet unit check-build clean fuzz ack-p99

all: build

$(BIN)/failpoint-toolexec: go.mod go.sum
	@mkdir -p $(BIN)
	$(GO) build -o $@ github.com/pingcap/failpoint/failpoint-toolexec

# bin/chaoskit is a fault-injection build: failpoint markers rewritten at
# compile time, source tree untouched. The version check proves the markers
# are live.
build: $(BIN)/failpoint-toolexec
	@mkdir -p $(FI_CACHE)/gocache
	@scratch=$$(mktemp -d $(FI_CACHE)/tmp-XXXXXX); \
	GOCACHE=$(FI_CACHE)/gocache TMPDIR=$$scratch \
		$(GO) build -toolexec=$(BIN)/failpoint-toolexec -ldflags '$(LDFLAGS)' -o $(BIN)/chaoskit ./cmd/chaoskit >$$scratch.log 2>&1; \
	status=$$?; cat $$scratch.log; \
	if grep '\[failpoint-toolexec\]' $$scratch.log | grep -qv 'failed to run command'; then status=1; echo "failpoint-toolexec failed to rewrite markers" >&2; fi; \
	rm -rf $$scratch $$scratch.log; exit $$status
	@$(BIN)/chaoskit version | grep -q 'fault injection: yes' || { echo "bin/chaoskit has inert failpoint markers" >&2; exit 1; }

demo: build
	$(BIN)/chaoskit run scenarios/ --report-dir out

vet:
	$(GO) vet ./...

# The end-to-end package runs alone, after the others: its contracts judge
# latencies, which CPU-heavy unit tests running beside it would distort.
E2E := ./cmd/chaoskit
unit: build
	@mkdir -p $(CURDIR)/out/test-artifacts
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_TOOLEXEC=$(BIN)/failpoint-toolexec $(GO) test -race -count=1 -artifacts -outputdir $(CURDIR)/out/test-artifacts $$($(GO) list ./... | grep -v '/cmd/chaoskit$$')
	CHAOSKIT_BIN=$(BIN)/chaoskit CHAOSKIT_TOOLEXEC=$(BIN)/failpoint-toolexec $(GO) test -race -count=1 -timeout 20m -artifacts -outputdir $(CURDIR)/out/test-artifacts $(E2E)

# Proves normal and fault-injection builds never swap objects: a plain build
# made right after the fault-injection one has inert markers, and a
# fault-injection build made right after a plain one has live markers.
check-build: build
	$(GO) build -o $(BIN)/chaoskit-plain ./cmd/chaoskit
	@$(BIN)/chaoskit-plain version | grep -q 'fault injection: no' || { echo "plain build picked up rewritten objects" >&2; exit 1; }
	@$(MAKE) --no-print-directory build
	@echo "check-build: plain build inert, fault-injection build live"
	@rm -f $(BIN)/chaoskit-plain

test: vet check-build unit

clean:
	rm -rf $(BIN) out

# Native Go fuzzing: every Fuzz* target of every package, FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# The time from the moment each fault switch was due until the control
# endpoint acknowledged it, over ACK_RUNS runs of the bundled scenarios:
# count, 99th percentile (nearest rank) and maximum.
ack-p99: build
	@rm -rf $(CACHE)/ack; for i in $$(seq $(ACK_RUNS)); do \
		$(BIN)/chaoskit run --bundled --report-dir $(CACHE)/ack/$$i >/dev/null || exit 1; \
	done; \
	cat $(CACHE)/ack/*/*/timeline.jsonl | grep -o '"ack_ns":[0-9]*' | cut -d: -f2 | sort -n | \
		awk '{a[NR]=$$1} END {i=int((99*NR+99)/100); printf "fault acks over %d runs: n=%d p99=%.2fms max=%.2fms\n", $(ACK_RUNS), NR, a[i]/1e6, a[NR]/1e6}'
