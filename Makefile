# Tern: build, test and benchmark.
#   make test          installs what the tests need (Debian packages) and runs every test
#   make bench         runs the dnsperf harness beside NSD, Knot, BIND and PowerDNS, Tern with metrics on and off (bench/metrics.sh), and the
#                      resolver beside Unbound and PowerDNS Recursor (QUICK=1: < 10 min)

GO       ?= go
PKGS     := knot nsd knot-dnsutils bind9-dnsutils dnsperf ldnsutils bind9-utils unbound bind9 python3-certbot-dns-rfc2136 chromium systemd
# The binaries those packages provide, checked before installing anything.
# (unbound: the resolver internal/hierarchy compares Tern's with; the
# tests start their own on 127.0.0.39, whatever the package's service does;
# bind9: named, the primary TestBINDPrimary follows, started on 127.0.0.1
# with a kernel-picked port, whatever the package's service does;
# python3-certbot-dns-rfc2136: certbot's RFC 2136 client, which
# TestCertbotPlugin runs against Tern; chromium: the headless browser
# TestStatusPage loads the metrics listener's status page in; systemd:
# systemd-analyze, which TestSystemdUnit runs on dist/systemd.)
BINS     := knotd knotc nsd kdig dig dnsperf ldns-verify-zone dnssec-verify unbound named certbot chromium systemd-analyze dnstap-read

.PHONY: all build test deps vet bench fuzz clean

all: build

build:
	$(GO) build -o tern ./cmd/tern

deps:
	@missing=""; for b in $(BINS); do command -v $$b >/dev/null 2>&1 || [ -x /usr/sbin/$$b ] || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing test dependencies (missing:$$missing): $(PKGS)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		log=$$(mktemp); \
		if ! { apt-get update -qq && apt-get install -y -qq $(PKGS); } >"$$log" 2>&1; then \
			cat "$$log"; rm -f "$$log"; echo "installing test dependencies failed"; exit 1; \
		fi; \
		rm -f "$$log"; \
	fi

vet:
	@unformatted=$$(gofmt -l cmd internal bench 2>/dev/null); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@$(GO) vet ./...

# Every test, with the race detector; fuzz targets run their seed corpora.
# TERN_REQUIRE_PEERS makes tests that need knotd, nsd, dig or kdig fail
# instead of skipping when those are missing. The tests that skip under
# -race (allocation counts sync.Pool spoils, the type-check for other
# systems and the portable UDP loop's run, which gain nothing from it and
# cost 45 s with it) then run without it.
NORACE   := TestTCPAnswersAllocateNothing|TestDeferredUDPAllocatesNothing|TestTCPSendAllocatesNothing|TestBuildsElsewhere|TestPortableUDP
test: deps vet
	PATH="$$PATH:/usr/sbin" TERN_REQUIRE_PEERS=1 $(GO) test -race -count=1 -timeout 14m ./...
	$(GO) test -count=1 -timeout 5m -run '^($(NORACE))$$' ./internal/server
	$(GO) test -count=1 -timeout 5m -run '^TestExchangeAllocs$$' ./internal/upstream
	$(GO) test -count=1 -timeout 5m -run '^TestDeferredAllocs$$' ./internal/recursor

# A short coverage-guided run of each fuzz target (not part of make test).
fuzz:
	$(GO) test ./internal/wire -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./internal/zone -run '^$$' -fuzz FuzzCompile -fuzztime 30s
	$(GO) test ./internal/zone -run '^$$' -fuzz FuzzFastReader -fuzztime 30s
	$(GO) test ./internal/auth -run '^$$' -fuzz FuzzAnswer -fuzztime 30s
	$(GO) test ./internal/config -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./internal/upstream -run '^$$' -fuzz FuzzValidate -fuzztime 30s
	$(GO) test ./internal/upstream -run '^$$' -fuzz FuzzTCP -fuzztime 30s
	$(GO) test ./internal/resolve -run '^$$' -fuzz FuzzResolve -fuzztime 30s
	$(GO) test ./internal/recursor -run '^$$' -fuzz FuzzAnswer -fuzztime 30s
	$(GO) test ./internal/validator -run '^$$' -fuzz FuzzValidate -fuzztime 30s
	$(GO) test ./internal/wire -run '^$$' -fuzz FuzzCompression -fuzztime 30s
	$(GO) test ./internal/wire -run '^$$' -fuzz FuzzTTLOffsets -fuzztime 30s
	$(GO) test ./internal/dnssec -run '^$$' -fuzz FuzzSignZone -fuzztime 30s
	$(GO) test ./internal/perf -run '^$$' -fuzz FuzzQueryFile -fuzztime 30s
	$(GO) test ./internal/tsig -run '^$$' -fuzz FuzzVerify -fuzztime 30s
	$(GO) test ./internal/wire -run '^$$' -fuzz FuzzAppendRecord -fuzztime 30s
	$(GO) test ./internal/secondary -run '^$$' -fuzz FuzzTransferReader -fuzztime 30s
	$(GO) test ./internal/catalog -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./internal/journal -run '^$$' -fuzz FuzzOpen -fuzztime 30s
	$(GO) test ./internal/zone -run '^$$' -fuzz FuzzCompare -fuzztime 30s
	$(GO) test ./internal/update -run '^$$' -fuzz FuzzApply -fuzztime 30s
	$(GO) test ./internal/control -run '^$$' -fuzz FuzzAnswer -fuzztime 30s
	$(GO) test ./internal/trustanchor -run '^$$' -fuzz FuzzRead -fuzztime 30s

# The serving harness, then offline signing timed beside dnssec-signzone
# and ldns-signzone, then zone transfers out (to kdig) and in (from a Knot
# primary) beside Knot's (1,000,000 records; 100,000 with QUICK=1).
bench:
	QUICK=$(QUICK) bash bench/run.sh
	QUICK=$(QUICK) bash bench/metrics.sh
	bash bench/sign/bench-sign.sh $(if $(QUICK),100000,1000000) | tee bench/out/signing.txt
	bash bench/xfr/bench-xfr.sh $(if $(QUICK),100000,1000000) | tee bench/out/transfer.txt
	DURATION=$(if $(QUICK),5,10) bash bench/manyzones/bench-manyzones.sh $(if $(QUICK),10000,100000) | tee bench/out/manyzones.txt
	bash bench/lowrate/bench-lowrate.sh 10000 | tee bench/out/lowrate.txt

clean:
	rm -rf tern bench/out
