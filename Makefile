# Kura — make targets. `make run` starts kurad with its embedded defaults;
# `make test` is what CI runs (.ci/run).

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN     := bin
FUZZTIME ?= 30s

.PHONY: all run build test check vet fmt-check cross fuzz fuzz-ci bench bench-quick clean

all: build

## run: start kurad on 127.0.0.1:7700 (NATS 127.0.0.1:4222) with data in ./data
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/kurad --data-dir data

## build: kurad and kura for this machine into bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kurad ./cmd/kurad
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kura ./cmd/kura

## test: vet, the race-enabled test suite, and the Raspberry Pi cross builds
test: vet
	$(GO) test -race -timeout 20m ./...
	$(MAKE) cross

## check: formatting gate plus everything in test
check: fmt-check test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## cross: CGO-free builds for linux/arm64 and linux/arm (GOARM=7), as for a Pi
cross:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-arm64/kurad ./cmd/kurad
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-arm64/kura ./cmd/kura
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-armv7/kurad ./cmd/kurad
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-armv7/kura ./cmd/kura

# Every Fuzz target in the module, as "package:Target" pairs.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' . | while read f; do \
	d=$$(dirname $$f); for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do echo "$$d:$$t"; done; done)

## fuzz: run every fuzz target for FUZZTIME (default 30s)
fuzz:
	@set -e; for ft in $(FUZZ_TARGETS); do d=$${ft%%:*}; t=$${ft##*:}; \
		echo "fuzz $$d $$t ($(FUZZTIME))"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$d; done

## bench: the benchmark program; prints a table and writes bench/results.json
bench:
	$(GO) run ./bench/cmd/kurabench -out bench/results.json

bench-quick:
	$(GO) run ./bench/cmd/kurabench -quick

clean:
	rm -rf $(BIN)
