//go:build !linux

package runtime

import (
	"os"
	"syscall"
)

// processAttr puts the skill in its own process group and, as root, runs
// it as the invocation's uid. There is no parent-death signal here: a
// killed supervisor leaves the group for `skillrun gc`.
func processAttr(s Spec) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		a.Credential = &syscall.Credential{Uid: uint32(s.UID), Gid: uint32(s.GID), Groups: []uint32{}}
	}
	return a
}
