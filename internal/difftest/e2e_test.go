package difftest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// toolAnswer is what dig or kdig printed, parsed.
type toolAnswer struct {
	status string
	flags  []string
	answer []dns.RR
	raw    string
}

// parseToolOutput extracts status, header flags and the answer section
// from the default output format of dig and kdig, which agree on these
// up to punctuation.
func parseToolOutput(out string) (toolAnswer, error) {
	// dig: ";; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 1"
	// kdig: ";; ->>HEADER<<- opcode: QUERY; status: NOERROR; id: 1"
	statusRE := regexp.MustCompile(`->>HEADER<<- opcode: [A-Z]+[,;] status: ([A-Z]+)`)
	// dig: ";; flags: qr aa; QUERY: 1, ..."; kdig: ";; Flags: qr aa; QUERY: 1; ..."
	flagsRE := regexp.MustCompile(`(?m)^;; [Ff]lags:([a-z ]*);`)
	a := toolAnswer{raw: out}
	m := statusRE.FindStringSubmatch(out)
	if m == nil {
		return a, fmt.Errorf("no header line in output")
	}
	a.status = m[1]
	f := flagsRE.FindStringSubmatch(out)
	if f == nil {
		return a, fmt.Errorf("no flags line in output")
	}
	a.flags = strings.Fields(f[1])
	sc := bufio.NewScanner(strings.NewReader(out))
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ";; ANSWER SECTION:"):
			in = true
		case in && (strings.TrimSpace(line) == "" || strings.HasPrefix(line, ";;")):
			in = false
		case in:
			rr, err := dns.NewRR(line)
			if err != nil {
				return a, fmt.Errorf("answer line %q: %w", line, err)
			}
			if rr != nil {
				a.answer = append(a.answer, rr)
			}
		}
	}
	return a, nil
}

// runTool runs dig or kdig against addr and parses what it prints.
func runTool(t *testing.T, tool, path, addr, name, qtype string, opts []string) toolAnswer {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	// +ignore so a truncated UDP answer is shown as it is rather than
	// silently retried over TCP. Three tries of three seconds, as a
	// resolver would, so that a datagram lost or a server stalled on a
	// loaded machine does not fail the test.
	args := []string{"@" + host, "-p", port, "+norecurse", "+ignore", "+time=3", "+tries=3"}
	if tool == "kdig" {
		args = []string{"@" + host, "-p", port, "+norecurse", "+ignore", "+time=3", "+retry=2"}
	}
	args = append(append(args, opts...), name, qtype)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	a, err := parseToolOutput(string(out))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return a
}

// e2eCase is one query with the answer both tools must show.
type e2eCase struct {
	name, qtype string
	// opts are extra tool options shared by dig and kdig.
	opts   []string
	status string
	aa, tc bool
	// answer lists the expected answer records as "owner TYPE rdata",
	// compared as a set with owners lowercased; nil means empty.
	answer []string
	// ttl, when set, is the TTL every answer record must carry.
	ttl uint32
	// udpOnly and tcpOnly restrict the case to one transport.
	udpOnly, tcpOnly bool
}

func e2eCases() []e2eCase {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("many.example.test. A 192.0.2.%d", i+1)
	}
	var bigtxt []string
	for i := 1; i <= 8; i++ {
		bigtxt = append(bigtxt, fmt.Sprintf(`bigtxt.example.test. TXT "record %02d: padding text so that the RRset grows beyond the 512-octet limit of RFC 1035 UDP"`, i))
	}
	return []e2eCase{
		{name: "www.example.test.", qtype: "A", status: "NOERROR", aa: true, answer: []string{"www.example.test. A 192.0.2.80"}},
		{name: "WwW.ExAmPlE.tEsT.", qtype: "AAAA", status: "NOERROR", aa: true, answer: []string{"www.example.test. AAAA 2001:db8::80"}},
		{name: "nothere.example.test.", qtype: "A", status: "NXDOMAIN", aa: true},
		{name: "www.example.test.", qtype: "MX", status: "NOERROR", aa: true},
		{name: "alias3.example.test.", qtype: "A", status: "NOERROR", aa: true, answer: []string{
			"alias3.example.test. CNAME alias2.example.test.", "alias2.example.test. CNAME alias.example.test.",
			"alias.example.test. CNAME www.example.test.", "www.example.test. A 192.0.2.80"}},
		{name: "www.sub.example.test.", qtype: "A", status: "NOERROR", aa: false},
		{name: "example.com.", qtype: "A", status: "REFUSED", aa: false},
		{name: "foo.wild.example.test.", qtype: "TXT", status: "NOERROR", aa: true, answer: []string{`foo.wild.example.test. TXT "wildcard"`}},
		{name: "y.ent.wild.example.test.", qtype: "A", status: "NXDOMAIN", aa: true},
		{name: "www.child.example.test.", qtype: "A", status: "NOERROR", aa: true, answer: []string{"www.child.example.test. A 192.0.2.211"}},
		{name: "a.dnout.example.test.", qtype: "A", status: "NOERROR", aa: true, answer: []string{
			"dnout.example.test. DNAME example.net.", "a.dnout.example.test. CNAME a.example.net."}},
		{name: "host5.gen.test.", qtype: "A", status: "NOERROR", aa: true, ttl: 300, answer: []string{"host5.gen.test. A 198.51.100.5"}},
		{name: "inc.gen.test.", qtype: "TXT", status: "NOERROR", aa: true, answer: []string{`inc.gen.test. TXT "included"`}},
		{name: "many.example.test.", qtype: "A", opts: []string{"+tcp"}, status: "NOERROR", aa: true, answer: many, tcpOnly: true},
		{name: "bigtxt.example.test.", qtype: "TXT", opts: []string{"+noedns"}, status: "NOERROR", aa: true, tc: true, udpOnly: true},
		{name: "bigtxt.example.test.", qtype: "TXT", opts: []string{"+tcp"}, status: "NOERROR", aa: true, answer: bigtxt, tcpOnly: true},
	}
}

// check compares a tool's answer with the case's expectation.
func (c e2eCase) check(a toolAnswer) error {
	var problems []string
	if a.status != c.status {
		problems = append(problems, fmt.Sprintf("status %s, want %s", a.status, c.status))
	}
	if got := slices.Contains(a.flags, "aa"); got != c.aa {
		problems = append(problems, fmt.Sprintf("aa=%v, want %v", got, c.aa))
	}
	if got := slices.Contains(a.flags, "tc"); got != c.tc {
		problems = append(problems, fmt.Sprintf("tc=%v, want %v", got, c.tc))
	}
	if !c.tc {
		var got []string
		for _, rr := range a.answer {
			h := rr.Header()
			got = append(got, fmt.Sprintf("%s %s %s", strings.ToLower(h.Name), typeString(h.Rrtype), rdataString(rr)))
			if c.ttl != 0 && h.Ttl != c.ttl {
				problems = append(problems, fmt.Sprintf("TTL %d on %s, want %d", h.Ttl, rr, c.ttl))
			}
		}
		var want []string
		for _, s := range c.answer {
			rr, err := dns.NewRR(strings.Replace(s, " ", " IN ", 1))
			if err != nil {
				return fmt.Errorf("bad expectation %q: %w", s, err)
			}
			h := rr.Header()
			want = append(want, fmt.Sprintf("%s %s %s", strings.ToLower(h.Name), typeString(h.Rrtype), rdataString(rr)))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("answer\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// TestToolsEndToEnd queries Tern with dig and kdig over UDP and TCP and
// checks what they print. The same cases run against Knot first, which
// shows that the expectations (and the output parser) are right.
func TestToolsEndToEnd(t *testing.T) {
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{"dig": needTool(t, "dig"), "kdig": needTool(t, "kdig")}
	servers := []func(testing.TB, []*Zone) *server{startKnot, startTern}
	for _, start := range servers {
		s := start(t, zones)
		t.Run(s.name, func(t *testing.T) {
			for _, tool := range []string{"dig", "kdig"} {
				for _, c := range e2eCases() {
					for _, transport := range []string{"udp", "tcp"} {
						if c.udpOnly && transport == "tcp" || c.tcpOnly && transport == "udp" {
							continue
						}
						opts := slices.Clone(c.opts)
						if transport == "tcp" && !slices.Contains(opts, "+tcp") {
							opts = append(opts, "+tcp")
						}
						a := runTool(t, tool, tools[tool], s.addr, c.name, c.qtype, opts)
						if err := c.check(a); err != nil {
							t.Errorf("%s %s %s %s over %s: %v\n%s", tool, strings.Join(opts, " "), c.name, c.qtype, transport, err, a.raw)
						}
					}
				}
			}
		})
	}
}

// TestToolsIPv6 serves on 127.0.0.1 and [::1] at once and queries the
// IPv6 address with dig and kdig over UDP and TCP.
func TestToolsIPv6(t *testing.T) {
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{"dig": needTool(t, "dig"), "kdig": needTool(t, "kdig")}
	port, err := freePortOn("::1")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	addr6 := net.JoinHostPort("::1", fmt.Sprint(port))
	startTernExtra(t, zones, "--listen", addr6)
	c := e2eCase{name: "www.example.test.", qtype: "AAAA", status: "NOERROR", aa: true, answer: []string{"www.example.test. AAAA 2001:db8::80"}}
	for _, tool := range []string{"dig", "kdig"} {
		for _, opts := range [][]string{nil, {"+tcp"}} {
			a := runTool(t, tool, tools[tool], addr6, c.name, c.qtype, opts)
			if err := c.check(a); err != nil {
				t.Errorf("%s %v @%s: %v\n%s", tool, opts, addr6, err, a.raw)
			}
		}
	}
}
