//go:build linux && cgo && seccomp

package seccomp

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// need is one precondition of a test; requires skips with the first unmet
// reason, so each test declares its needs in one line.
type need struct {
	ok  func() bool
	why string
}

var root = need{func() bool { return os.Geteuid() == 0 },
	"needs root: the unfiltered control runs and PTRACE_SECCOMP_GET_FILTER depend on privilege"}

func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if !n.ok() {
			t.Skip(n.why)
		}
	}
}

func call(nr uintptr, args ...uint64) string {
	s := fmt.Sprint(nr)
	for _, a := range args {
		s += fmt.Sprintf(" %#x", a)
	}
	return s
}

// TestUnderFilter makes each call under the loaded filter and checks the
// exact errno (nil: the call succeeded). With control set, the same call
// also runs without the filter and must end differently, so the answer is
// the filter's and not the kernel's.
func TestUnderFilter(t *testing.T) {
	t.Parallel()
	const sigchld = uint64(unix.SIGCHLD)
	tests := []struct {
		name    string
		probe   string
		arg     string
		want    error
		control bool
	}{
		// A control run of PTRACE_TRACEME would leave the subprocess traced
		// by this test, which never resumes it.
		{"ptrace(PTRACE_TRACEME)", "syscall", call(unix.SYS_PTRACE, unix.PTRACE_TRACEME), unix.EPERM, false},
		{"unshare(CLONE_NEWUSER)", "syscall", call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), unix.EPERM, true},
		{"clone(CLONE_NEWNS)", "clone", fmt.Sprint(unix.CLONE_NEWNS | sigchld), unix.EPERM, true},
		{"clone(CLONE_NEWUSER)", "clone", fmt.Sprint(unix.CLONE_NEWUSER | sigchld), unix.EPERM, true},
		{"clone3", "clone3", "", unix.ENOSYS, true},
		{"plain fork: clone(SIGCHLD)", "clone", fmt.Sprint(sigchld), nil, false},
		{"Go's fork and exec of /bin/true", "forkexec", "/bin/true", nil, false},
		{"keyctl", "syscall", call(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, 0xfffffffd, 0), unix.EPERM, true},
		{"bpf", "syscall", call(unix.SYS_BPF, unix.BPF_PROG_LOAD, 0, 0), unix.EPERM, true},
		{"userfaultfd", "syscall", call(unix.SYS_USERFAULTFD, unix.O_CLOEXEC), unix.EPERM, true},
		{"io_uring_setup", "syscall", call(unix.SYS_IO_URING_SETUP, 1, 0), unix.EPERM, true},
		{"perf_event_open", "syscall", call(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0xffffffff, 0xffffffff, 0), unix.EPERM, true},
		{"open_by_handle_at", "syscall", call(unix.SYS_OPEN_BY_HANDLE_AT, 0xffffffff, 0, 0), unix.EPERM, true},
		{"mount", "syscall", call(unix.SYS_MOUNT, 0, 0, 0, 0, 0), unix.EPERM, true},
		{"setns", "syscall", call(unix.SYS_SETNS, 0xffffffff, 0), unix.EPERM, true},
		{"personality(ADDR_NO_RANDOMIZE)", "syscall", call(unix.SYS_PERSONALITY, 0x0040000), unix.EPERM, true},
		{"personality(0xffffffff) query", "syscall", call(unix.SYS_PERSONALITY, 0xffffffff), nil, false},
		{"ioctl(0, TIOCSTI)", "syscall", call(unix.SYS_IOCTL, 0, unix.TIOCSTI, 0), unix.EPERM, true},
		{"ioctl(0, 0x100005412)", "syscall", call(unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI, 0), unix.EPERM, true},
		{"ioctl(0, TIOCLINUX)", "syscall", call(unix.SYS_IOCTL, 0, unix.TIOCLINUX, 0), unix.EPERM, true},
		// Stdin is /dev/null: ENOTTY means the request reached the driver.
		{"ioctl(0, TIOCGWINSZ) reaches the driver", "syscall", call(unix.SYS_IOCTL, 0, unix.TIOCGWINSZ, 0), unix.ENOTTY, false},
		{"ioctl(pipe, FIONREAD)", "ioctlpipe", "", nil, false},
		{"ioctl(pty, TCGETS)", "ioctlpty", "", nil, false},
		{"socket(AF_VSOCK with high bits)", "syscall", call(unix.SYS_SOCKET, 1<<32|unix.AF_VSOCK, unix.SOCK_STREAM, 0), unix.EPERM, true},
		{"landlock_create_ruleset(VERSION)", "syscall", call(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION), nil, false},
		// fchmodat2 (452) is above the profile's highest number: runc's stub
		// answers ENOSYS, so glibc falls back instead of failing. (AT_FDCWD, NULL)
		{"fchmodat2 is ENOSYS", "syscall", call(452, 0xffffffffffffff9c, 0, 0, 0), unix.ENOSYS, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := runProbe(t, tt.probe, tt.arg, true)
			if !o.reported {
				t.Fatalf("no report (%v); output:\n%s", o.err, o.stdout)
			}
			if got := o.errno(); !errors.Is(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Errorf("under the filter: %v, want %v", got, tt.want)
			}
			if ws := syscall.WaitStatus(o.report.Status); tt.want == nil && o.report.Status != 0 {
				t.Errorf("child ended with %v, want exit 0", ws)
			}
			if !tt.control || os.Geteuid() != 0 {
				return
			}
			c := runProbe(t, tt.probe, tt.arg, false)
			if c.errno() == o.errno() {
				t.Errorf("without the filter it is also %v: the test proves nothing", c.errno())
			}
			t.Logf("filtered: %v; unfiltered: %v", o.errno(), c.errno())
		})
	}
}

// TestForeignABIKilled: a call through the i386 or x32 ABI kills the
// process with SIGSYS. libcontainer leaves libseccomp's bad-architecture
// action at its default, SECCOMP_RET_KILL_THREAD, which takes the whole
// process when, as in the probe's forked child, it has one thread.
func TestForeignABIKilled(t *testing.T) {
	t.Parallel()
	for _, abi := range []string{"i386", "x32"} {
		t.Run(abi, func(t *testing.T) {
			t.Parallel()
			if c := runProbe(t, "abi", abi, false); c.errno() != nil {
				t.Fatalf("unfiltered probe failed: %v", c.errno())
			} else if ws := syscall.WaitStatus(c.report.Status); abi == "i386" && !ws.Exited() {
				t.Skipf("int 0x80 fails without the filter too (%v): no ia32 emulation", ws)
			}
			o := runProbe(t, "abi", abi, true)
			if o.errno() != nil {
				t.Fatalf("filtered probe failed: %v", o.errno())
			}
			if ws := syscall.WaitStatus(o.report.Status); !ws.Signaled() || ws.Signal() != unix.SIGSYS {
				t.Errorf("the child ended with %#x (exited %v, signal %v), want killed by SIGSYS", o.report.Status, ws.Exited(), ws.Signal())
			}
		})
	}
}
