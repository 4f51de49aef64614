//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinuxConstants checks the values profile.go writes out by hand.
func TestLinuxConstants(t *testing.T) {
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"EPERM", eperm, uint64(unix.EPERM)},
		{"ENOSYS", enosys, uint64(unix.ENOSYS)},
		{"CLONE_NEWTIME", cloneNewTime, unix.CLONE_NEWTIME},
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}

// allNamespaceFlags is every CLONE_NEW* flag Linux has, from x/sys/unix
// rather than from the profile, so a flag the profile forgot shows up.
var allNamespaceFlags = map[string]uint64{
	"CLONE_NEWNS": unix.CLONE_NEWNS, "CLONE_NEWUTS": unix.CLONE_NEWUTS,
	"CLONE_NEWIPC": unix.CLONE_NEWIPC, "CLONE_NEWUSER": unix.CLONE_NEWUSER,
	"CLONE_NEWPID": unix.CLONE_NEWPID, "CLONE_NEWNET": unix.CLONE_NEWNET,
	"CLONE_NEWCGROUP": unix.CLONE_NEWCGROUP, "CLONE_NEWTIME": unix.CLONE_NEWTIME,
}

// TestCloneCoversNamespaceFlags: every alternative of the clone rule
// requires every namespace flag to be clear, so no combination of flags
// gets a namespace through; the usual clone callers still pass.
func TestCloneCoversNamespaceFlags(t *testing.T) {
	rule := profile["clone"]
	if !rule.Conditional() {
		t.Fatal("clone is allowed unconditionally")
	}
	for _, a := range rule.AnyOf {
		for name, flag := range allNamespaceFlags {
			if a.Index != 0 || a.Op != MaskedEqual || a.Mask&flag == 0 || a.Value&flag != 0 {
				t.Errorf("alternative %+v lets %s through", a, name)
			}
		}
	}
	const thread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS |
		unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	allowed := map[string]uint64{
		"fork (glibc)":      unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD),
		"pthread_create":    thread,
		"Go os/exec":        unix.CLONE_VFORK | unix.CLONE_VM | unix.CLONE_PIDFD | uint64(unix.SIGCHLD),
		"high garbage bits": 1<<40 | uint64(unix.SIGCHLD),
	}
	for name, flags := range allowed {
		if !rule.Allows([6]uint64{flags}) {
			t.Errorf("%s (%#x) is refused", name, flags)
		}
	}
	for name, flag := range allNamespaceFlags {
		for _, flags := range []uint64{flag, flag | uint64(unix.SIGCHLD), flag | thread, 1<<32 | flag} {
			if rule.Allows([6]uint64{flags}) {
				t.Errorf("clone with %s (%#x) is allowed", name, flags)
			}
		}
	}
}

// Ordinary ioctl requests, from <asm-generic/ioctls.h>.
const (
	fionread = 0x541b
	fioclex  = 0x5451
)

// TestIoctlNeverAllowsTerminalInjection: no alternative of the ioctl rule
// can match a request whose low 32 bits are TIOCSTI or TIOCLINUX, whatever
// the high half; ordinary requests pass.
func TestIoctlNeverAllowsTerminalInjection(t *testing.T) {
	rule := profile["ioctl"]
	for _, a := range rule.AnyOf {
		for _, req := range []uint32{unix.TIOCSTI, unix.TIOCLINUX} {
			reachable := a.Op == MaskedEqual && req&uint32(a.Mask) == uint32(a.Value) ||
				a.Op == Equal && uint32(a.Value) == req
			if a.Index != 1 || reachable {
				t.Errorf("alternative %+v can match request %#x", a, req)
			}
		}
	}
	for _, req := range []uint64{unix.TCGETS, fionread, unix.TIOCGWINSZ, unix.TIOCSWINSZ,
		fioclex, unix.TIOCSTI + 1, unix.TIOCSTI - 1, unix.TIOCLINUX + 1, 0, 1 << 63} {
		if !rule.Allows([6]uint64{0, req}) {
			t.Errorf("ioctl request %#x is refused", req)
		}
	}
}

func TestPersonality(t *testing.T) {
	rule := profile["personality"]
	for _, p := range []uint64{0, 0xffffffff, 0xffffffffffffffff} {
		if !rule.Allows([6]uint64{p}) {
			t.Errorf("personality(%#x) is refused", p)
		}
	}
	// From <linux/personality.h>; x/sys/unix does not carry them.
	const (
		addrNoRandomize = 0x0040000
		readImpliesExec = 0x0400000
		perLinux32      = 0x0008
		uname26         = 0x0020000
		addrLimit3GB    = 0x8000000
	)
	for _, p := range []uint64{addrNoRandomize, readImpliesExec, perLinux32, uname26, addrLimit3GB,
		perLinux32 | uname26, 0xfffffffe} {
		if rule.Allows([6]uint64{p}) {
			t.Errorf("personality(%#x) is allowed", p)
		}
	}
}

func TestSocketFamilies(t *testing.T) {
	tests := []struct {
		call   string
		domain uint64
		want   bool
	}{
		{"socket", unix.AF_UNIX, true},
		{"socket", unix.AF_INET, true},
		{"socket", unix.AF_INET6, true},
		{"socket", unix.AF_NETLINK, true},
		{"socket", unix.AF_VSOCK, false},
		{"socket", 1<<32 | unix.AF_VSOCK, false}, // passes Docker's 64-bit "!= AF_VSOCK"
		{"socket", unix.AF_PACKET, false},
		{"socket", unix.AF_ALG, false},
		{"socketpair", unix.AF_UNIX, true},
		{"socketpair", unix.AF_TIPC, false},
	}
	for _, tt := range tests {
		if got := profile[tt.call].Allows([6]uint64{tt.domain}); got != tt.want {
			t.Errorf("%s(%#x): allowed = %v, want %v", tt.call, tt.domain, got, tt.want)
		}
	}
}
