package runtime

import (
	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/landlock/shim"
)

// Rlimits are the per-skill rlimits the exec stage applies just before
// execve (DESIGN §4). RLIMIT_AS comes last: earlier it would break the Go
// runtime of libcontainer's init and of the shim (HOST-NOTES).
func Rlimits(l enforce.Limits) []shim.Rlimit {
	u := func(v int64) uint64 { return uint64(max(v, 0)) }
	return []shim.Rlimit{
		{Name: "RLIMIT_NPROC", Resource: unix.RLIMIT_NPROC, Soft: u(l.NProc), Hard: u(l.NProc)},
		{Name: "RLIMIT_NOFILE", Resource: unix.RLIMIT_NOFILE, Soft: u(l.NoFile), Hard: u(l.NoFile)},
		{Name: "RLIMIT_CORE", Resource: unix.RLIMIT_CORE, Soft: u(l.CoreBytes), Hard: u(l.CoreBytes)},
		{Name: "RLIMIT_CPU", Resource: unix.RLIMIT_CPU, Soft: u(l.CPUSeconds), Hard: u(l.CPUSeconds + 1)},
		{Name: "RLIMIT_AS", Resource: unix.RLIMIT_AS, Soft: u(l.AddressSpace), Hard: u(l.AddressSpace)},
	}
}
