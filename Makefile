# Every entry point of skillrun. `make help` lists them.
SHELL := /bin/bash
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2

TAGS := seccomp netgo osusergo
# A static binary: nothing of the host's libraries needs to be in the
# sandbox for skillrun's own shim. libseccomp.a ships with libseccomp-dev.
STATIC_LDFLAGS := -linkmode external -extldflags "-static"
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: help deps build demo test test-integration lint cross fuzz fuzz-long bench seccomp-golden clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

deps: ## install the build dependencies if missing (root on Debian/Ubuntu)
	@scripts/provision.sh

# Built in bin/.build and installed by copy: the page cache a freshly
# linked file leaves behind is in large folios, and every process running
# it would map ~10 MiB more of it (see BENCHMARKS.md, Scale).
build: deps ## build bin/skillrun (cgo, -tags seccomp, static) and bin/skillrun-shim (pure Go, static)
	CGO_ENABLED=1 $(GO) build -tags "$(TAGS)" -ldflags '$(STATIC_LDFLAGS)' -o bin/.build/skillrun ./cmd/skillrun
	CGO_ENABLED=0 $(GO) build -o bin/.build/skillrun-shim ./cmd/skillrun-shim
	install -m 0755 bin/.build/skillrun bin/.build/skillrun-shim bin/
	rm -rf bin/.build

demo: build ## the main job: a real skill through the real sandbox and broker (state in a temp dir)
	./bin/skillrun doctor
	./bin/skillrun validate examples/skills/hello
	@root=$$(mktemp -d -t skillrun-demo.XXXXXX); set -x; \
	./bin/skillrun --root $$root trust examples/skills/hello && \
	./bin/skillrun --root $$root exec examples/skills/hello; rc=$$?; \
	{ set +x; } 2>/dev/null; rm -rf $$root; exit $$rc

test: deps ## everything CI runs: unit tests with -race, and the root-only integration tests when root
	CGO_ENABLED=1 $(GO) test -tags "$(TAGS)" -race -count=1 ./...
	@if [ "$$(id -u)" -eq 0 ]; then $(MAKE) --no-print-directory test-integration; \
	else echo "test: not root: skipping the integration tests (they need root to build sandboxes)"; fi

test-integration: deps ## the integration tests that need root and Linux
	CGO_ENABLED=1 $(GO) test -tags "$(TAGS) integration" -count=1 -v ./integration/...

lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags "$(TAGS)" ./...
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck -tags "$(TAGS)" ./...

cross: ## build and vet for macOS (rlimit-only fallback)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

fuzz: ## run every fuzz target for FUZZTIME (default 10s)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -tags "$(TAGS)" -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -tags "$(TAGS)" -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; done

fuzz-long: ## run every fuzz target for 5 minutes (FUZZTIME=5m)
	$(MAKE) --no-print-directory fuzz FUZZTIME=$${FUZZTIME_LONG:-5m}

bench: deps ## run the benchmarks and write BENCHMARKS.md (as root: also cold start vs runc/bwrap, tool calls, scale)
	scripts/bench.sh $(BENCHTIME)

seccomp-golden: ## regenerate the golden files of the compiled seccomp filter
	$(GO) test -tags "$(TAGS)" ./seccomp -run '^TestGolden$$' -update -count=1

clean: ## remove build output
	rm -rf bin
