package peer

import "syscall"

// dieWithParent has the kernel send the child SIGKILL when the thread
// that started it exits: with the process (a Go thread ends earlier only
// when a goroutine exits locked to it, which the tests never do).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
