package runtime

import (
	"os"
	"syscall"
)

// exitOf reads a process state the way a shell does: the exit code, or
// 128+N for a process killed by signal N.
func exitOf(st *os.ProcessState) Exit {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return Exit{Code: st.ExitCode()}
}
