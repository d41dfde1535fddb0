// Command benchtool is the helper binary behind bench/run.sh, the Tern
// benchmark harness. It does the parts that are awkward in shell:
//
//	benchtool gen    -out DIR -root FILE -big N   write zones and query files (deterministic)
//	benchtool resgen -out DIR                     the resolver benchmark's hierarchy and query files
//	benchtool coldq  -out F -n N -seed S          a fresh cold-resolution query file
//	benchtool probe  -addr A -name N -type T      wait until a server answers authoritatively
//	benchtool check  -addr A -queries F -expect E  sanity-check a server's answers to a workload
//	benchtool tree   -pid P                       CPU time and memory of a process tree
//	benchtool parse  -gen G -expect RCODE FILE    turn one load-generator report into a TSV row
//	benchtool report -raw F -servers F -out DIR   medians, ratios, results.md and chart data
//
// It uses only the standard library so that it builds anywhere the Tern
// module builds, and it does not depend on Tern's own packages: the harness
// must be able to measure a broken Tern too.
package main

import (
	"fmt"
	"os"
)

const usage = `usage: benchtool <gen|resgen|coldq|probe|check|tree|parse|report> [flags]
see bench/README.md`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "gen":
		err = runGen(args)
	case "resgen":
		err = runResGen(args)
	case "coldq":
		err = runColdQ(args)
	case "probe":
		err = runProbe(args)
	case "check":
		err = runCheck(args)
	case "tree":
		err = runTree(args)
	case "parse":
		err = runParse(args)
	case "report":
		err = runReport(args)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
