// Package difftest is Tern's differential test harness: it serves the same
// zone files with Tern, Knot DNS and NSD on loopback ports, sends all three
// a deterministic set of queries generated from those zones, and compares
// the normalized answers. Knot DNS is the reference: Tern must give the
// same answer unless a reviewed entry of allowlist.txt says why the
// difference is right. NSD's differences are reported for information.
//
// The package also holds end-to-end tests that drive the tern binary with
// dig and kdig. Its code exists only for its tests; nothing else imports it.
package difftest
