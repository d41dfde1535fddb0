package auth

import (
	"github.com/tern-dns/tern/internal/zone"
)

// Journals gives the differences between versions of a zone that an
// IXFR sends (RFC 1995); zonedb.Manager is one.
type Journals interface {
	// Since returns the changes of the zone origin (canonical wire
	// form) from serial to the newest version recorded, condensed into
	// one difference, or an error when it has none from serial.
	Since(origin []byte, serial uint32) (*zone.Diff, error)
}

// journalsBox holds a Journals for an atomic.Pointer.
type journalsBox struct{ j Journals }

// SetJournals sets where IXFR finds the differences since a client's
// serial; without them (nil, the default) an IXFR is answered with the
// whole zone (RFC 1995 §4).
func (r *Responder) SetJournals(j Journals) {
	if j == nil {
		r.journals.Store(nil)
		return
	}
	r.journals.Store(&journalsBox{j})
}

// difference returns the condensed difference from the client's serial
// to the version st sends, or nil when there is none that leads exactly
// there: no journal, a serial older than it or never served (RFC 1995
// §4: the whole zone then), or a journal behind or ahead of the version
// published (a change being recorded while the transfer starts). A
// difference of more records than the zone has is not sent either: the
// whole zone is smaller (BIND's max-ixfr-ratio, 100% by default).
func (st *xfrStream) difference() *zone.Diff {
	if !st.ixfr || st.journals == nil {
		return nil
	}
	d, err := st.journals.j.Since(st.z.Origin, st.from)
	if err != nil || string(d.NewSOA.Tail) != string(st.z.SOARecord().Tail) ||
		len(d.Deleted)+len(d.Added) > st.z.Records {
		return nil
	}
	return d
}

// sendDifference sends d as RFC 1995 §4 lays an incremental transfer out:
// the newest SOA, then the difference (the old SOA and the records
// deleted, the new SOA and the records added), then the newest SOA again.
// The difference is condensed into one, as §5 allows.
func (st *xfrStream) sendDifference(d *zone.Diff) {
	soa := st.z.SOARecord()
	st.add(soa.Owner, soa.Tail)
	st.add(d.OldSOA.Owner, d.OldSOA.Tail)
	for _, r := range d.Deleted {
		st.add(r.Owner, r.Tail)
	}
	st.add(d.NewSOA.Owner, d.NewSOA.Tail)
	for _, r := range d.Added {
		st.add(r.Owner, r.Tail)
	}
	st.add(soa.Owner, soa.Tail)
}
