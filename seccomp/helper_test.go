//go:build linux && cgo && seccomp

package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	lcseccomp "github.com/opencontainers/runc/libcontainer/seccomp"
	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/seccomp/internal/abiprobe"
)

// A filter cannot be taken off again, so every test that runs under it
// does so in a subprocess through runProbe: the test binary re-executed
// with -test.run=^TestProbeHelper$ and the probe named in the environment.
// The subprocess loads the filter the way the sandbox does, through
// libcontainer's seccomp.InitSeccomp(Config()) after no_new_privs, then
// runs the probe on the same thread and prints a report line.
const (
	probeEnv  = "SKILLRUN_SECCOMP_PROBE"        // the probe to run
	argEnv    = "SKILLRUN_SECCOMP_PROBE_ARG"    // its argument
	filterEnv = "SKILLRUN_SECCOMP_PROBE_FILTER" // "1" loads the filter first
	reportTag = "seccomp-probe-report: "
)

// report is what a probe prints for the parent.
type report struct {
	Errno  int // errno of the probed call; 0 is success
	Status int // wait status of a child the probe watched
	Tid    int // the filtered thread, for the read-back test
}

// outcome is what runProbe saw of the subprocess.
type outcome struct {
	report   report
	reported bool
	stdout   string
	err      error // from cmd.Run: an *exec.ExitError when the subprocess failed
}

func (o outcome) errno() error {
	if o.report.Errno == 0 {
		return nil
	}
	return syscall.Errno(o.report.Errno)
}

// probeCmd is the subprocess runProbe runs, for tests that drive it
// themselves.
func probeCmd(t *testing.T, probe, arg string, filtered bool, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestProbeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), probeEnv+"="+probe, argEnv+"="+arg, filterEnv+"="+strconv.FormatBool(filtered))
	// Race-enabled binaries otherwise sleep a second at exit.
	cmd.Env = append(cmd.Env, strings.TrimSpace("GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// runProbe runs one probe in a fresh subprocess, under the filter or not,
// and returns what it reported and printed.
func runProbe(t *testing.T, probe, arg string, filtered bool, env ...string) outcome {
	t.Helper()
	cmd := probeCmd(t, probe, arg, filtered, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	o := outcome{err: cmd.Run(), stdout: stdout.String()}
	for line := range strings.Lines(o.stdout) {
		if rest, ok := strings.CutPrefix(line, reportTag); ok {
			if err := json.Unmarshal([]byte(rest), &o.report); err != nil {
				t.Fatalf("probe %s: bad report %q: %v", probe, rest, err)
			}
			o.reported = true
		}
	}
	var exit *exec.ExitError
	if o.err != nil && !errors.As(o.err, &exit) {
		t.Fatalf("probe %s: %v", probe, o.err)
	}
	if stderr.Len() > 0 {
		t.Logf("probe %s %s (filtered %v) stderr:\n%s", probe, arg, filtered, stderr.String())
	}
	return o
}

// TestProbeHelper is the body of runProbe's subprocesses, not a test.
func TestProbeHelper(t *testing.T) {
	name := os.Getenv(probeEnv)
	if name == "" {
		t.Skip("runs only as runProbe's subprocess")
	}
	os.Exit(probeMain(name, os.Getenv(argEnv), os.Getenv(filterEnv) == "true"))
}

func probeMain(name, arg string, filtered bool) int {
	// libcontainer loads the filter with prctl, which filters the calling
	// thread only (its init execs right after); so does the probe.
	runtime.LockOSThread()
	probe, ok := probes[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no probe %q\n", name)
		return 2
	}
	if filtered {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "no_new_privs:", err)
			return 2
		}
		if _, err := lcseccomp.InitSeccomp(Config()); err != nil {
			fmt.Fprintln(os.Stderr, "InitSeccomp:", err)
			return 2
		}
	}
	b, _ := json.Marshal(probe(arg))
	fmt.Printf("%s%s\n", reportTag, b)
	return 0
}

// probes by name; each takes its argument as a string.
var probes = map[string]func(arg string) report{
	"syscall":   probeSyscall,
	"clone":     probeClone,
	"clone3":    probeClone3,
	"forkexec":  probeForkExec,
	"ioctlpipe": probeIoctlPipe,
	"ioctlpty":  probeIoctlPty,
	"abi":       probeABI,
	"exec":      probeExec,
	"wait":      probeWait,
}

// probeSyscall makes one raw syscall; arg is "nr a0 a1 ..." in Go syntax.
func probeSyscall(arg string) report {
	var v [7]uintptr
	for i, f := range strings.Fields(arg) {
		n, err := strconv.ParseUint(f, 0, 64)
		if err != nil || i >= len(v) {
			return report{Errno: int(unix.EINVAL)}
		}
		v[i] = uintptr(n)
	}
	_, _, errno := unix.RawSyscall6(v[0], v[1], v[2], v[3], v[4], v[5], v[6])
	return report{Errno: int(errno)}
}

// probeClone forks with clone(arg flags); a child that gets created exits
// at once.
func probeClone(arg string) report {
	flags, _ := strconv.ParseUint(arg, 0, 64)
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, uintptr(flags), 0, 0, 0, 0, 0)
	if errno != 0 {
		return report{Errno: int(errno)}
	}
	if pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	return reap(int(pid))
}

// probeClone3 forks with clone3 and no flags.
func probeClone3(string) report {
	args := struct{ flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64 }{
		exitSignal: uint64(unix.SIGCHLD),
	}
	pid, _, errno := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	if errno != 0 {
		return report{Errno: int(errno)}
	}
	if pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	return reap(int(pid))
}

func reap(pid int) report {
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return report{Errno: errnoOf(err)}
	}
	return report{Status: int(ws)}
}

// probeForkExec starts arg the way Go's os/exec does (clone with
// CLONE_VFORK|CLONE_VM|CLONE_PIDFD, then execve) and waits for it.
func probeForkExec(arg string) report {
	pid, err := syscall.ForkExec(arg, []string{arg}, nil)
	if err != nil {
		return report{Errno: errnoOf(err)}
	}
	return reap(pid)
}

// probeIoctlPipe asks a pipe how many bytes it holds (FIONREAD).
func probeIoctlPipe(string) report {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return report{Errno: errnoOf(err)}
	}
	_, err := unix.IoctlGetInt(p[0], unix.TIOCINQ)
	return report{Errno: errnoOf(err)}
}

// probeIoctlPty reads a pseudo-terminal's settings (TCGETS).
func probeIoctlPty(string) report {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return report{Errno: errnoOf(err)}
	}
	_, err = unix.IoctlGetTermios(fd, unix.TCGETS)
	return report{Errno: errnoOf(err)}
}

// probeABI makes a call through the i386 or x32 ABI in a forked child.
func probeABI(arg string) report {
	probe := abiprobe.I386
	if arg == "x32" {
		probe = abiprobe.X32
	}
	ws, err := probe()
	return report{Errno: errnoOf(err), Status: int(ws)}
}

// probeExec replaces the subprocess with the program in arg (a JSON argv):
// the way libcontainer's init execs the shim, under the filter.
func probeExec(arg string) report {
	var argv []string
	if err := json.Unmarshal([]byte(arg), &argv); err != nil || len(argv) == 0 {
		return report{Errno: int(unix.EINVAL)}
	}
	return report{Errno: errnoOf(unix.Exec(argv[0], argv, os.Environ()))}
}

// probeWait reports the filtered thread and blocks on it until stdin
// closes, so that the parent can read the thread's filter back.
func probeWait(string) report {
	fmt.Printf("%s{\"Tid\":%d}\n", reportTag, unix.Gettid())
	var b [1]byte
	_, _, errno := unix.RawSyscall(unix.SYS_READ, 0, uintptr(unsafe.Pointer(&b[0])), 1)
	return report{Errno: int(errno), Tid: unix.Gettid()}
}

func errnoOf(err error) int {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return int(errno)
	}
	if err != nil {
		return -1
	}
	return 0
}
