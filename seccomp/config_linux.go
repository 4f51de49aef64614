//go:build linux

package seccomp

import (
	"maps"
	"slices"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// Config translates the profile into the libcontainer seccomp configuration
// the runtime hands to libcontainer: errno EPERM by default, the amd64
// architecture alone, and one Syscall entry per rule or per alternative of
// a conditional rule, sorted by name so the result is stable.
//
// The sandbox does not hand this to libcontainer: the shim loads
// [Program], which is what libcontainer would compile from it (see
// Compile). Config remains the profile in libcontainer's terms: what
// Compile and its tests start from, and what the benchmark's runc bundle
// is made of.
//
// What libcontainer adds when it loads this (see Compile): the calling
// thread's filter is built by libseccomp with its default bad-architecture
// action, SECCOMP_RET_KILL_THREAD, and runc prepends a stub that answers
// ENOSYS for syscall numbers above the highest one named here, so newer
// syscalls look unimplemented to libc rather than forbidden.
func Config() *configs.Seccomp {
	errno := uint(eperm)
	c := &configs.Seccomp{
		DefaultAction:   configs.Errno,
		DefaultErrnoRet: &errno,
		Architectures:   []string{"amd64"},
	}
	for _, name := range slices.Sorted(maps.Keys(profile)) {
		c.Syscalls = append(c.Syscalls, syscallEntries(name, profile[name])...)
	}
	return c
}

// syscallEntries is one rule as libcontainer entries. Alternatives become
// separate entries because libseccomp ORs the rules of one syscall, and each
// entry carries one comparison so libcontainer never splits it further.
func syscallEntries(name string, r Rule) []*configs.Syscall {
	switch {
	case r.Errno != 0:
		errno := r.Errno
		return []*configs.Syscall{{Name: name, Action: configs.Errno, ErrnoRet: &errno}}
	case len(r.AnyOf) == 0:
		return []*configs.Syscall{{Name: name, Action: configs.Allow}}
	}
	out := make([]*configs.Syscall, 0, len(r.AnyOf))
	for _, a := range r.AnyOf {
		arg := &configs.Arg{Index: a.Index, Value: a.Value, Op: configs.EqualTo}
		if a.Op == MaskedEqual {
			// libcontainer's MaskEqualTo takes the mask first, the value second.
			arg = &configs.Arg{Index: a.Index, Value: a.Mask, ValueTwo: a.Value, Op: configs.MaskEqualTo}
		}
		out = append(out, &configs.Syscall{Name: name, Action: configs.Allow, Args: []*configs.Arg{arg}})
	}
	return out
}
