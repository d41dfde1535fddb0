package main

import (
	"context"
	"fmt"
	"io"
)

// runZone implements 'tern zone ...' (owned by the DNSSEC signing work).
func runZone(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tern zone: not implemented yet")
	return 2
}
