package dnstap

import (
	"bytes"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"google.golang.org/protobuf/proto"
)

// TestSocket: with a socket, the Tap connects to a collector, does the
// bidirectional Frame Streams handshake (READY, ACCEPT, START), and
// sends each record as its query and response messages, in order,
// with the client's address and port, the transport and the bytes;
// Close ends the stream (STOP, FINISH).
func TestSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "dnstap") // short: a socket path is < 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	frames, stop, err := Collect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	tap, err := Open(Options{Socket: path, Identity: "test", Version: "v"})
	if err != nil {
		t.Fatal(err)
	}
	r := tap.NewRing()
	client := netip.MustParseAddrPort("[2001:db8::7]:5353")
	server := netip.MustParseAddrPort("[2001:db8::53]:53")
	const n = 10
	for i := range n {
		q, a := []byte{0, byte(i), 1}, []byte{0, byte(i), 0x81, 0x80}
		if !r.Record(Auth, client, server, i%2 == 1, q, a, time.Now().UnixNano()) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if !r.Record(Client, client, netip.AddrPort{}, false, []byte{1}, nil, 1) {
		t.Fatal("dropped")
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	var msgs []*dt.Message
	for f := range frames {
		var d dt.Dnstap
		if err := proto.Unmarshal(f, &d); err != nil {
			t.Fatal(err)
		}
		if string(d.GetIdentity()) != "test" || string(d.GetVersion()) != "v" {
			t.Errorf("identity %q version %q", d.GetIdentity(), d.GetVersion())
		}
		msgs = append(msgs, d.GetMessage())
	}
	if len(msgs) != 2*n+1 {
		t.Fatalf("%d messages, want %d", len(msgs), 2*n+1)
	}
	for i := range n {
		q, a := msgs[2*i], msgs[2*i+1]
		proto := dt.SocketProtocol_UDP
		if i%2 == 1 {
			proto = dt.SocketProtocol_TCP
		}
		if q.GetType() != dt.Message_AUTH_QUERY || a.GetType() != dt.Message_AUTH_RESPONSE {
			t.Errorf("record %d: types %v, %v", i, q.GetType(), a.GetType())
		}
		for _, m := range []*dt.Message{q, a} {
			if m.GetSocketFamily() != dt.SocketFamily_INET6 || m.GetSocketProtocol() != proto ||
				!bytes.Equal(m.GetQueryAddress(), client.Addr().AsSlice()) || m.GetQueryPort() != 5353 ||
				!bytes.Equal(m.GetResponseAddress(), server.Addr().AsSlice()) || m.GetResponsePort() != 53 {
				t.Errorf("record %d: %v", i, m)
			}
		}
		if !bytes.Equal(q.GetQueryMessage(), []byte{0, byte(i), 1}) || !bytes.Equal(a.GetResponseMessage(), []byte{0, byte(i), 0x81, 0x80}) {
			t.Errorf("record %d: query %x response %x", i, q.GetQueryMessage(), a.GetResponseMessage())
		}
	}
	if last := msgs[2*n]; last.GetType() != dt.Message_CLIENT_QUERY || last.GetQueryTimeNsec() != 1 || last.ResponsePort != nil || last.ResponseAddress != nil {
		t.Errorf("a Client record without an answer: %v", last)
	}
}

// TestRingFull: a full ring drops, counts and never blocks; a record
// larger than a slot is dropped too; draining makes room again.
func TestRingFull(t *testing.T) {
	tap, err := Open(Options{File: filepath.Join(t.TempDir(), "f"), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := tap.NewRing()
	a := netip.MustParseAddrPort("192.0.2.1:53")
	for i := range ringSlots {
		if !r.Record(Auth, a, a, false, []byte{byte(i)}, []byte{1}, 0) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if r.Record(Auth, a, a, false, []byte{1}, nil, 0) || r.Record(Auth, a, a, false, nil, nil, 0) {
		t.Error("a full ring took a record")
	}
	tap.drain(nil)
	if !r.Record(Auth, a, a, false, []byte{1}, nil, 0) {
		t.Error("a drained ring refused a record")
	}
	if r.Record(Auth, a, a, false, make([]byte, slotBytes), []byte{1}, 0) {
		t.Error("a record larger than a slot was taken")
	}
	if got := tap.Dropped(); got != 3 {
		t.Errorf("Dropped %d, want 3", got)
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tap.Written(); got != 2*ringSlots+1 {
		t.Errorf("Written %d, want %d", got, 2*ringSlots+1)
	}
}

// TestFileVersions: a file output does not destroy the previous run's
// records: the existing file is renamed to FILE.0, FILE.0 to FILE.1 and
// so on, Versions of them kept (BIND's dnstap-output versions); with
// Versions 0 the file is truncated; an empty file is not kept.
func TestFileVersions(t *testing.T) {
	// run writes one record with query q into path, as a server run
	// would, and returns.
	run := func(t *testing.T, path string, versions int, q byte) {
		t.Helper()
		tap, err := Open(Options{File: path, Versions: versions, Identity: "t"})
		if err != nil {
			t.Fatal(err)
		}
		a := netip.MustParseAddrPort("192.0.2.1:53")
		if !tap.NewRing().Record(Auth, a, a, false, []byte{q}, nil, 1) {
			t.Fatal("dropped")
		}
		if err := tap.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// query returns the query byte of the one record of the file at
	// path, 0 when there is no such file.
	query := func(t *testing.T, path string) byte {
		t.Helper()
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return 0
		}
		ds, err := ReadFile(path)
		if err != nil || len(ds) != 1 || len(ds[0].GetMessage().GetQueryMessage()) != 1 {
			t.Fatalf("%s: %v, %d records", path, err, len(ds))
		}
		return ds[0].GetMessage().GetQueryMessage()[0]
	}
	for _, tc := range []struct {
		name     string
		versions int
		// want is the query of the records in FILE, FILE.0, FILE.1,
		// FILE.2 after runs 1, 2, 3 and 4 (0: no file).
		want [4]byte
	}{
		{"two versions", 2, [4]byte{4, 3, 2, 0}},
		{"one version", 1, [4]byte{4, 3, 0, 0}},
		{"none: truncated", 0, [4]byte{4, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tap")
			for q := byte(1); q <= 4; q++ {
				run(t, path, tc.versions, q)
			}
			got := [4]byte{query(t, path), query(t, path+".0"), query(t, path+".1"), query(t, path+".2")}
			if got != tc.want {
				t.Errorf("FILE, FILE.0, FILE.1, FILE.2 hold runs %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("cannot keep: written over, warned", func(t *testing.T) {
		// FILE.0 a non-empty directory: the previous file cannot be
		// renamed there. The tap still opens (a server still starts)
		// and says so.
		path := filepath.Join(t.TempDir(), "tap")
		run(t, path, 1, 1)
		if err := os.MkdirAll(filepath.Join(path+".0", "x"), 0o700); err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		tap, err := Open(Options{File: path, Versions: 1, Identity: "t", Log: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatalf("Open with an old file it cannot keep: %v", err)
		}
		if err := tap.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logged.String(), "written over") {
			t.Errorf("no warning logged: %q", logged.String())
		}
		if ds, err := ReadFile(path); err != nil || len(ds) != 0 {
			t.Errorf("FILE after the run: %v, %d records, want a new empty output", err, len(ds))
		}
	})
	t.Run("empty not kept", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tap")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, path, 2, 1)
		if _, err := os.Stat(path + ".0"); !os.IsNotExist(err) {
			t.Errorf("an empty file was kept as FILE.0: %v", err)
		}
	})
}
