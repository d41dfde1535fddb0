package dnstest

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer safe for concurrent use: a server, a
// child's stdout and stderr copiers, or a logger write it while the test
// reads what was written so far.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
