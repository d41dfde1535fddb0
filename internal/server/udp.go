package server

// rxSize is the largest UDP query read; a longer datagram is truncated by
// the kernel and answered FORMERR with its header and question
// (wire.FormErr). Knot reads up to 64 KiB and answers such a query; no
// client needs a query that long (its EDNS options would have to be
// kilobytes), and a larger buffer would cost 60 KiB per batch slot.
const rxSize = 4096
