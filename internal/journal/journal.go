// Package journal keeps a zone's recent differences (RFC 1995) on disk,
// for IXFR: one file per zone, a run of differences, each continuing the
// one before. Appends are crash-safe (a checksummed entry, then fsync: a
// torn tail left by a crash is found and dropped on open), the file is
// bounded in size (the oldest changes condensed or dropped, the result
// written whole and renamed into place), and a client's serial is
// answered with one condensed difference from it to the newest version.
package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// The file: magic, then entries. An entry is its payload's length and
// CRC-32C (4 octets each, big-endian), then the payload: the serials
// From and To (4 octets each), the digest of the version it leads to
// (zone.Zone.Digest, 8 octets), the counts of deleted and added records
// (4 octets each), the old SOA, the new SOA, the deleted and the added
// records, each as its owner (uncompressed wire form) and its tail (TYPE
// ... RDATA).
const (
	magic       = "TERNJNL2"
	entryHeader = 8
	payloadHead = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is where one difference lies in the file.
type entry struct {
	from, to uint32
	digest   uint64 // of the version it leads to
	off      int64  // of the entry header
	size     int64  // header and payload
}

// Journal is one zone's journal. Its methods are safe for concurrent use.
type Journal struct {
	path string
	max  int64

	mu      sync.Mutex
	f       *os.File
	entries []entry
	size    int64 // of the file
}

// Path is where the journal of the zone origin (a domain name, as the
// configuration writes it) lives under the data directory dir.
func Path(dir, origin string) string {
	name := strings.ToLower(strings.TrimSuffix(origin, "."))
	if name == "" {
		name = "root"
	}
	// A zone's name may hold any octet in escapes.
	return filepath.Join(dir, "journal", durable.FileName(name)+".jnl")
}

// Open opens (or creates, with its directory) the journal at path, which
// keeps at most max octets (a difference larger than that is not kept).
// An entry that a crash left half written, or that fails its checksum,
// is dropped with everything after it; dropped says how many octets.
func Open(path string, max int64) (j *Journal, dropped int64, err error) {
	if err := durable.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, 0, fmt.Errorf("journal %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("journal %s: %w", path, err)
	}
	j = &Journal{path: path, max: max, f: f}
	if dropped, err = j.scan(); err != nil {
		f.Close()
		return nil, 0, err
	}
	return j, dropped, nil
}

// scan reads the file's entries, truncating it after the last good one.
func (j *Journal) scan() (dropped int64, err error) {
	fi, err := j.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("journal %s: %w", j.path, err)
	}
	if fi.Size() == 0 {
		// New (or emptied by a crash before its magic reached the disk).
		if _, err := j.f.WriteAt([]byte(magic), 0); err != nil {
			return 0, fmt.Errorf("journal %s: %w", j.path, err)
		}
		j.size = int64(len(magic))
		return 0, j.sync()
	}
	var m [len(magic)]byte
	if _, err := j.f.ReadAt(m[:], 0); err != nil || string(m[:]) != magic {
		return 0, fmt.Errorf("journal %s: not a journal of this version (no %q at its start)", j.path, magic)
	}
	off := int64(len(magic))
	var hdr [entryHeader + payloadHead]byte
	var buf []byte
	for off < fi.Size() {
		n, _ := j.f.ReadAt(hdr[:], off)
		if n < len(hdr) {
			break
		}
		plen := int64(binary.BigEndian.Uint32(hdr[:]))
		if plen < payloadHead || off+entryHeader+plen > fi.Size() {
			break
		}
		buf = grow(buf, int(plen))
		if _, err := j.f.ReadAt(buf, off+entryHeader); err != nil {
			break
		}
		if crc32.Checksum(buf, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			break
		}
		if _, _, err := decode(buf); err != nil {
			break
		}
		e := entry{from: binary.BigEndian.Uint32(buf), to: binary.BigEndian.Uint32(buf[4:]), digest: binary.BigEndian.Uint64(buf[8:]),
			off: off, size: entryHeader + plen}
		if len(j.entries) > 0 && j.entries[len(j.entries)-1].to != e.from {
			break // not a continuation: written by no Append
		}
		j.entries = append(j.entries, e)
		off += e.size
	}
	j.size = off
	if off < fi.Size() {
		if err := j.f.Truncate(off); err != nil {
			return 0, fmt.Errorf("journal %s: dropping a torn tail: %w", j.path, err)
		}
		if err := j.sync(); err != nil {
			return 0, err
		}
	}
	return fi.Size() - off, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func (j *Journal) sync() error {
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Close closes the journal's file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// Serials returns the oldest serial the journal leads from and the newest
// it leads to; ok is false when it is empty.
func (j *Journal) Serials() (first, last uint32, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.entries) == 0 {
		return 0, 0, false
	}
	return j.entries[0].from, j.entries[len(j.entries)-1].to, true
}

// SetMax changes the bound (a reloaded configuration); a journal over the
// new bound is compacted at the next append.
func (j *Journal) SetMax(max int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.max = max
}

// Last returns the serial the newest difference leads to and the digest
// of that version (zone.Zone.Digest); ok is false when the journal is
// empty.
func (j *Journal) Last() (serial uint32, digest uint64, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.entries) == 0 {
		return 0, 0, false
	}
	e := j.entries[len(j.entries)-1]
	return e.to, e.digest, true
}

// Reset empties the journal: its differences no longer lead to the zone
// served.
func (j *Journal) Reset() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rewrite(nil)
}

// Size is the journal file's size in octets.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Append adds the difference d, which should continue the newest one (d.From
// its To), and the digest of the version it leads to (zone.Zone.Digest);
// one that does not continue (a zone reloaded from a file whose serial
// jumped, or a journal that was full) starts the journal anew with d. When
// the journal then exceeds its bound it is compacted (see compact).
func (j *Journal) Append(d *zone.Diff, digest uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	rec := appendEntry(nil, d, digest)
	if int64(len(magic)+len(rec)) > j.max {
		// Too large to keep at all: an IXFR from before it becomes an AXFR.
		return j.rewrite(nil)
	}
	if len(j.entries) > 0 && j.entries[len(j.entries)-1].to != d.From {
		return j.rewrite(rec)
	}
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.sync(); err != nil {
		return err
	}
	j.entries = append(j.entries, entry{from: d.From, to: d.To, digest: digest, off: j.size, size: int64(len(rec))})
	j.size += int64(len(rec))
	if j.size > j.max {
		return j.compact()
	}
	return nil
}

// compact brings the journal down to half its bound, so that it is done
// once per half a bound of appends: the two oldest differences are merged
// into one when that saves space (changes that cancel out: a signature
// replaced twice, a record added and removed), as Knot's journal merges
// changesets, and otherwise the oldest is dropped. Merging loses the
// serial between them; a client there gets a full transfer. The result is
// written to a new file and renamed into place.
func (j *Journal) compact() error {
	diffs := make([]*zone.Diff, len(j.entries))
	sizes := make([]int64, len(j.entries))
	digests := make([]uint64, len(j.entries))
	total := int64(len(magic))
	for i, e := range j.entries {
		d, err := j.read(e)
		if err != nil {
			return err
		}
		diffs[i], sizes[i], digests[i] = d, e.size, e.digest
		total += e.size
	}
	for total > j.max/2 && len(diffs) > 0 {
		if len(diffs) >= 2 {
			m, err := zone.Merge(diffs[0], diffs[1])
			if err != nil {
				return fmt.Errorf("journal %s: %w", j.path, err)
			}
			// Merged only when a quarter of the two cancels out (a
			// signature replaced twice: half); two unrelated changes
			// merged would cost the serial between them for nothing.
			if ms, both := int64(len(appendEntry(nil, m, digests[1]))), sizes[0]+sizes[1]; 4*ms <= 3*both {
				total -= both - ms
				diffs = append([]*zone.Diff{m}, diffs[2:]...)
				sizes = append([]int64{ms}, sizes[2:]...)
				digests = digests[1:] // the merged one leads where the second did
				continue
			}
		}
		total -= sizes[0]
		diffs, sizes, digests = diffs[1:], sizes[1:], digests[1:]
	}
	var out []byte
	for i, d := range diffs {
		out = appendEntry(out, d, digests[i])
	}
	return j.rewrite(out)
}

// rewrite replaces the file with the entries encoded in recs.
func (j *Journal) rewrite(recs []byte) error {
	data := append([]byte(magic), recs...)
	if err := durable.WriteFile(j.path, data, 0o600); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.f.Close()
	j.f, j.entries, j.size = f, j.entries[:0], int64(len(data))
	off := int64(len(magic))
	for off < int64(len(data)) {
		p := data[off:]
		plen := int64(binary.BigEndian.Uint32(p))
		e := entry{from: binary.BigEndian.Uint32(p[entryHeader:]), to: binary.BigEndian.Uint32(p[entryHeader+4:]),
			digest: binary.BigEndian.Uint64(p[entryHeader+8:]), off: off, size: entryHeader + plen}
		j.entries = append(j.entries, e)
		off += e.size
	}
	return nil
}

// read decodes the difference of entry e from the file.
func (j *Journal) read(e entry) (*zone.Diff, error) {
	buf := make([]byte, e.size)
	if _, err := j.f.ReadAt(buf, e.off); err != nil {
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	if crc32.Checksum(buf[entryHeader:], castagnoli) != binary.BigEndian.Uint32(buf[4:]) {
		return nil, fmt.Errorf("journal %s: the entry at offset %d changed on disk (checksum)", j.path, e.off)
	}
	d, _, err := decode(buf[entryHeader:])
	if err != nil {
		return nil, fmt.Errorf("journal %s: the entry at offset %d: %w", j.path, e.off, err)
	}
	return d, nil
}

// ErrNotFound says the journal holds no difference from the serial asked
// for: older than its oldest (dropped), or never a version of the zone.
// RFC 1995 §4: the server then sends the whole zone.
var ErrNotFound = errors.New("journal: no difference from this serial")

// Since returns the differences from serial to the newest version,
// condensed into one (RFC 1995 §5), or ErrNotFound.
func (j *Journal) Since(serial uint32) (*zone.Diff, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := 0
	for i < len(j.entries) && j.entries[i].from != serial {
		i++
	}
	if i == len(j.entries) {
		return nil, ErrNotFound
	}
	d, err := j.read(j.entries[i])
	if err != nil {
		return nil, err
	}
	for _, e := range j.entries[i+1:] {
		next, err := j.read(e)
		if err != nil {
			return nil, err
		}
		if d, err = zone.Merge(d, next); err != nil {
			return nil, fmt.Errorf("journal %s: %w", j.path, err)
		}
	}
	return d, nil
}

// appendEntry appends d as an entry (header and payload) to b, digest the
// digest of the version it leads to.
func appendEntry(b []byte, d *zone.Diff, digest uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, entryHeader)...)
	b = binary.BigEndian.AppendUint32(b, d.From)
	b = binary.BigEndian.AppendUint32(b, d.To)
	b = binary.BigEndian.AppendUint64(b, digest)
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Deleted)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Added)))
	b = appendRR(b, d.OldSOA)
	b = appendRR(b, d.NewSOA)
	for _, r := range d.Deleted {
		b = appendRR(b, r)
	}
	for _, r := range d.Added {
		b = appendRR(b, r)
	}
	p := b[start+entryHeader:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(p)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(p, castagnoli))
	return b
}

func appendRR(b []byte, r zone.RR) []byte {
	return append(append(b, r.Owner...), r.Tail...)
}

// decode reads a payload: the difference, whose records alias p, and the
// digest of the version it leads to.
func decode(p []byte) (*zone.Diff, uint64, error) {
	if len(p) < payloadHead {
		return nil, 0, io.ErrUnexpectedEOF
	}
	d := &zone.Diff{From: binary.BigEndian.Uint32(p), To: binary.BigEndian.Uint32(p[4:])}
	digest := binary.BigEndian.Uint64(p[8:])
	ndel, nadd := binary.BigEndian.Uint32(p[16:]), binary.BigEndian.Uint32(p[20:])
	rest := p[payloadHead:]
	// Each record takes at least 11 octets (the root name and a tail).
	if uint64(ndel)+uint64(nadd)+2 > uint64(len(rest))/11 {
		return nil, 0, fmt.Errorf("%d and %d records cannot fit in %d octets", ndel, nadd, len(rest))
	}
	var err error
	next := func() zone.RR {
		if err != nil {
			return zone.RR{}
		}
		var r zone.RR
		if r, rest, err = cutRR(rest); err != nil {
			return zone.RR{}
		}
		return r
	}
	d.OldSOA, d.NewSOA = next(), next()
	if err == nil && (d.OldSOA.Type() != wire.TypeSOA || d.NewSOA.Type() != wire.TypeSOA) {
		return nil, 0, errors.New("a difference without its SOAs")
	}
	d.Deleted = make([]zone.RR, ndel)
	for i := range d.Deleted {
		d.Deleted[i] = next()
	}
	d.Added = make([]zone.RR, nadd)
	for i := range d.Added {
		d.Added[i] = next()
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d octets after the last record", len(rest))
	}
	if err != nil {
		return nil, 0, err
	}
	return d, digest, nil
}

// cutRR reads one record (owner, tail) from the front of p.
func cutRR(p []byte) (zone.RR, []byte, error) {
	n := wire.NameLen(p)
	if n <= 0 || n > len(p) || n+10 > len(p) {
		return zone.RR{}, nil, io.ErrUnexpectedEOF
	}
	t := n + 10 + int(binary.BigEndian.Uint16(p[n+8:]))
	if t > len(p) {
		return zone.RR{}, nil, io.ErrUnexpectedEOF
	}
	return zone.RR{Owner: p[:n:n], Tail: p[n:t:t]}, p[t:], nil
}
