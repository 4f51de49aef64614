package landlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A Landlock domain cannot be left, so every test that restricts does it in
// a child: runRestricted re-runs this test binary with a probe in the
// environment; TestRestrictedChild applies it and reports an outcome.

const probeEnv = "SKILLRUN_LANDLOCK_PROBE"

// probe is one child's task: Restrict, then one action.
type probe struct {
	Plan      Plan
	MinABI    int
	Degraded  bool
	FakeABI   int // > 0: play a kernel of this ABI
	FakeErrno int // ≠ 0: play a kernel whose ABI query fails with it
	Action    string
	Arg       string
}

// outcome is what the child reports.
type outcome struct {
	Result     Result
	RestrictIs []string // which of errorNames the Restrict error matches
	RestrictEr string
	Errno      int // the action's errno; 0 when it worked
	ActErr     string
	ExitCode   int // of a spawned program
	Out        string
}

var errorNames = map[string]error{
	"ErrABITooLow": ErrABITooLow, "ErrRuleType": ErrRuleType, "ErrBadRule": ErrBadRule,
	"ENOSYS": unix.ENOSYS, "ErrUnsupported": errors.ErrUnsupported,
}

// runRestricted runs p in a child process and returns what it reported.
// stdin, when not nil, becomes the child's stdin.
func runRestricted(t *testing.T, p probe, stdin io.Reader) outcome {
	t.Helper()
	spec, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestrictedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), probeEnv+"="+string(spec))
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout: %s\nstderr: %s", err, out, stderr.Bytes())
	}
	_, line, ok := bytes.Cut(out, []byte("OUTCOME "))
	if !ok {
		t.Fatalf("child reported nothing\nstdout: %s\nstderr: %s", out, stderr.Bytes())
	}
	var o outcome
	if err := json.Unmarshal(line, &o); err != nil {
		t.Fatalf("child outcome %q: %v", line, err)
	}
	return o
}

// TestRestrictedChild is the child side of runRestricted; run on its own
// it skips.
func TestRestrictedChild(t *testing.T) {
	spec := os.Getenv(probeEnv)
	if spec == "" {
		t.Skip("helper process of runRestricted; does nothing on its own")
	}
	var p probe
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		fmt.Printf("OUTCOME {\"ActErr\": %q}\n", err.Error())
		os.Exit(0)
	}
	if p.FakeABI > 0 || p.FakeErrno != 0 {
		kernelABI = func() (int, error) {
			if p.FakeErrno != 0 {
				return 0, fmt.Errorf("landlock_create_ruleset: %w", syscall.Errno(p.FakeErrno))
			}
			return p.FakeABI, nil
		}
	}
	var o outcome
	// A thread that exists before Restrict must be confined too.
	thread := startLockedThread()
	res, err := Restrict(p.Plan, p.MinABI, p.Degraded)
	o.Result = res
	if err != nil {
		o.RestrictEr = err.Error()
		for name, target := range errorNames {
			if errors.Is(err, target) {
				o.RestrictIs = append(o.RestrictIs, name)
			}
		}
	} else {
		act(&o, p, thread)
	}
	b, _ := json.Marshal(o)
	fmt.Printf("OUTCOME %s\n", b)
	os.Exit(0) // not through the test framework, which would write under the domain
}

// startLockedThread starts a goroutine that owns its OS thread and runs
// the functions sent to it there.
func startLockedThread() chan<- func() {
	c := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range c {
			f()
		}
	}()
	return c
}

func act(o *outcome, p probe, thread chan<- func()) {
	var err error
	switch p.Action {
	case "none":
	case "read":
		var b []byte
		b, err = os.ReadFile(p.Arg)
		o.Out = string(b)
	case "read-stdin":
		var b []byte
		b, err = io.ReadAll(os.Stdin) // the inherited descriptor, opened before Restrict
		o.Out = string(b)
	case "ioctl-stdin":
		_, err = unix.IoctlGetTermios(0, unix.TCGETS)
	case "ioctl":
		var f *os.File
		if f, err = os.OpenFile(p.Arg, os.O_RDWR, 0); err == nil {
			_, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
			f.Close()
		}
	case "write":
		err = os.WriteFile(p.Arg, []byte("written"), 0o644)
	case "open-write":
		var f *os.File
		if f, err = os.OpenFile(p.Arg, os.O_WRONLY, 0); err == nil {
			_, err = f.WriteString("x")
			f.Close()
		}
	case "rename":
		from, to, _ := strings.Cut(p.Arg, "|")
		err = os.Rename(from, to)
	case "exec":
		err = exec.Command(p.Arg).Run()
	case "spawn-cat": // a child started after Restrict
		var out []byte
		out, err = exec.Command("/usr/bin/cat", p.Arg).CombinedOutput()
		o.Out = string(out)
	case "thread-read":
		done := make(chan error)
		thread <- func() { _, err := os.ReadFile(p.Arg); done <- err }
		err = <-done
	case "connect-tcp":
		err = tcp(p.Arg, unix.Connect)
	case "bind-tcp":
		err = tcp(p.Arg, unix.Bind)
	case "connect-abstract":
		err = connectAbstract(p.Arg)
	case "kill-child": // Arg: "same" or "other" thread than the one that forked
		err = killChild(p.Arg == "same", thread)
	case "kill":
		pid, _ := strconv.Atoi(p.Arg)
		err = unix.Kill(pid, 0)
	default:
		err = fmt.Errorf("unknown action %q", p.Action)
	}
	record(o, err)
}

func record(o *outcome, err error) {
	if err == nil {
		return
	}
	o.ActErr = err.Error()
	var errno syscall.Errno
	var exit *exec.ExitError
	switch {
	case errors.As(err, &errno):
		o.Errno = int(errno)
	case errors.As(err, &exit):
		o.ExitCode = exit.ExitCode()
	default:
		o.Errno = -1
	}
}

// tcp runs connect or bind on a plain TCP socket: net.Dial and net.Listen
// may pick Multipath TCP, which Landlock does not restrict.
func tcp(addr string, op func(int, unix.Sockaddr) error) error {
	ap, err := netip(addr)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return op(fd, ap)
}

func netip(addr string) (*unix.SockaddrInet4, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet4{Port: n}
	copy(sa.Addr[:], net.ParseIP(host).To4())
	return sa, nil
}

func connectAbstract(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name})
}

// need is one precondition of a test; requires skips with the first unmet
// reason.
type need struct {
	ok  func() bool
	why string
}

func landlockABI(n int) need {
	abi, _, _ := usableABI()
	return need{func() bool { return abi >= n }, fmt.Sprintf("needs Landlock ABI %d; this kernel offers %d", n, abi)}
}

func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if !n.ok() {
			t.Skip(n.why)
		}
	}
}

// killChild starts a child on one locked thread and signals it (signal 0)
// from that thread or from another one.
func killChild(sameThread bool, forker chan<- func()) error {
	var cmd *exec.Cmd
	started := make(chan error)
	forker <- func() {
		cmd = exec.Command("/usr/bin/sleep", "5")
		started <- cmd.Start()
	}
	if err := <-started; err != nil {
		return err
	}
	defer func() {
		// Only the forking thread may signal the child (see TestRestrictThreadDomains).
		forker <- func() { cmd.Process.Kill() }
		cmd.Wait()
	}()
	signaller := forker
	if !sameThread {
		signaller = startLockedThread()
	}
	done := make(chan error)
	signaller <- func() { done <- unix.Kill(cmd.Process.Pid, 0) }
	return <-done
}
