// Package peer runs the other DNS servers tests compare Tern with (Knot
// DNS, NSD, Unbound) as child processes: finding their programs, starting
// each in its own process group, keeping its output for the test's log,
// and stopping it.
package peer

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tern-dns/tern/internal/dnstest"
)

// FindTool looks for a program on PATH and in the sbin directories, which
// a non-root PATH often lacks although knotd, nsd and unbound live there.
func FindTool(name string) (string, bool) {
	if path, err := exec.LookPath(name); err == nil {
		return path, true
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// Process is a peer server started by Start.
type Process struct {
	cmd  *exec.Cmd
	out  dnstest.LogBuffer // the child's stdout and stderr
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// Start starts cmd in its own process group (NSD forks helpers;
// stopping the group reaches them and only them), its output kept for
// the test's log. On Linux the peer is also killed when the test process
// dies without stopping it (a test binary killed at its timeout, or by a
// closed pipe), so that it does not keep the test's addresses.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended (cmd.Wait's error); valid once Done is
// closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Signal sends sig to the process (named reloads its zones on SIGHUP).
func (p *Process) Signal(sig syscall.Signal) error { return syscall.Kill(p.cmd.Process.Pid, sig) }

// Stop ends the process group: SIGTERM, then SIGKILL after 5 seconds.
func (p *Process) Stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}
