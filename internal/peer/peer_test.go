package peer

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStop: Stop ends the whole process group (a shell and the child it
// forked, as NSD forks its helpers), and the output is kept.
func TestStop(t *testing.T) {
	sh, ok := FindTool("sh")
	if !ok {
		t.Skip("no sh")
	}
	p, err := Start(exec.Command(sh, "-c", "echo started; sleep 60 & echo $!; wait"))
	if err != nil {
		t.Fatal(err)
	}
	// Wait (bounded) for the child's pid to be printed.
	var child int
	for i := 0; i < 300 && child == 0; i++ {
		if f := strings.Fields(p.Output()); len(f) == 2 {
			for _, c := range f[1] {
				child = child*10 + int(c-'0')
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatalf("output %q: no child pid", p.Output())
	}
	if p.Exited() {
		t.Fatal("exited before Stop")
	}
	p.Stop()
	if !p.Exited() || p.Err() == nil {
		t.Fatalf("after Stop: exited %v, err %v", p.Exited(), p.Err())
	}
	// The child got SIGTERM too: wait (bounded) for it to be gone or a
	// zombie (reparented, it waits for init to reap it).
	for i := 0; ; i++ {
		if err := syscall.Kill(child, 0); err != nil || zombie(child) {
			break
		}
		if i == 500 {
			t.Fatalf("child %d still running after Stop", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(p.Output(), "started\n") {
		t.Errorf("output %q", p.Output())
	}
}

// zombie reports whether the process has ended and waits to be reaped
// (Linux /proc; false elsewhere).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}
