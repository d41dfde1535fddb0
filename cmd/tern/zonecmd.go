package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/zone"
)

const zoneUsage = `usage: tern zone <command> [arguments]

commands:
  sign FILE --origin NAME --key-dir DIR [--nsec3 [--opt-out]] [--algorithm ecdsap256sha256|ed25519]
            [--inception T --expiration T | --validity D]   sign a zone, write it to stdout
  keys --key-dir DIR [--origin NAME]                          show keys and rollover state
  ds --key-dir DIR --origin NAME                              print the DS records to give the parent (SHA-256)
`

// runZone implements 'tern zone ...' (owned by the DNSSEC signing work).
func runZone(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, zoneUsage)
		return 2
	}
	switch args[0] {
	case "sign":
		return runZoneSign(ctx, args[1:], stdout, stderr)
	case "keys":
		return runZoneKeys(args[1:], stdout, stderr)
	case "ds":
		return runZoneDS(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, zoneUsage)
		return 0
	}
	fmt.Fprintf(stderr, "tern zone: unknown command %q\n\n%s", args[0], zoneUsage)
	return 2
}

func runZoneSign(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern zone sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	origin := fs.String("origin", "", "zone origin (required)")
	keyDir := fs.String("key-dir", "", "directory with K<zone>+<alg>+<tag> key files; missing keys are generated (required)")
	nsec3 := fs.Bool("nsec3", false, "use NSEC3 (RFC 5155; RFC 9276 parameters: 0 iterations, no salt)")
	optOut := fs.Bool("opt-out", false, "NSEC3 opt-out: leave unsigned delegations out of the chain")
	algName := fs.String("algorithm", "ecdsap256sha256", "algorithm for generated keys: ecdsap256sha256 or ed25519")
	inception := fs.String("inception", "", "signature inception (YYYYMMDDHHMMSS, RFC 3339 or Unix seconds; default now-1h)")
	expiration := fs.String("expiration", "", "signature expiration (same formats; default inception+validity)")
	validity := fs.String("validity", "30d", "signature validity (Go duration or Nd for days)")
	dnskeyTTL := fs.Uint("dnskey-ttl", 3600, "TTL of generated DNSKEY records")
	workers := fs.Int("workers", 0, "signing goroutines (default GOMAXPROCS)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file (for performance work)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 || *origin == "" || *keyDir == "" {
		fmt.Fprintln(stderr, "usage: tern zone sign FILE --origin NAME --key-dir DIR [options]")
		fs.PrintDefaults()
		return 2
	}
	if *optOut && !*nsec3 {
		fmt.Fprintln(stderr, "tern zone sign: --opt-out needs --nsec3")
		return 2
	}
	alg, err := dnssec.ParseAlgorithm(*algName)
	if err != nil {
		fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
		return 2
	}
	now := time.Now()
	opts := dnssec.Options{NSEC3: *nsec3, OptOut: *optOut, Workers: *workers}
	if opts.Validity, err = parseDuration(*validity); err != nil {
		fmt.Fprintf(stderr, "tern zone sign: --validity: %v\n", err)
		return 2
	}
	if *inception != "" {
		if opts.Inception, err = parseTime(*inception); err != nil {
			fmt.Fprintf(stderr, "tern zone sign: --inception: %v\n", err)
			return 2
		}
	}
	if *expiration != "" {
		if opts.Expiration, err = parseTime(*expiration); err != nil {
			fmt.Fprintf(stderr, "tern zone sign: --expiration: %v\n", err)
			return 2
		}
	} else if !opts.Inception.IsZero() {
		opts.Expiration = opts.Inception.Add(opts.Validity)
	}
	originName := dns.Fqdn(*origin)
	if _, ok := dns.IsDomainName(originName); !ok {
		fmt.Fprintf(stderr, "tern zone sign: bad origin %q\n", *origin)
		return 2
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if os.Getenv("GOGC") == "" {
		// Signing allocates many short-lived buffers; trading memory for
		// fewer collections saves CPU time.
		debug.SetGCPercent(200)
	}
	start := time.Now()
	recs, warnings, err := zone.LoadRecords(pos[0], originName)
	printWarnings(stderr, warnings)
	if err != nil {
		fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
		return 1
	}
	rrs := zone.RRs(recs)
	keys, created, err := signingKeys(*keyDir, originName, alg, uint32(*dnskeyTTL), now)
	if err != nil {
		fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
		return 1
	}
	if created {
		for _, k := range keys {
			fmt.Fprintf(stderr, "tern zone sign: using key %s (flags %d)\n", k.Base, k.DNSKEY.Flags)
		}
	}
	loaded := time.Now()
	bar := newProgressBar(stderr)
	if bar != nil {
		opts.Progress = bar.update
	}
	signed, st, err := dnssec.SignZoneStats(ctx, rrs, originName, keys, opts, now)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tern zone sign: %v\n", err)
		return 1
	}
	sigDone := time.Now()
	if err := writeRecords(stdout, signed, runtime.GOMAXPROCS(0)); err != nil {
		fmt.Fprintf(stderr, "tern zone sign: write: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "tern zone sign: %d records in, %d out, %d RRsets, %d signatures, %d %s; load %.2fs sign %.2fs write %.2fs\n",
		len(rrs), st.Records, st.RRsets, st.Signed, st.ChainRecords, map[bool]string{false: "NSEC", true: "NSEC3"}[*nsec3],
		loaded.Sub(start).Seconds(), sigDone.Sub(loaded).Seconds(), time.Since(sigDone).Seconds())
	return 0
}

// signingKeys returns the keys to sign with. A key directory managed by the
// automatic signer (it has a state file for the zone) is used as its state
// says at now, without advancing it; otherwise every key of the algorithm
// in the directory is used and a missing KSK or ZSK is generated.
func signingKeys(dir, origin string, alg uint8, ttl uint32, now time.Time) ([]*dnssec.Key, bool, error) {
	st, err := dnssec.LoadState(dir, origin)
	if err != nil {
		return nil, false, err
	}
	if st == nil {
		return dnssec.EnsureKeys(dir, origin, alg, ttl, now)
	}
	// Read only: a server may be managing the directory right now.
	keys, err := dnssec.PublishedKeys(dir, origin, now)
	if err != nil {
		return nil, false, err
	}
	if len(keys) == 0 {
		return nil, false, fmt.Errorf("managed key directory %s has no key published now", dir)
	}
	return keys, false, nil
}

// writeRecords writes rrs one per line in presentation format. Formatting
// is the costly part, so chunks are formatted on workers goroutines and
// written in order.
func writeRecords(w io.Writer, rrs []dns.RR, workers int) error {
	const chunk = 4096
	n := (len(rrs) + chunk - 1) / chunk
	bufs := make([]chan []byte, n)
	for i := range bufs {
		bufs[i] = make(chan []byte, 1)
	}
	var next atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	// At most 4 chunks per worker formatted ahead of the writer, so the
	// output is never held in memory as a whole.
	ahead := make(chan struct{}, 4*max(workers, 1))
	for range max(workers, 1) {
		go func() {
			for {
				select {
				case ahead <- struct{}{}:
				case <-stop:
					return
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				var b []byte
				for _, rr := range rrs[i*chunk : min((i+1)*chunk, len(rrs))] {
					b = append(b, rr.String()...)
					b = append(b, '\n')
				}
				select {
				case bufs[i] <- b:
				case <-stop:
					return
				}
			}
		}()
	}
	for i := range bufs {
		b := <-bufs[i]
		<-ahead
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// parseTime accepts YYYYMMDDHHMMSS (the RRSIG presentation format, RFC 4034
// §3.2), RFC 3339, or Unix seconds.
func parseTime(s string) (time.Time, error) {
	if len(s) == 14 {
		if t, err := time.Parse("20060102150405", s); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	return time.Time{}, fmt.Errorf("bad time %q (want YYYYMMDDHHMMSS, RFC 3339 or Unix seconds)", s)
}

// parseDuration accepts Go durations and a plain number of days ("30d").
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}

// progressBar draws signing progress on a terminal.
type progressBar struct {
	w    io.Writer
	last int
}

// newProgressBar returns a bar when w is a terminal, else nil (so logs and
// pipes get no carriage-return noise).
func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios); err != nil {
		return nil
	}
	return &progressBar{w: w, last: -1}
}

func (p *progressBar) update(done, total int) {
	if total == 0 {
		return
	}
	pct := done * 100 / total
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 40
	fill := pct * width / 100
	fmt.Fprintf(p.w, "\rsigning [%s%s] %3d%% %d/%d", strings.Repeat("#", fill), strings.Repeat(" ", width-fill), pct, done, total)
}

func (p *progressBar) finish() { fmt.Fprintln(p.w) }

func runZoneKeys(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern zone keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyDir := fs.String("key-dir", "", "key directory (required)")
	origin := fs.String("origin", "", "zone (default: every zone with keys in the directory)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return flagExit(err)
	}
	if *keyDir == "" {
		fmt.Fprintln(stderr, "usage: tern zone keys --key-dir DIR [--origin NAME]")
		return 2
	}
	if err := dnssec.WriteKeyReport(stdout, *keyDir, *origin, time.Now()); err != nil {
		fmt.Fprintf(stderr, "tern zone keys: %v\n", err)
		return 1
	}
	return 0
}

// runZoneDS implements 'tern zone ds': the DS records of the zone's
// key-signing keys, to give the parent zone's operator or registrar.
func runZoneDS(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern zone ds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyDir := fs.String("key-dir", "", "key directory (required)")
	origin := fs.String("origin", "", "zone (required)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 || *keyDir == "" || *origin == "" {
		fmt.Fprintln(stderr, "usage: tern zone ds --key-dir DIR --origin NAME")
		return 2
	}
	if _, ok := dns.IsDomainName(*origin); !ok {
		fmt.Fprintf(stderr, "tern zone ds: bad origin %q\n", *origin)
		return 2
	}
	ds, err := dnssec.ParentDS(*keyDir, *origin, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "tern zone ds: %v\n", err)
		return 1
	}
	for _, d := range ds {
		fmt.Fprintln(stdout, d.String())
	}
	return 0
}
