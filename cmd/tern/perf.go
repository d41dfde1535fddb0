package main

import (
	"context"
	"fmt"
	"io"
)

// runPerf implements 'tern perf' (owned by the load generator work).
func runPerf(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tern perf: not implemented yet")
	return 2
}
