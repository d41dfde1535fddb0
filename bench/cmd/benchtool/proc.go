package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTick is USER_HZ, the unit of the times in /proc/PID/stat. It is 100
// on every Linux architecture Go supports (the kernel fixes it for ABI
// stability), so it is not read with sysconf.
const clockTick = 100

// procStat holds the fields of /proc/PID/stat the harness uses.
type procStat struct {
	pid, ppid int
	cpuTicks  uint64 // utime + stime + cutime + cstime
	zombie    bool   // exited, not yet reaped
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("pid %d: bad stat", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("pid %d: short stat", pid)
	}
	num := func(k int) uint64 { v, _ := strconv.ParseUint(f[k-3], 10, 64); return v }
	return procStat{
		pid:      pid,
		ppid:     int(num(4)),
		cpuTicks: num(14) + num(15) + num(16) + num(17),
		zombie:   f[0] == "Z" || f[0] == "X",
	}, nil
}

// tree returns pid and all its live descendants.
func tree(pid int) ([]procStat, error) {
	root, err := readStat(pid)
	if err != nil {
		return nil, err
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]procStat{}
	for _, d := range dirs {
		p, err := strconv.Atoi(filepath.Base(d))
		if err != nil || p == pid {
			continue
		}
		st, err := readStat(p)
		if err != nil {
			continue // exited meanwhile
		}
		children[st.ppid] = append(children[st.ppid], st)
	}
	out := []procStat{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].pid]...)
	}
	return out, nil
}

// rollup returns the Pss and Rss lines (kB) of /proc/PID/smaps_rollup.
func rollup(pid int) (pss, rss uint64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fld := strings.Fields(sc.Text())
		if len(fld) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(fld[1], 10, 64)
		switch fld[0] {
		case "Pss:":
			pss = v
		case "Rss:":
			rss = v
		}
	}
	return pss, rss
}

// runTree prints, for the process tree rooted at -pid, one line:
//
//	CPU_US PSS_KB RSS_KB NPROC
//
// CPU_US is utime+stime of every live process in the tree plus what its
// reaped children used (cutime+cstime), in microseconds; since a live
// process is never in another's cutime nothing is counted twice. PSS is
// summed over the tree (that is what PSS is for: shared pages are split
// between the processes sharing them); RSS is summed too and so counts
// pages shared between NSD's forked processes more than once.
func runTree(args []string) error {
	fs := flag.NewFlagSet("tree", flag.ExitOnError)
	pid := fs.Int("pid", 0, "root of the process tree")
	fs.Parse(args)
	procs, err := tree(*pid)
	if err != nil {
		return err
	}
	var ticks, pss, rss uint64
	for _, p := range procs {
		ticks += p.cpuTicks
		a, b := rollup(p.pid)
		pss += a
		rss += b
	}
	fmt.Printf("%d %d %d %d\n", ticks*1000000/clockTick, pss, rss, len(procs))
	return nil
}
