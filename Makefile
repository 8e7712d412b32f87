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

.PHONY: all build demo test vet unit check-build clean fuzz

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
	if grep -q 'failpoint-toolexec\]' $$scratch.log; then status=1; echo "failpoint-toolexec failed to rewrite markers" >&2; fi; \
	rm -rf $$scratch $$scratch.log; exit $$status
	@$(BIN)/chaoskit version | grep -q 'fault injection: yes' || { echo "bin/chaoskit has inert failpoint markers" >&2; exit 1; }

demo: build
	$(BIN)/chaoskit run scenarios/ --report-dir out

vet:
	$(GO) vet ./...

unit: build
	@mkdir -p $(CURDIR)/out/test-artifacts
	CHAOSKIT_BIN=$(BIN)/chaoskit $(GO) test -race -count=1 -artifacts -outputdir $(CURDIR)/out/test-artifacts ./...

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
