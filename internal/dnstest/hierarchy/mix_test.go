package hierarchy_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/recursor"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/zone"
)

// The mix hierarchy: the bench's res-mix shape (bench/cmd/benchtool
// resgen) scaled down, on this file's block of loopback addresses,
// 127.0.1.152-154: the root on the first delegates alpha. and bravo. to
// the second, which delegates mixZones second-level zones domN.alpha. to
// the third, half with glue, half to a hosting provider's name server
// ns1.dnsK.bravo. (no glue: resolved first, a sub-resolution); one host
// in ten is a CNAME to another zone's www.
const (
	mixZones     = 400
	mixHosts     = 50
	mixProviders = 8
)

// mixAddrs are the mix hierarchy's servers: root, TLDs, second level.
var mixAddrs = []netip.Addr{
	netip.AddrFrom4([4]byte{127, 0, 1, 152}),
	netip.AddrFrom4([4]byte{127, 0, 1, 153}),
	netip.AddrFrom4([4]byte{127, 0, 1, 154}),
}

// mixZoneTexts returns the mix hierarchy's zones in zone-file form, by
// the index in mixAddrs of the server that serves them.
func mixZoneTexts() map[int][]string {
	a := func(i int) string { return mixAddrs[i].String() }
	root := []string{". SOA a.root. h.root. 1 7200 3600 1209600 300", ". NS a.root.", "a.root. A " + a(0)}
	tld := map[string][]string{}
	for _, t := range []string{"alpha.", "bravo."} {
		root = append(root, t+" NS ns.nic."+t, "ns.nic."+t+" A "+a(1))
		tld[t] = []string{t + " SOA ns.nic." + t + " h.nic." + t + " 1 7200 3600 1209600 300", t + " NS ns.nic." + t, "ns.nic." + t + " A " + a(1)}
	}
	texts := map[int][]string{0: {strings.Join(root, "\n")}}
	var slds []string
	for k := range mixProviders {
		z := fmt.Sprintf("dns%d.bravo.", k)
		tld["bravo."] = append(tld["bravo."], z+" NS ns1."+z, "ns1."+z+" A "+a(2))
		slds = append(slds, strings.Join([]string{z + " SOA ns1." + z + " h." + z + " 1 7200 3600 1209600 300", z + " NS ns1." + z, "ns1." + z + " A " + a(2)}, "\n"))
	}
	for n := range mixZones {
		z := fmt.Sprintf("dom%03d.alpha.", n)
		ns := "ns1." + z
		if n%2 == 1 {
			ns = fmt.Sprintf("ns1.dns%d.bravo.", n%mixProviders)
		}
		tld["alpha."] = append(tld["alpha."], z+" NS "+ns)
		lines := []string{z + " SOA " + ns + " h." + z + " 1 7200 3600 1209600 300", z + " NS " + ns}
		if n%2 == 0 {
			tld["alpha."] = append(tld["alpha."], ns+" A "+a(2))
			lines = append(lines, ns+" A "+a(2))
		}
		for h := range mixHosts {
			host := mixHost(h) + "." + z
			if h%10 == 9 {
				lines = append(lines, fmt.Sprintf("%s CNAME www.dom%03d.alpha.", host, (n+1)%mixZones))
			} else {
				lines = append(lines, fmt.Sprintf("%s A 10.%d.%d.%d", host, n/256, n%256, h), fmt.Sprintf("%s AAAA 2001:db8::%x:%x", host, n, h))
			}
		}
		slds = append(slds, strings.Join(lines, "\n"))
	}
	texts[1] = []string{strings.Join(tld["alpha."], "\n"), strings.Join(tld["bravo."], "\n")}
	texts[2] = slds
	return texts
}

// mixHost is the first label of a zone's h-th host.
func mixHost(h int) string {
	if h == 0 {
		return "www"
	}
	return fmt.Sprintf("h%02d", h)
}

// startMix serves the mix hierarchy on a port free on all three
// addresses and returns the port.
func startMix(t testing.TB) uint16 {
	port := hierarchy.ChoosePort(t, mixAddrs)
	for i, texts := range mixZoneTexts() {
		var zs []*zone.Zone
		for _, text := range texts {
			origin := strings.Fields(text)[0]
			zn, err := zone.Read(strings.NewReader("$TTL 86400\n"+text), origin, origin)
			if err != nil {
				t.Fatal(err)
			}
			zs = append(zs, zn)
		}
		srv, err := hierarchy.Serve([]string{netip.AddrPortFrom(mixAddrs[i], port).String()}, zs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	return port
}

// BenchmarkMix replays, per op, a mix of questions over the mix
// hierarchy through a served resolver (recursor, mesh, resolve, cache)
// started cold, as the bench's res-mix does: Zipf-distributed names, A
// and AAAA, 100 queries in flight from one client. It reports, averaged
// over the ops, the process's CPU per query (its authorities' and
// client's too), and the goroutines and their stacks' memory the replay
// left (the memory classes' heap/stacks, which a GC shrinks).
func BenchmarkMix(b *testing.B) {
	port := startMix(b)
	const queries, inflight = 80000, 100
	var cpu, stacks, goroutines, answered float64
	for b.Loop() {
		b.StopTimer()
		hints := []resolve.Server{{Name: "a.root.", Addrs: mixAddrs[:1]}}
		r := resolve.New(&upstream.Client{}, resolve.Options{Hints: hints, Port: port, Cache: cache.New(cache.Options{})})
		rec := recursor.New(recursor.Options{Resolver: r, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, ResponseCache: 32768, MaxPerClient: 1024})
		lo := netip.MustParseAddr("127.0.0.1")
		listen := netip.AddrPortFrom(lo, uint16(dnstest.FreePort(b, lo.String())))
		srv := server.New(server.Config{Listen: []string{listen.String()}, Workers: 1}, rec)
		if err := srv.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		stacks0, goroutines0, cpu0 := mixStacks(), runtime.NumGoroutine(), mixCPU()
		b.StartTimer()
		answered += float64(mixReplay(b, listen.String(), queries, inflight))
		b.StopTimer()
		cpu += float64(mixCPU()-cpu0) / 1000 / queries
		stacks += float64(mixStacks()-stacks0) / 1024
		goroutines += float64(runtime.NumGoroutine() - goroutines0)
		srv.Close()
		rec.Close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(cpu/n, "cpu-us/query")
	b.ReportMetric(stacks/n, "stack-KiB")
	b.ReportMetric(goroutines/n, "goroutines")
	b.ReportMetric(answered/n, "answered")
}

// mixCPU is the process's CPU time so far, user and system, in ns.
func mixCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// mixStacks is the memory of goroutine stacks.
func mixStacks() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// mixReplay sends n Zipf-drawn questions to addr with at most inflight
// unanswered, and returns how many were answered; it stops when none has
// come for two seconds (the rest lost).
func mixReplay(b *testing.B, addr string, n, inflight int) int {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, 1.0001, 1, mixZones*mixHosts-1)
	tokens := make(chan struct{}, inflight)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		defer close(stop)
		buf := make([]byte, 4096)
		got := 0
		for got < n {
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, err := conn.Read(buf)
			if err != nil {
				break
			}
			if k >= 12 {
				got++
				<-tokens
			}
		}
		done <- got
	}()
	for i := range n {
		select {
		case tokens <- struct{}{}:
		case <-stop:
			return <-done
		}
		q := int(z.Uint64())
		qt := dns.TypeA
		if rng.IntN(4) == 0 {
			qt = dns.TypeAAAA
		}
		m := new(dns.Msg).SetQuestion(fmt.Sprintf("%s.dom%03d.alpha.", mixHost(q%mixHosts), q/mixHosts), qt)
		m.SetEdns0(1232, false)
		pkt, _ := m.Pack()
		binary.BigEndian.PutUint16(pkt, uint16(i))
		if _, err := conn.Write(pkt); err != nil {
			b.Fatal(err)
		}
	}
	return <-done
}
