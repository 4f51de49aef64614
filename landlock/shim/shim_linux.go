package shim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/landlock"
)

// execStagePath is the binary the shim starts as the exec stage: itself, at
// the path the plan grants read+exec on. Tests point it at the test binary.
var execStagePath = Path

// statusFD is the write end of the status pipe the supervisor passes.
const statusFD = 3

// lifelineFD is the read end of a pipe whose only write end the supervisor
// holds for the whole invocation: EOF on it means the supervisor is gone,
// and the sandbox must go with it. (libcontainer's parent-death signal does
// not survive its own multi-stage start, measured here.)
const lifelineFD = 4

// maxConfig bounds the config the shim reads.
const maxConfig = 1 << 20

// forwardedSignals are passed on to the skill. As pid 1 the shim would
// otherwise ignore them all: the kernel drops signals a namespace's init
// has no handler for.
var forwardedSignals = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// Main is the ShimCommand subcommand, the container process: args is
// [configPath]. It returns the skill's exit code (128+N when a signal N
// killed it), or 125 when setup failed, after saying why on stderr and on
// the status pipe. On success it writes nothing on stdout or stderr.
func Main(args []string) int {
	// The config is read and checked before the shim starts any thread of
	// its own (LockOSThread, signal.Notify and the lifeline each cost one):
	// a config refused is then refused for its own reason, even when a
	// skill runs this binary again under its RLIMIT_NPROC.
	status := adoptStatusPipe()
	if len(args) != 1 {
		return fail(status, "args", fmt.Errorf("usage: %s %s CONFIG", Path, ShimCommand))
	}
	cfg, err := readConfig(args[0])
	if err != nil {
		return fail(status, "config", err)
	}
	// Everything from here on, the skill included, runs under the filter.
	if err := loadSeccomp(cfg.Seccomp); err != nil {
		return fail(status, "seccomp", err)
	}
	// Below ABI 8 go-landlock restricts each thread on its own (libpsx) and
	// each gets a Landlock domain of its own; signal scoping then lets only
	// the thread that forked the skill signal it. So the shim forks and
	// signals from this one thread, which is never unlocked.
	goruntime.LockOSThread()
	// Subscribed before the skill exists: a signal that arrives during the
	// rest of the setup is passed on once the child exists, and no exit is
	// missed.
	signals := make(chan os.Signal, 32)
	signal.Notify(signals, forwardedSignals...)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	lost := watchLifeline()
	if err := checkGrants(cfg); err != nil {
		return fail(status, "landlock", err)
	}
	res, err := landlock.Restrict(cfg.Landlock, cfg.MinLandlockABI, cfg.AllowDegraded)
	if err != nil {
		return fail(status, "landlock", err)
	}
	pid, err := startExecStage(cfg)
	if err != nil {
		return fail(status, "start", err)
	}
	// Reported once the child exists, so that a failure to start it still
	// reaches the supervisor; fd 3 is close-on-exec and never reaches it.
	if err := writeStatusLine(status, Status{LandlockABI: res.ABI, Landlock: &res, Seccomp: true}); err != nil {
		// Nobody would record this run: it must not go on.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		fmt.Fprintf(os.Stderr, "skillrun shim: status: %v\n", err)
		supervise(pid, nil, children, nil)
		return setupFailed
	}
	code, sig := supervise(pid, signals, children, lost)
	// A last line says how the skill ended: the shim's own exit code cannot
	// tell a skill killed by SIGKILL (the OOM killer) from one that exited
	// 137 by itself.
	_ = writeStatus(status, Status{LandlockABI: res.ABI, Ended: true, ExitCode: code, Signal: int(sig)})
	return code
}

// loadSeccomp installs prog, already checked by Config.Validate, on every
// thread of the shim at once (SECCOMP_FILTER_FLAG_TSYNC): whatever thread
// later forks the exec stage hands it on. no_new_privs is set first, which
// the kernel requires of a process without CAP_SYS_ADMIN (libcontainer has
// set it already; setting it again changes nothing).
func loadSeccomp(prog []byte) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	filters := make([]unix.SockFilter, len(prog)/8)
	for i := range filters {
		b := prog[8*i:]
		filters[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.NativeEndian.Uint32(b[4:]),
		}
	}
	if len(filters) == 0 {
		return errors.New("empty seccomp program")
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	goruntime.KeepAlive(filters)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): thread %d could not take the filter", r)
	}
	return nil
}

// watchLifeline returns a channel closed when the supervisor's end of the
// lifeline pipe closes; nil (never closed) when there is no lifeline.
func watchLifeline() <-chan struct{} {
	var st unix.Stat_t
	if err := unix.Fstat(lifelineFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	unix.CloseOnExec(lifelineFD)
	f := os.NewFile(lifelineFD, "shim-lifeline")
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		var b [1]byte
		for {
			if _, err := f.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return lost
}

// adoptStatusPipe takes over fd 3 if it is a pipe, marking it close-on-exec
// so that nothing started later inherits it. Without one (the shim run by
// hand) there is nobody to report to.
func adoptStatusPipe() *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(statusFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	unix.CloseOnExec(statusFD)
	return os.NewFile(statusFD, "shim-status")
}

// writeStatus writes st as one JSON line and closes the pipe.
func writeStatus(f *os.File, st Status) error {
	if f == nil {
		return nil
	}
	defer f.Close()
	return writeStatusLine(f, st)
}

// writeStatusLine writes st as one JSON line, leaving the pipe open.
func writeStatusLine(f *os.File, st Status) error {
	if f == nil {
		return nil
	}
	line, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}

func fail(status *os.File, step string, err error) int {
	fmt.Fprintf(os.Stderr, "skillrun shim: %s: %v\n", step, err)
	_ = writeStatus(status, Status{Error: err.Error(), Step: step})
	return setupFailed
}

// readConfig reads the config file, or takes the argument itself as
// the config when it is inline JSON: what Exec passes for a command run in
// an already running sandbox, whose root file system is read-only.
func readConfig(path string) (Config, error) {
	if strings.HasPrefix(path, "{") {
		if len(path) > maxConfig {
			return Config{}, fmt.Errorf("%w: inline config larger than %d bytes", ErrConfig, maxConfig)
		}
		var cfg Config
		if err := json.Unmarshal([]byte(path), &cfg); err != nil {
			return Config{}, fmt.Errorf("%w: inline: %w", ErrConfig, err)
		}
		return cfg, cfg.Validate()
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxConfig {
		return Config{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrConfig, path, maxConfig)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return cfg, cfg.Validate()
}

// checkGrants refuses a plan under which the skill could not start, so the
// cause is named here rather than surfacing as a bare 126 from execve: the
// skill folder must be mounted, and the plan must grant read+exec on the
// entrypoint and on the exec stage.
func checkGrants(cfg Config) error {
	dir := filepath.Dir(cfg.Entrypoint)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("skill folder: %w (is it mounted in the sandbox?)", err)
	}
	for _, p := range []string{cfg.Entrypoint, execStagePath} {
		if g := landlock.Granted(cfg.Landlock.Rules, p); !g.Read || !g.Exec {
			return fmt.Errorf("the plan grants no read+exec on %s", p)
		}
	}
	return nil
}

// startExecStage starts the exec stage as the invocation's uid and gid,
// with no supplementary groups, an empty environment and only fds 0-2.
// After setuid to a non-zero uid the kernel clears its capabilities. It
// uses syscall.ForkExec, not os/exec: the shim reaps every child with
// wait4(-1) itself, which would race with an os.Process waiting for one.
func startExecStage(cfg Config) (int, error) {
	spec, err := json.Marshal(ExecSpec{
		Protocol: Protocol, Entrypoint: cfg.Entrypoint, Args: cfg.Args, Env: cfg.Env, Dir: cfg.Dir, Rlimits: cfg.Rlimits,
	})
	if err != nil {
		return 0, err
	}
	pid, err := syscall.ForkExec(execStagePath, []string{execStagePath, ExecCommand, string(spec)}, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   []string{},
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}},
			// A command run into a live sandbox (not pid 1) gets a group of
			// its own, so a timeout kills all it started and nothing else.
			// The entrypoint keeps the terminal's group: job control.
			Setpgid: os.Getpid() != 1,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("exec stage %s as uid %d: %w", execStagePath, cfg.UID, err)
	}
	return pid, nil
}

// supervise forwards signals to main and reaps every child (orphans are
// re-parented to pid 1) until main exits, and returns main's exit code.
// What main leaves behind dies with the pid namespace when the shim exits.
func supervise(main int, signals, children <-chan os.Signal, lost <-chan struct{}) (int, syscall.Signal) {
	var pending []syscall.Signal
	for {
		ws, exited, err := reapChildren(main)
		if err != nil {
			fmt.Fprintf(os.Stderr, "skillrun shim: wait: %v\n", err)
			return setupFailed, 0
		}
		if exited {
			if ws.Signaled() {
				return exitCode(ws), ws.Signal()
			}
			return exitCode(ws), 0
		}
		// Only this loop reaps, and main was not reaped just now, so its
		// pid cannot have been reused: the signal reaches the skill.
		for _, s := range pending {
			_ = syscall.Kill(main, s)
		}
		pending = pending[:0]
		select {
		case s := <-signals:
			pending = append(pending, s.(syscall.Signal))
		case <-children:
		case <-lost:
			// The supervisor died (or, for a command run into the sandbox,
			// gave up on it): as pid 1 kill every process of the namespace
			// (kill(-1) spares the caller); otherwise the command's group.
			if os.Getpid() == 1 {
				fmt.Fprintln(os.Stderr, "skillrun shim: the supervisor is gone; killing the skill")
				_ = syscall.Kill(-1, syscall.SIGKILL)
			} else {
				_ = syscall.Kill(-main, syscall.SIGKILL)
			}
			lost = nil
		}
	}
}

// reapChildren reaps every child that has exited, without blocking, and
// reports main's status if main was among them.
func reapChildren(main int) (syscall.WaitStatus, bool, error) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, false, fmt.Errorf("wait4: %w", err)
		case pid == main:
			return ws, true, nil
		case pid <= 0:
			return 0, false, nil
		}
	}
}

// exitCode reads a wait status the way a shell does.
func exitCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return setupFailed
}

// ExecStageMain is the ExecCommand subcommand, run by the shim as the
// invocation's uid: args is [the JSON ExecSpec]. It leaves only fds 0-2 to
// the skill, applies the rlimits (RLIMIT_AS last) and execs the entrypoint
// without a PATH lookup. It returns only on failure: 127 when the
// entrypoint (or its #! interpreter) does not exist, 126 when it cannot be
// executed, 125 when the stage itself could not set up.
func ExecStageMain(args []string) int {
	spec, step, err := parseExecSpec(args)
	if err != nil {
		return execStageFail(step, err)
	}
	// The skill never runs as root; reaching here as root means the shim
	// did not switch ids.
	if os.Getuid() == 0 || os.Geteuid() == 0 || os.Getgid() == 0 || os.Getegid() == 0 {
		return execStageFail("credentials", errors.New("running as uid or gid 0"))
	}
	// Marked close-on-exec rather than closed: the Go runtime may own some
	// of them (its poller) until execve.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return execStageFail("close_range", err)
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return execStageFail("chdir", err)
		}
	}
	var as *Rlimit
	for _, r := range spec.Rlimits {
		if r.Resource == unix.RLIMIT_AS {
			as = &r
			continue
		}
		if err := unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Soft, Max: r.Hard}); err != nil {
			return execStageFail("setrlimit "+r.Name, err)
		}
	}
	return execSkill(spec.Entrypoint, append([]string{spec.Entrypoint}, spec.Args...), spec.Env, as)
}

func execStageFail(step string, err error) int {
	fmt.Fprintf(os.Stderr, "skillrun: exec stage: %s: %v\n", step, err)
	return setupFailed
}

// execSkill sets RLIMIT_AS, if any, and calls execve with nothing allocated
// in between: once the limit is below what the Go runtime has mapped, every
// mmap fails, so the message for a failed execve goes through a buffer made
// beforehand.
func execSkill(path string, argv, env []string, as *Rlimit) int {
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return execFailed(path, err)
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return execFailed(path, err)
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return execFailed(path, err)
	}
	msg := make([]byte, 0, len(path)+128)
	goruntime.LockOSThread()
	if as != nil {
		lim := unix.Rlimit{Cur: as.Soft, Max: as.Hard}
		if _, _, e := unix.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_AS, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
			return execStageFail("setrlimit "+as.Name, e) // not lowered: allocating is fine
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	msg = append(msg, "skillrun: exec "...)
	msg = append(msg, path...)
	msg = append(msg, ": "...)
	msg = append(msg, e.Error()...)
	msg = append(msg, '\n')
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, 2, uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
	return execExitCode(e)
}

func execFailed(path string, err error) int {
	fmt.Fprintf(os.Stderr, "skillrun: exec %s: %v\n", path, err)
	var errno syscall.Errno
	errors.As(err, &errno)
	return execExitCode(errno)
}

// execExitCode maps an execve errno to the shell's codes: 127 not found
// (a missing #! interpreter too), 126 anything else that cannot run.
func execExitCode(e syscall.Errno) int {
	if e == syscall.ENOENT {
		return 127
	}
	return 126
}
