package dnstest

import (
	"os"
	"runtime"
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

// CPUPerAnswer runs batch, which answers n queries, until the benchmark
// is done, on a thread of its own, and reports the thread's run time per
// answer (cpu-ns/answer) and the allocations: the A/B measure of the
// benchmarks of a worker's batches, where the wall clock would measure
// the machine's other loads. Under callgrind, at two -test.benchtime
// counts, the same benchmark gives the instructions per batch.
func CPUPerAnswer(b *testing.B, n int, batch func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu := ThreadCPU(b)
	for b.Loop() {
		batch()
	}
	b.ReportMetric(float64(ThreadCPU(b)-cpu)/float64(b.N*n), "cpu-ns/answer")
}
