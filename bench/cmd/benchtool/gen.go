package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// rng is splitmix64: a tiny generator whose output depends only on the seed,
// so the data sets are identical on every machine and Go version.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// shuffle permutes lines in place (Fisher-Yates).
func (r *rng) shuffle(lines []string) {
	for i := len(lines) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		lines[i], lines[j] = lines[j], lines[i]
	}
}

// Zone origins used by the harness (and by run.sh: keep in sync).
const (
	smallOrigin = "bench.test."
	bigOrigin   = "big.test."
	largeOrigin = "large.test."
)

// runGen writes every zone and query file the harness needs into -out:
//
//	small.zone, small-success.txt, small-nxdomain.txt, small-soa.txt
//	root.zone (copy), root-referral.txt, root-nxdomain.txt
//	big.zone, big-success.txt
//	large.zone, large-tcp.txt, large-glue-tcp.txt
func runGen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	root := fs.String("root", "", "the signed root zone file")
	big := fs.Int("big", 1000000, "number of A records in the big zone (0: skip)")
	fs.Parse(args)
	if *out == "" || *root == "" {
		return fmt.Errorf("-out and -root are required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := genSmall(*out); err != nil {
		return err
	}
	if err := genRoot(*out, *root); err != nil {
		return err
	}
	if err := genLarge(*out); err != nil {
		return err
	}
	if *big > 0 {
		if err := genBig(*out, *big); err != nil {
			return err
		}
	}
	return nil
}

func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// genSmall writes a zone of about 60 names, each with A and AAAA, some with
// MX and TXT, and three query files: existing names with the types they
// have (mixed A/AAAA/MX/TXT), nonexistent names (NXDOMAIN), and the apex SOA.
func genSmall(out string) error {
	r := rng(1)
	zone := []string{
		"$ORIGIN " + smallOrigin,
		"$TTL 3600",
		"@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 3600",
		"@ IN NS ns1",
		"@ IN NS ns2",
		"@ IN MX 10 mail",
		"@ IN TXT \"v=spf1 mx -all\"",
		"@ IN A 192.0.2.1",
		"@ IN AAAA 2001:db8::1",
	}
	var queries []string
	queries = append(queries, smallOrigin+" MX", smallOrigin+" TXT", smallOrigin+" A", smallOrigin+" AAAA")

	names := []string{"ns1", "ns2", "www", "mail", "mx1", "mx2", "ftp", "api", "cdn", "vpn"}
	for i := 1; len(names) < 60; i++ {
		names = append(names, fmt.Sprintf("host%02d", i))
	}
	for i, n := range names {
		fq := n + "." + smallOrigin
		zone = append(zone,
			fmt.Sprintf("%s IN A 192.0.2.%d", n, 10+i),
			fmt.Sprintf("%s IN AAAA 2001:db8::%x", n, 0x10+i))
		queries = append(queries, fq+" A", fq+" AAAA")
		if i%3 == 0 {
			zone = append(zone, fmt.Sprintf("%s IN MX %d mail", n, 10*(1+i%4)))
			queries = append(queries, fq+" MX")
		}
		if i%2 == 0 {
			zone = append(zone, fmt.Sprintf("%s IN TXT \"bench record %d for %s\"", n, i, n))
			queries = append(queries, fq+" TXT")
		}
	}
	// Repeat the mix so the file is long enough to be drawn from evenly.
	var success []string
	for k := 0; k < 20; k++ {
		success = append(success, queries...)
	}
	r.shuffle(success)

	types := []string{"A", "AAAA", "MX", "TXT"}
	nx := make([]string, 0, 1000)
	for i := 0; i < 1000; i++ {
		nx = append(nx, fmt.Sprintf("nx%04d-%x.%s %s", i, r.next()&0xffff, smallOrigin, types[r.intn(len(types))]))
	}

	if err := writeLines(filepath.Join(out, "small.zone"), zone); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, "small-success.txt"), success); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, "small-nxdomain.txt"), nx); err != nil {
		return err
	}
	return writeLines(filepath.Join(out, "small-soa.txt"), []string{smallOrigin + " SOA"})
}

// genRoot copies the root zone and derives two query files from its
// delegations: "www.<tld>. A" for every TLD (referrals) and names under
// TLDs that do not exist (NXDOMAIN).
func genRoot(out, rootPath string) error {
	data, err := os.ReadFile(rootPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "root.zone"), data, 0o644); err != nil {
		return err
	}
	tlds := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] == "." || strings.HasPrefix(f[0], ";") {
			continue
		}
		owner := strings.ToLower(f[0])
		if strings.Count(owner, ".") != 1 || !strings.HasSuffix(owner, ".") {
			continue
		}
		for _, t := range f[1:4] {
			if t == "NS" {
				tlds[owner] = true
			}
		}
	}
	if len(tlds) < 100 {
		return fmt.Errorf("%s: only %d delegated TLDs found, is it the root zone?", rootPath, len(tlds))
	}
	list := make([]string, 0, len(tlds))
	for t := range tlds {
		list = append(list, t)
	}
	sort.Strings(list)
	r := rng(2)
	ref := make([]string, 0, len(list))
	for _, t := range list {
		ref = append(ref, "www."+t+" A")
	}
	r.shuffle(ref)

	const letters = "abcdefghijklmnopqrstuvwxyz"
	nx := make([]string, 0, 2000)
	for len(nx) < 2000 {
		n := 5 + r.intn(8)
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[r.intn(len(letters))]
		}
		tld := string(b) + "."
		if tlds[tld] {
			continue
		}
		nx = append(nx, "www."+tld+" A")
	}
	if err := writeLines(filepath.Join(out, "root-referral.txt"), ref); err != nil {
		return err
	}
	return writeLines(filepath.Join(out, "root-nxdomain.txt"), nx)
}

// genBig writes a zone with n A records (n0.big.test. ... ) and 200,000
// queries for random existing names.
func genBig(out string, n int) error {
	f, err := os.Create(filepath.Join(out, "big.zone"))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "$ORIGIN %s\n$TTL 3600\n", bigOrigin)
	fmt.Fprintf(w, "@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 3600\n@ IN NS ns1\nns1 IN A 192.0.2.1\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "n%d IN A 10.%d.%d.%d\n", i, (i>>16)&255, (i>>8)&255, i&255)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	r := rng(3)
	q := make([]string, 200000)
	for i := range q {
		q[i] = fmt.Sprintf("n%d.%s A", r.intn(n), bigOrigin)
	}
	return writeLines(filepath.Join(out, "big-success.txt"), q)
}

// genLarge writes a zone with two names of 1000 MX records each and a
// query file for each; over TCP both answers are about 64 KiB, thousands
// of names to compress:
//   - many.large.test.: exchanges outside the zone, each with a label of
//     its own (~50 bytes) under one suffix, so no additional section;
//   - glue.large.test.: exchanges in the zone, each with an A and an AAAA
//     record: the MX set and then as many addresses as fit (internal/auth's
//     BenchmarkLargeAnswer answers the same question).
func genLarge(out string) error {
	zone := []string{
		"$ORIGIN " + largeOrigin,
		"$TTL 3600",
		"@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 3600",
		"@ IN NS ns1",
		"ns1 IN A 192.0.2.1",
	}
	r := rng(4)
	for i := 0; i < 1000; i++ {
		zone = append(zone,
			fmt.Sprintf("many IN MX %d mx%04d-%016x%016x%08x.mail.example.", i, i, r.next(), r.next(), uint32(r.next())),
			fmt.Sprintf("glue IN MX %d mx%04d", i, i),
			fmt.Sprintf("mx%04d IN A 10.0.%d.%d", i, i>>8, i&255),
			fmt.Sprintf("mx%04d IN AAAA 2001:db8::%x", i, i))
	}
	if err := writeLines(filepath.Join(out, "large.zone"), zone); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, "large-tcp.txt"), []string{"many." + largeOrigin + " MX"}); err != nil {
		return err
	}
	return writeLines(filepath.Join(out, "large-glue-tcp.txt"), []string{"glue." + largeOrigin + " MX"})
}
