//go:build linux

package seccomp

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

func TestConfig(t *testing.T) {
	c := Config()
	if c.DefaultAction != configs.Errno || c.DefaultErrnoRet == nil || *c.DefaultErrnoRet != uint(unix.EPERM) {
		t.Errorf("default = %v errno %v, want Errno EPERM", c.DefaultAction, c.DefaultErrnoRet)
	}
	if !slices.Equal(c.Architectures, []string{"amd64"}) || len(c.Flags) != 0 || c.ListenerPath != "" {
		t.Errorf("architectures %q, flags %q, listener %q: want amd64 only, nothing else", c.Architectures, c.Flags, c.ListenerPath)
	}
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, s := range c.Syscalls {
		key := fmt.Sprintf("%s %v %v", s.Name, s.Action, argString(s.Args))
		if seen[key] {
			t.Errorf("duplicate entry %s", key)
		}
		seen[key] = true
		names[s.Name] = true
		if len(s.Args) > 1 {
			t.Errorf("%s: %d comparisons in one entry; libcontainer may split them into an OR", s.Name, len(s.Args))
		}
		switch s.Action {
		case configs.Allow:
		case configs.Errno:
			if s.ErrnoRet == nil || *s.ErrnoRet == uint(unix.EPERM) {
				t.Errorf("%s: an errno entry must say which errno, and not the default", s.Name)
			}
		default:
			t.Errorf("%s: action %v; the profile only allows or fails", s.Name, s.Action)
		}
	}
	if len(names) != len(profile) {
		t.Errorf("config names %d syscalls, the profile %d", len(names), len(profile))
	}
	if !slices.IsSortedFunc(c.Syscalls, func(a, b *configs.Syscall) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("entries are not sorted by name")
	}
	i := slices.IndexFunc(c.Syscalls, func(s *configs.Syscall) bool { return s.Name == "clone3" })
	if i < 0 || c.Syscalls[i].Action != configs.Errno || *c.Syscalls[i].ErrnoRet != uint(unix.ENOSYS) {
		t.Error("clone3 does not fail with ENOSYS")
	}
}

func argString(args []*configs.Arg) string {
	var b strings.Builder
	for _, a := range args {
		fmt.Fprintf(&b, "%+v", *a)
	}
	return b.String()
}
