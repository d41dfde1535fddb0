package main

import (
	"context"
	"fmt"
	"io"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tern serve: not implemented yet")
	return 2
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tern check: not implemented yet")
	return 2
}
