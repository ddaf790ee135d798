# Kura — make targets. `make run` starts kurad with its embedded defaults;
# `make test` is what CI runs (.ci/run).

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN     := bin
FUZZTIME ?= 30s
FUZZTIME_CI ?= 2000x
# The race detector watches every memory access of every package built
# with -race, and turns on checkptr (checks of unsafe.Pointer conversions).
# The SQLite driver is C translated to Go, pointer arithmetic on nearly
# every line; its two halves are built differently:
# - modernc.org/sqlite, the Go side where Kura's values cross into C memory
#   and back, stays watched for races (without checkptr);
# - modernc.org/sqlite/lib (SQLite itself) and modernc.org/libc are built
#   without the race detector. Every connection is opened with
#   SQLITE_OPEN_FULLMUTEX and libc's mutexes are Go sync.Mutex (watched), so
#   a race the detector could find in there is one inside SQLite, under its
#   own locking, not one in Kura; watching it was a third of the suite's
#   time and most of the store's.
# `make test RACE=-race` watches everything.
RACE    := -race -gcflags='modernc.org/...=-d=checkptr=0' \
	-gcflags='modernc.org/sqlite/lib=-race=false' -gcflags='modernc.org/libc/...=-race=false'
# A program built with -race sleeps a second as it exits (so that other
# threads can report): a second for each of the suite's test
# binaries. The tests wait for what they need; nothing is left to report.
export GORACE ?= atexit_sleep_ms=0
# go test runs the packages in the order named, two at a time on two cores:
# the longest go first and the short ones fill in around them, instead of
# the longest (in ./...'s alphabetical order) running last and alone.
SLOW_PKGS := ./internal/api ./internal/ui ./reliability ./cmd/kura ./internal/store ./internal/daemon \
	./internal/scaleout ./internal/admission ./cmd/kurad ./internal/witness ./bench/cmd/kurabench ./internal/mcp

.PHONY: all run build test check vet fmt-check cross smoke-cross dist install fuzz fuzz-ci bench bench-quick reliability soak clean \
	test-postgres firefox-deps test-clients test-python test-typescript kurad-test console-screenshots

all: build

## run: start kurad on 127.0.0.1:7700 (NATS 127.0.0.1:4222) with data in ./data
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/kurad --data-dir data

## build: kurad and kura for this machine into bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kurad ./cmd/kurad
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kura ./cmd/kura

## test: vet, the race-enabled test suite, the API suite again on PostgreSQL,
## the Python and TypeScript clients' suites, every fuzz target briefly, and
## the Raspberry Pi cross builds smoke-tested under qemu-user. PostgreSQL
## (the Debian package's initdb and pg_ctl) and Chromium (the console's
## browser tests) are required, not skipped.
test: vet firefox-deps
	KURA_REQUIRE_POSTGRES=1 KURA_REQUIRE_CHROMIUM=1 KURA_REQUIRE_FIREFOX=1 $(GO) test $(RACE) -timeout 20m $(SLOW_PKGS) ./...
	$(MAKE) test-postgres
	$(MAKE) test-clients
	$(MAKE) fuzz-ci
	$(MAKE) smoke-cross

## firefox-deps: puppeteer-core, from the committed lock, for the console's
## check in Firefox (internal/ui TestConsole_Firefox); about 60 MB, no browser
firefox-deps:
	cd internal/ui/testdata/firefox && npm ci --no-audit --no-fund --loglevel=error

## check: formatting gate plus everything in test
check: fmt-check test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## test-postgres: the whole API suite, and every other suite that starts
## kurads (CLI, Go client, MCP, daemon, examples), against the PostgreSQL
## store (a server started by the tests in a temp dir; a database per test)
test-postgres:
	KURA_TEST_STORE=postgres KURA_REQUIRE_POSTGRES=1 $(GO) test $(RACE) -timeout 20m \
		./internal/api/ ./cmd/... ./client/... ./internal/mcp/ ./internal/daemon/ ./examples/...

## kurad-test: the kurad binary the client suites start (port 0, temp data
## dir) and the kura CLI they export sessions with. Built as the Go tests
## build them, so the build cache already holds both.
KURAD_TEST := $(abspath $(BIN))/test/kurad
KURA_TEST := $(abspath $(BIN))/test/kura
kurad-test:
	$(GO) build -o $(KURAD_TEST) ./cmd/kurad
	$(GO) build -o $(KURA_TEST) ./cmd/kura

## test-clients: the Python and TypeScript clients' own suites and their
## examples, against a real kurad
test-clients: test-python test-typescript

## test-python: clients/python with unittest (standard library only; the
## Ed25519 checks use python3-cryptography when it is installed)
test-python: kurad-test
	cd clients/python && KURAD_BIN=$(KURAD_TEST) KURA_BIN=$(KURA_TEST) python3 -m unittest discover -s tests -t . -v

## test-typescript: clients/typescript with node --test, after npm ci from the
## committed lock (TypeScript is its only, build-time, dependency)
test-typescript: kurad-test
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build && \
		KURAD_BIN=$(KURAD_TEST) KURA_BIN=$(KURA_TEST) npm test --silent

## cross: CGO-free builds for linux/arm64 and linux/arm (GOARM=7), as for a Pi
cross:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-arm64/kurad ./cmd/kurad
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-arm64/kura ./cmd/kura
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-armv7/kurad ./cmd/kurad
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/linux-armv7/kura ./cmd/kura

## smoke-cross: run the arm64 and armv7 builds under qemu-user-static: start
## kurad, write and read a record, verify a ledger, stop cleanly
smoke-cross: cross
	scripts/smoke-qemu.sh $(BIN)

## dist: release binaries for linux/amd64, linux/arm64 and linux/arm (GOARM=7)
## with the version stamped, as tarballs with SHA256SUMS in dist/
DIST := dist
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for t in amd64: arm64: arm:7; do \
		arch=$${t%%:*}; arm=$${t##*:}; name=kura-$(VERSION)-linux-$$arch$${arm:+v$$arm}; \
		mkdir -p $(DIST)/$$name; \
		for cmd in kurad kura; do \
			CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$arm $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/$$name/$$cmd ./cmd/$$cmd; \
		done; \
		cp README.md configs/kurad.env deploy/systemd/kurad.service deploy/systemd/kura.sysusers $(DIST)/$$name/; \
		tar -C $(DIST) -czf $(DIST)/$$name.tar.gz $$name; \
		echo "$(DIST)/$$name.tar.gz"; \
	done
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS

## install: lay out binaries, the systemd unit, the sysusers entry and the
## config (an existing config is kept) under DESTDIR/PREFIX; then
## systemd-sysusers && systemctl daemon-reload && systemctl enable --now kurad
PREFIX  ?= /usr/local
DESTDIR ?=
install: build
	install -D -m 0755 $(BIN)/kurad $(DESTDIR)$(PREFIX)/bin/kurad
	install -D -m 0755 $(BIN)/kura $(DESTDIR)$(PREFIX)/bin/kura
	install -D -m 0644 deploy/systemd/kurad.service $(DESTDIR)/etc/systemd/system/kurad.service
	install -D -m 0644 deploy/systemd/kura.sysusers $(DESTDIR)/usr/lib/sysusers.d/kura.conf
	@if [ -e $(DESTDIR)/etc/kura/kurad.env ]; then \
		echo "keeping existing $(DESTDIR)/etc/kura/kurad.env (the shipped one is $(DESTDIR)/etc/kura/kurad.env.dist)"; \
		install -D -m 0644 configs/kurad.env $(DESTDIR)/etc/kura/kurad.env.dist; \
	else install -D -m 0644 configs/kurad.env $(DESTDIR)/etc/kura/kurad.env; fi

# Every Fuzz target in the module, as "package:Target" pairs.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' . | while read f; do \
	d=$$(dirname $$f); for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do echo "$$d:$$t"; done; done)

## fuzz: run every fuzz target for FUZZTIME (default 30s)
fuzz:
	@set -e; for ft in $(FUZZ_TARGETS); do d=$${ft%%:*}; t=$${ft##*:}; \
		echo "fuzz $$d $$t ($(FUZZTIME))"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$d; done

## fuzz-ci: every fuzz target briefly (FUZZTIME_CI inputs, default 2000x), as
## make test does. A count, not a duration: Go 1.26's fuzz coordinator can
## fail a target with a bare "context deadline exceeded" when a duration
## ends while a worker is busy (golang/go#75804, fixed in Go 1.27), and a
## count has no deadline to race.
fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME_CI)

## bench: the benchmark program; prints a table and writes bench/results.json
bench:
	$(GO) run ./bench/cmd/kurabench -out bench/results.json

bench-quick:
	$(GO) run ./bench/cmd/kurabench -quick

## reliability: the fault-injection suite's long runs against the kurad binary
## (50 SIGKILL cycles under mixed load, disk full, NATS cut, corruption,
## hostile input); the quick cases run in make test
reliability:
	$(GO) test -tags reliability -count=1 -v -timeout 60m ./reliability/

## soak: sustained mixed load at 70% of the measured maximum on loopback
## (SOAK_DURATION, default 10m); writes the soak key of bench/results.json
soak:
	$(GO) run ./bench/cmd/kurasoak

clean:
	rm -rf $(BIN) $(DIST)

## console-screenshots: PNGs of the console's views into docs/console/, taken
## from the real page (headless Chromium) on a small seeded kurad
console-screenshots:
	KURA_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test ./internal/ui -run '^TestScreenshots$$' -count=1 -v
