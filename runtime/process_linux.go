//go:build linux

package runtime

import (
	"os"
	"syscall"
)

// processAttr puts the skill in its own process group, makes it die with
// the supervisor, and, as root, runs it as the invocation's uid.
func processAttr(s Spec) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		a.Credential = &syscall.Credential{Uid: uint32(s.UID), Gid: uint32(s.GID), Groups: []uint32{}}
	}
	return a
}
