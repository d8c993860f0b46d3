package cli

import "syscall"

// setPdeathsig has the kernel send SIGTERM to an agent run when the loop
// dies (kill -9 included). It is tied to the thread that started the run:
// Go keeps its threads unless a goroutine locked to one exits, which the
// loop never does.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
