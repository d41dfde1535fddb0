package main

import (
	"errors"
	"flag"
)

// parseInterleaved parses flags that may come before or after positional
// arguments (the flag package alone stops at the first positional one)
// and returns the positional arguments in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagExit is the exit code of a command whose flags failed to parse
// (the flag set has printed why): 0 when help was asked for, else 2.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
