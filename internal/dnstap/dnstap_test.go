package dnstap

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
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
