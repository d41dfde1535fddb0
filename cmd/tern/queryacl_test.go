package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestQueryACLServe: tern serve with a zone whose [[acl]] has the action
// query answers the clients it lists (over UDP, through the batched
// sockets and their response cache, and TCP) and refuses the others; a
// zone without one answers everyone. Clients are 127.0.0.171 (allowed)
// and 127.0.0.172 (not).
func TestQueryACLServe(t *testing.T) {
	dir := t.TempDir()
	for _, origin := range []string{"closed.test", "open.test"} {
		os.WriteFile(filepath.Join(dir, origin+".zone"), []byte("$ORIGIN "+origin+".\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.80\n"), 0o644)
	}
	cfg := filepath.Join(dir, "tern.toml")
	os.WriteFile(cfg, []byte(`[server]
listen = ["127.0.0.1:0"]
workers = 1
[[acl]]
name = "lan"
address = ["127.0.0.171", "192.0.2.0/24"]
action = ["query"]
[[zone]]
origin = "closed.test"
file = "closed.test.zone"
acl = ["lan"]
[[zone]]
origin = "open.test"
file = "open.test.zone"
`), 0o644)
	addr := serve(t, "-c", cfg)
	for _, tc := range []struct {
		from, qname string
		rcode       int
	}{
		{"127.0.0.171", "www.closed.test.", dns.RcodeSuccess},
		{"127.0.0.172", "www.closed.test.", dns.RcodeRefused},
		{"127.0.0.172", "www.open.test.", dns.RcodeSuccess},
	} {
		for _, netw := range []string{"udp", "tcp"} {
			var local net.Addr = &net.UDPAddr{IP: net.ParseIP(tc.from)}
			if netw == "tcp" {
				local = &net.TCPAddr{IP: net.ParseIP(tc.from)}
			}
			c := &dns.Client{Net: netw, Dialer: &net.Dialer{LocalAddr: local, Timeout: 3 * time.Second}}
			// Three times: a repeated question is answered from the
			// UDP worker's response cache once seen twice.
			for range 3 {
				m := new(dns.Msg)
				m.SetQuestion(tc.qname, dns.TypeA)
				var r *dns.Msg
				var err error
				for try := 0; try < 3; try++ {
					if r, _, err = c.Exchange(m, addr); err == nil {
						break
					}
				}
				if err != nil {
					t.Fatalf("%s %s from %s: %v", netw, tc.qname, tc.from, err)
				}
				if r.Rcode != tc.rcode {
					t.Errorf("%s %s from %s: rcode %s, want %s", netw, tc.qname, tc.from, dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
				}
			}
		}
	}
}
