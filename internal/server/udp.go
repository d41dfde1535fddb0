package server

// rxSize is the largest UDP query read; a longer datagram is truncated by
// the kernel and answered FORMERR.
const rxSize = 4096
