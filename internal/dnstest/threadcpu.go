package dnstest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ThreadCPU is the calling thread's run time so far in nanoseconds
// (schedstat's first field), for benchmarks on a shared machine, where
// the wall clock measures the neighbours: lock the goroutine to its
// thread (runtime.LockOSThread) around what is measured. It skips the
// benchmark where there is no /proc/thread-self/schedstat.
func ThreadCPU(b testing.TB) int64 {
	data, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		b.Skip("no /proc/thread-self/schedstat:", err)
	}
	f := strings.Fields(string(data))
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
