package secondary

// Reading a zone transfer (RFC 5936 AXFR, RFC 1995 IXFR) off its TCP
// connection: the messages' records go straight into the wire form the
// zone compiler takes, names decompressed by wire.AppendRecord, TSIG
// checked over the bytes received (tsig.Stream). Neither miekg/dns's
// objects nor presentation form are on the way: they were two thirds of
// the CPU of taking a zone in.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// chunkSize is the size of the slabs records are read into: a record
// never spans two, and one decompressed is at most an owner, ten octets
// and 65,535 of RDATA.
const (
	maxRecord = 255 + 10 + 65535
	chunkSize = 1<<20 + maxRecord
)

// records collects a transfer's records.
type records struct {
	list  []zone.RR
	chunk []byte
}

// add reads the record at off of msg into r; it returns the offset after
// it.
func (r *records) add(msg []byte, off int) (int, error) {
	if cap(r.chunk)-len(r.chunk) < maxRecord {
		r.chunk = make([]byte, 0, chunkSize)
	}
	start := len(r.chunk)
	out, owner, next, err := wire.AppendRecord(r.chunk, msg, off)
	if err != nil {
		return 0, err
	}
	w := out[start:len(out):len(out)]
	r.chunk = out
	// Owners in lower case, as zone data holds them (RFC 4343).
	wire.Lower(w[:owner], w[:owner])
	r.list = append(r.list, zone.RR{Owner: w[:owner:owner], Tail: w[owner:]})
	return next, nil
}

// readTransfer asks p for origin over TCP by AXFR, or by IXFR from serial
// from when ixfr is set, and returns the answer's records in order, its
// opening and closing SOAs included, as zone data holds them (owners in
// lower case, names uncompressed). The answer ends where RFC 5936 §2.2
// and RFC 1995 §4 say (the SOA of the new serial seen again: twice in a
// whole zone, three times in differences); an IXFR answered with one SOA
// (nothing newer) is that record alone. Every message's rcode, ID and
// records are checked, and with p's key its TSIG (RFC 8945 §5.3.1).
func (s *Secondaries) readTransfer(ctx context.Context, origin string, p Primary, ixfr bool, from uint32) ([]zone.RR, error) {
	m := new(dns.Msg)
	if ixfr {
		m.SetIxfr(origin, from, ".", ".")
	} else {
		m.SetAxfr(origin)
	}
	var query []byte
	var stream *tsig.Stream
	var err error
	if p.Key != nil {
		sign(m, p)
		var mac string
		if query, mac, err = dns.TsigGenerate(m, p.Key.Secret, "", false); err != nil {
			return nil, fmt.Errorf("signing the request: %w", err)
		}
		raw, err := hex.DecodeString(mac)
		if err != nil {
			return nil, err
		}
		if stream, err = tsig.NewStream(*p.Key, raw); err != nil {
			return nil, err
		}
	} else if query, err = m.Pack(); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: s.opts.Timeout}
	conn, err := d.DialContext(ctx, "tcp", p.Addr.String())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Cancelling ctx (the zone removed, the server stopping) ends the
	// reads at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	conn.SetWriteDeadline(time.Now().Add(s.opts.Timeout))
	if _, err := conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(query)))); err != nil {
		return nil, err
	}
	if _, err := conn.Write(query); err != nil {
		return nil, err
	}
	t := transferReader{id: m.Id, origin: originWire(origin), ixfr: ixfr, from: from, stream: stream}
	br := bufio.NewReaderSize(conn, 64<<10)
	msg := make([]byte, 0xFFFF)
	for done := false; !done; {
		conn.SetReadDeadline(time.Now().Add(s.opts.Timeout))
		var n [2]byte
		if _, err := io.ReadFull(br, n[:]); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("the answer ends after %d records, before its closing SOA", len(t.recs.list))
			}
			return nil, err
		}
		size := int(binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(br, msg[:size]); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("the answer breaks off in a message: %w", err)
		}
		if done, err = t.message(msg[:size]); err != nil {
			return nil, err
		}
	}
	if stream != nil {
		if err := stream.Done(); err != nil {
			return nil, err
		}
	}
	return t.recs.list, nil
}

// originWire is origin in wire form, lower case (the configuration
// checked that it is a name).
func originWire(origin string) []byte {
	w, _ := wire.NameWire(dns.CanonicalName(origin))
	return w
}

// transferReader follows one transfer's messages.
type transferReader struct {
	id     uint16
	origin []byte
	ixfr   bool
	from   uint32
	stream *tsig.Stream
	recs   records
	// serial is the new version's serial (the first record's); soas
	// counts the SOAs of that serial met; diffs is set once the answer
	// is known to be differences (an SOA of another serial met).
	serial uint32
	soas   int
	diffs  bool
}

// message reads one message of the answer; done reports that it was the
// last.
func (t *transferReader) message(msg []byte) (done bool, err error) {
	if len(msg) < wire.HeaderLen {
		return false, errors.New("a message shorter than its header")
	}
	flags := binary.BigEndian.Uint16(msg[2:])
	qd, an := binary.BigEndian.Uint16(msg[4:]), binary.BigEndian.Uint16(msg[6:])
	ns, ar := binary.BigEndian.Uint16(msg[8:]), binary.BigEndian.Uint16(msg[10:])
	switch {
	case binary.BigEndian.Uint16(msg) != t.id:
		return false, fmt.Errorf("a message of ID %d, not the request's %d", binary.BigEndian.Uint16(msg), t.id)
	case flags&0x8000 == 0:
		return false, errors.New("a message that is not a response")
	case flags&0xF != 0:
		rcode := int(flags & 0xF)
		return false, fmt.Errorf("answered %s", dns.RcodeToString[rcode])
	case qd > 1:
		return false, fmt.Errorf("a message with %d questions", qd)
	}
	off := wire.HeaderLen
	if qd == 1 {
		// RFC 5936 §2.2.1: the question, in the first message at
		// least; it must be ours.
		var q []byte
		if q, off, err = wire.AppendName(nil, msg, off); err != nil || off+4 > len(msg) {
			return false, errors.New("a malformed question")
		}
		wire.Lower(q, q)
		if string(q) != string(t.origin) {
			return false, fmt.Errorf("a message answering for %s", zone.NameString(q))
		}
		off += 4
	}
	for range an {
		if done {
			return false, errors.New("records after the closing SOA")
		}
		if off, err = t.recs.add(msg, off); err != nil {
			return false, fmt.Errorf("record %d of the answer: %w", len(t.recs.list)+1, err)
		}
		if done, err = t.step(); err != nil {
			return false, err
		}
	}
	// Authority and additional records carry nothing for a transfer,
	// but for the TSIG record, which is the last (RFC 8945 §5.1).
	tsigAt := -1
	for i := range int(ns) + int(ar) {
		start := off
		var typ uint16
		var ok bool
		if off, typ, ok = wire.SkipRecord(msg, off); !ok {
			return false, errors.New("a malformed record after the answer")
		}
		if typ == dns.TypeTSIG {
			if i != int(ns)+int(ar)-1 {
				return false, errors.New("a TSIG record that is not the last")
			}
			tsigAt = start
		}
	}
	if off != len(msg) {
		return false, errors.New("bytes after the last record")
	}
	if t.stream != nil {
		if err := t.stream.Next(msg, tsigAt); err != nil {
			return false, err
		}
	}
	if len(t.recs.list) == 0 {
		// RFC 5936 §2.2: the first message opens with the SOA.
		return false, errors.New("the answer does not open with the zone's SOA")
	}
	if t.ixfr && !done && len(t.recs.list) == 1 && wire.SerialCompare(t.serial, t.from) <= 0 {
		// RFC 1995 §4: one SOA, not newer than the client's, is the
		// whole answer. (Its being alone in the first message is not
		// enough: a server may send one record per message.)
		return true, nil
	}
	return done, nil
}

// step looks at the record just read and reports whether it closes the
// answer.
func (t *transferReader) step() (bool, error) {
	r := t.recs.list[len(t.recs.list)-1]
	first := len(t.recs.list) == 1
	if r.Type() != dns.TypeSOA {
		if first {
			return false, errors.New("the answer does not open with the zone's SOA")
		}
		return false, nil
	}
	if string(r.Owner) != string(t.origin) {
		return false, fmt.Errorf("an SOA of %s in the answer", zone.NameString(r.Owner))
	}
	serial, ok := soaSerial(r)
	if !ok {
		return false, errors.New("a malformed SOA")
	}
	if first {
		t.serial = serial
	}
	if serial == t.serial {
		t.soas++
	} else {
		// RFC 1995 §4: an SOA of another serial opens the
		// differences from it.
		t.diffs = true
	}
	if !t.diffs && t.soas == 2 || t.soas == 3 {
		return true, nil
	}
	return false, nil
}

// soaSerial reads an SOA record's serial (after its two names).
func soaSerial(r zone.RR) (uint32, bool) {
	rdata := r.Tail[10:]
	n := wire.NameLen(rdata)
	if n >= len(rdata) {
		return 0, false
	}
	n += wire.NameLen(rdata[n:])
	if n+4 > len(rdata) {
		return 0, false
	}
	return binary.BigEndian.Uint32(rdata[n:]), true
}
