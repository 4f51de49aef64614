package shim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/landlock"
)

// init lets the tests below run this test binary as the skillrun binary's
// ExecCommand subcommand; in any other run it does nothing.
func init() {
	if len(os.Args) > 1 && os.Args[1] == ExecCommand {
		os.Exit(ExecStageMain(os.Args[2:]))
	}
}

const shimConfigEnv = "SKILLRUN_SHIM_TEST_CONFIG"

// TestShimProcess is the shim side of runShim. It calls Main from a
// test, not from init as ExecCommand is: during init Go pins the goroutine to
// the main thread, which would hide the thread a real shim runs on.
func TestShimProcess(t *testing.T) {
	config := os.Getenv(shimConfigEnv)
	if config == "" {
		t.Skip("helper process of runShim; does nothing on its own")
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	execStagePath = exe
	// Outside a pid namespace orphans go to the host's init; as a
	// subreaper the shim gets them as it would as pid 1.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(Main([]string{config}))
}

// The unprivileged ids the tests switch to, as the supervisor would.
const nobody = 65534

var shimRoot = need{func() bool { return os.Geteuid() == 0 },
	"needs root: the shim switches to uid 65534"}

func shimLandlock(n int) need {
	abi, err := landlock.ABI()
	return need{func() bool { return err == nil && abi >= n },
		fmt.Sprintf("needs Landlock ABI %d: %v %v", n, abi, err)}
}

// shimTestDir is a directory uid 65534 can enter (t.TempDir is 0700) with
// a copy of this test binary in it, to be run as the shim or exec stage.
func shimTestDir(t *testing.T) (dir, exe string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "skillrun-shim-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "skillrun")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, exe
}

func shimWriteFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// runExecStage runs the exec stage with spec as uid 65534 when root (it
// refuses to run as root), with an extra open descriptor that must not
// reach the entrypoint.
func runExecStage(t *testing.T, exe string, spec string, asRoot bool) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(exe, ExecCommand, spec)
	if os.Geteuid() == 0 && !asRoot {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	}
	leak, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	cmd.ExtraFiles = []*os.File{leak}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestExecStageLimitsAndDescriptors(t *testing.T) {
	dir, exe := shimTestDir(t)
	spec, _ := json.Marshal(ExecSpec{
		Protocol:   Protocol,
		Entrypoint: "/bin/sh",
		Args:       []string{"-c", `cat /proc/self/limits; echo fds $(ls /proc/self/fd); pwd; echo "$FOO-${HOME:-nohome}"`},
		Env:        []string{"FOO=bar"},
		Dir:        dir,
		Rlimits: []Rlimit{
			{Name: "RLIMIT_AS", Resource: unix.RLIMIT_AS, Soft: 1 << 30, Hard: 1 << 30}, // first here, applied last
			{Name: "RLIMIT_NPROC", Resource: unix.RLIMIT_NPROC, Soft: 1000, Hard: 1000},
			{Name: "RLIMIT_NOFILE", Resource: unix.RLIMIT_NOFILE, Soft: 64, Hard: 64},
			{Name: "RLIMIT_CORE", Resource: unix.RLIMIT_CORE, Soft: 0, Hard: 0},
		},
	})
	out, stderr, code := runExecStage(t, exe, string(spec), false)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	limits := map[string][]string{}
	for line := range strings.Lines(out) {
		if name, rest, ok := strings.Cut(line, "  "); ok && strings.HasPrefix(name, "Max ") {
			limits[name] = strings.Fields(rest)
		}
	}
	for name, want := range map[string][]string{
		"Max address space":   {"1073741824", "1073741824", "bytes"},
		"Max processes":       {"1000", "1000", "processes"},
		"Max open files":      {"64", "64", "files"},
		"Max core file size":  {"0", "0", "bytes"},
		"Max cpu time":        {"unlimited", "unlimited", "seconds"},
		"Max file locks":      {"unlimited", "unlimited", "locks"},
		"Max pending signals": nil, // untouched: whatever the host has
	} {
		if got := limits[name]; want != nil && !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// ls opens the directory on the lowest free descriptor: 3 unless the
	// extra descriptor leaked.
	for _, want := range []string{"fds 0 1 2 3\n", dir + "\n", "bar-nohome\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestExecStageFailures(t *testing.T) {
	dir, exe := shimTestDir(t)
	shimWriteFile(t, filepath.Join(dir, "plain"), "echo hi\n", 0o644)
	shimWriteFile(t, filepath.Join(dir, "nointerp"), "#!/nonexistent/interpreter\n", 0o755)
	spec := func(entry string) string {
		b, _ := json.Marshal(ExecSpec{Protocol: Protocol, Entrypoint: entry, Dir: dir})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		spec   string
		asRoot bool
		code   int
		stderr string
	}{
		{"missing entrypoint", spec(filepath.Join(dir, "missing")), false, 127,
			"skillrun: exec " + filepath.Join(dir, "missing") + ": no such file or directory\n"},
		{"missing #! interpreter", spec(filepath.Join(dir, "nointerp")), false, 127,
			"skillrun: exec " + filepath.Join(dir, "nointerp") + ": no such file or directory\n"},
		{"not executable", spec(filepath.Join(dir, "plain")), false, 126,
			"skillrun: exec " + filepath.Join(dir, "plain") + ": permission denied\n"},
		{"a directory", spec(dir), false, 126, "skillrun: exec " + dir + ": permission denied\n"},
		{"bad spec", "{", false, 125, "skillrun: exec stage: config: unexpected end of JSON input\n"},
		{"as root", spec("/bin/true"), true, 125, "skillrun: exec stage: credentials: running as uid or gid 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asRoot {
				requires(t, shimRoot)
			}
			out, stderr, code := runExecStage(t, exe, tc.spec, tc.asRoot)
			if code != tc.code || stderr != tc.stderr || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr, out, tc.code, tc.stderr)
			}
		})
	}
}

// shimFixture is a skill folder, the shim binary and a config that
// confines the skill to what it needs.
type shimFixture struct {
	dir, exe, skill string
	cfg             Config
}

func newShimFixture(t *testing.T) shimFixture {
	t.Helper()
	dir, exe := shimTestDir(t)
	skill := filepath.Join(dir, "skill")
	return shimFixture{dir: dir, exe: exe, skill: skill, cfg: Config{Protocol: Protocol,
		Entrypoint: filepath.Join(skill, "main"),
		Env:        []string{"PATH=/usr/bin:/bin", "FOO=bar"},
		Dir:        skill,
		UID:        nobody, GID: nobody,
		Landlock: landlock.Plan{
			Rules: []landlock.FSRule{
				{Path: "/usr", Dir: true, Read: true, Exec: true},
				{Path: "/etc/ld.so.cache", Read: true},
				{Path: "/proc", Dir: true, Read: true},
				{Path: "/dev/null", Read: true, Write: true},
				{Path: skill, Dir: true, Read: true, Exec: true},
				{Path: exe, Read: true, Exec: true},
			},
			DenyTCPBind: true, DenyTCPConnect: true, ScopeAbstract: true, ScopeSignal: true,
		},
		MinLandlockABI: 1,
		Rlimits: []Rlimit{
			{Name: "RLIMIT_NOFILE", Resource: unix.RLIMIT_NOFILE, Soft: 256, Hard: 256},
			{Name: "RLIMIT_AS", Resource: unix.RLIMIT_AS, Soft: 1 << 30, Hard: 1 << 30},
		},
		Seccomp: denyUname,
	}}
}

// denyUname is a seccomp program that fails uname(2) with EPERM and allows
// everything else: what a test skill can tell apart from no filter.
var denyUname = bpfProgram(
	unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the syscall number
	unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_UNAME},
	unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
)

func bpfProgram(ins ...unix.SockFilter) []byte {
	var out []byte
	for _, in := range ins {
		out = binary.NativeEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out
}

// shimRun is what one run of the shim left.
type shimRun struct {
	stdout, stderr string
	code           int
	status         Status
	statusLines    int
}

// runShim runs the shim on config with a status pipe on fd 3. When ready
// is set, it waits for that line of output and then sends the shim SIGTERM.
func runShim(t *testing.T, f shimFixture, config []byte, ready string) shimRun {
	t.Helper()
	path := filepath.Join(f.dir, "shim.json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer statusR.Close()
	// As libcontainer starts it: root with only CAP_SETUID, CAP_SETGID and
	// CAP_KILL (so no DAC override), and no_new_privs.
	args := []string{f.exe, "-test.run=^TestShimProcess$", "-test.count=1"}
	if setpriv, err := exec.LookPath("setpriv"); err == nil {
		args = append([]string{setpriv, "--bounding-set=-all,+setuid,+setgid,+kill", "--inh-caps=-all", "--no-new-privs"}, args...)
	} else {
		t.Log("setpriv (util-linux) not found: the shim runs with all of root's capabilities")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), shimConfigEnv+"="+path, "SKILLRUN_SHIM_TEST_LEAK=leaked")
	cmd.ExtraFiles = []*os.File{statusW}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	statusW.Close()
	var out strings.Builder
	r := bufio.NewReader(stdout)
	if ready != "" {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil || line != ready+"\n" {
			t.Errorf("waiting for %q: got %q, %v", ready, line, err)
		}
		// Long enough for the shim's goroutine to park and wake up on
		// another thread, as it does in production.
		time.Sleep(300 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Error(err)
		}
	}
	rest, _ := io.ReadAll(r)
	out.Write(rest)
	if err := cmd.Wait(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	run := shimRun{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
	status, _ := io.ReadAll(statusR)
	for line := range strings.Lines(string(status)) {
		run.statusLines++
		if err := json.Unmarshal([]byte(line), &run.status); err != nil {
			t.Errorf("status line %q: %v", line, err)
		}
	}
	return run
}

func shimJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestShimRunsSkill(t *testing.T) {
	requires(t, shimRoot, shimLandlock(1))
	abi, err := landlock.ABI()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script string
		ready        string // send SIGTERM after this line
		code         int
		stdout       string // with {{skill}} for the skill folder
	}{
		{name: "confined as the invocation's uid, exit code passed on", code: 7,
			script: `id -u; id -g
echo "$FOO ${SKILLRUN_SHIM_TEST_LEAK:-clean}"
cat /etc/passwd >/dev/null 2>&1 && echo passwd-readable || echo passwd-denied
[ -e /proc/$$/fd/3 ] && echo fd3-leaked || echo fd3-closed
grep -E '^(CapPrm|CapEff|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\t'
uname >/dev/null 2>&1 && echo uname-allowed || echo uname-denied
pwd
exit 7`,
			stdout: "65534\n65534\nbar clean\npasswd-denied\nfd3-closed\n" +
				"CapPrm:0000000000000000\nCapEff:0000000000000000\nCapAmb:0000000000000000\nNoNewPrivs:1\nSeccomp:2\n" +
				"uname-denied\n{{skill}}\n"},
		{name: "killed by a signal", script: `kill -KILL $$`, code: 128 + 9},
		{name: "SIGTERM to the shim reaches the skill", ready: "ready", code: 3,
			script: `trap 'echo got TERM; exit 3' TERM
echo ready
i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; echo no TERM`,
			stdout: "ready\ngot TERM\n"},
		{name: "orphans are reaped", code: 0,
			script: `sh -c 'sleep 0.1 & exit 0'
sleep 0.6
z=0
for s in /proc/[0-9]*/status; do
	grep -q '^State:.*zombie' "$s" 2>/dev/null && grep -q "^PPid:[[:space:]]*$PPID\$" "$s" 2>/dev/null && z=$((z+1))
done
echo zombies=$z`,
			stdout: "zombies=0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newShimFixture(t)
			shimWriteFile(t, f.cfg.Entrypoint, "#!/bin/sh\n"+tc.script+"\n", 0o755)
			run := runShim(t, f, shimJSON(t, f.cfg), tc.ready)
			want := strings.ReplaceAll(tc.stdout, "{{skill}}", f.skill)
			if run.code != tc.code || run.stdout != want || run.stderr != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", run.code, run.stdout, run.stderr, tc.code, want)
			}
			// Two lines: Landlock in place, then how the skill ended (the
			// signal that killed it, which its exit code alone cannot say).
			wantSignal := 0
			if tc.code > 128 {
				wantSignal = tc.code - 128
			}
			if run.statusLines != 2 || run.status.LandlockABI != min(abi, 11) || run.status.Error != "" ||
				run.status.Landlock == nil || run.status.Landlock.Rules != len(f.cfg.Landlock.Rules) ||
				!run.status.Ended || run.status.ExitCode != tc.code || run.status.Signal != wantSignal || !run.status.Seccomp {
				t.Errorf("%d status lines, last %+v; want two, with landlock_abi %d, then exit %d signal %d", run.statusLines, run.status, abi, tc.code, wantSignal)
			}
		})
	}
}

func TestShimExecFailure(t *testing.T) {
	requires(t, shimRoot, shimLandlock(1))
	f := newShimFixture(t)
	if err := os.MkdirAll(f.skill, 0o755); err != nil {
		t.Fatal(err)
	}
	run := runShim(t, f, shimJSON(t, f.cfg), "")
	want := "skillrun: exec " + f.cfg.Entrypoint + ": no such file or directory\n"
	if run.code != 127 || run.stderr != want || run.status.Error != "" || run.status.LandlockABI == 0 {
		t.Errorf("exit %d, stderr %q, status %+v; want 127, %q and a good status", run.code, run.stderr, run.status, want)
	}
}

func TestShimSetupFailures(t *testing.T) {
	requires(t, shimRoot, shimLandlock(1))
	for _, tc := range []struct {
		name   string
		edit   func(f *shimFixture) []byte
		step   string
		reason string // in the status error
	}{
		{"config is not JSON", func(*shimFixture) []byte { return []byte("{") }, "config", "unexpected end of JSON input"},
		{"uid 0", func(f *shimFixture) []byte { f.cfg.UID = 0; return shimJSON(t, f.cfg) }, "config", "unprivileged uid"},
		{"relative entrypoint", func(f *shimFixture) []byte { f.cfg.Entrypoint = "main"; return shimJSON(t, f.cfg) }, "config", "absolute"},
		{"soft rlimit above hard", func(f *shimFixture) []byte {
			f.cfg.Rlimits = []Rlimit{{Name: "RLIMIT_NOFILE", Resource: unix.RLIMIT_NOFILE, Soft: 2, Hard: 1}}
			return shimJSON(t, f.cfg)
		}, "config", "RLIMIT_NOFILE"},
		{"minimum ABI above the kernel", func(f *shimFixture) []byte { f.cfg.MinLandlockABI = 99; return shimJSON(t, f.cfg) },
			"landlock", "landlock ABI below the required minimum"},
		{"no exec on the entrypoint", func(f *shimFixture) []byte {
			f.cfg.Landlock.Rules = slices.DeleteFunc(f.cfg.Landlock.Rules, func(r landlock.FSRule) bool { return r.Path == f.skill })
			return shimJSON(t, f.cfg)
		}, "landlock", "grants no read+exec on " + "{{entry}}"},
		{"no exec on the exec stage", func(f *shimFixture) []byte {
			f.cfg.Landlock.Rules = slices.DeleteFunc(f.cfg.Landlock.Rules, func(r landlock.FSRule) bool { return r.Path == f.exe })
			return shimJSON(t, f.cfg)
		}, "landlock", "grants no read+exec on " + "{{exe}}"},
		{"skill folder not mounted", func(f *shimFixture) []byte { os.RemoveAll(f.skill); return shimJSON(t, f.cfg) },
			"landlock", "skill folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newShimFixture(t)
			shimWriteFile(t, f.cfg.Entrypoint, "#!/bin/sh\necho ran\n", 0o755)
			config := tc.edit(&f)
			run := runShim(t, f, config, "")
			reason := strings.NewReplacer("{{entry}}", f.cfg.Entrypoint, "{{exe}}", f.exe).Replace(tc.reason)
			if run.code != 125 || run.stdout != "" {
				t.Errorf("exit %d, stdout %q; want 125 and no output", run.code, run.stdout)
			}
			if run.statusLines != 1 || run.status.Step != tc.step || !strings.Contains(run.status.Error, reason) {
				t.Errorf("%d status lines, last %+v; want step %q, error with %q", run.statusLines, run.status, tc.step, reason)
			}
			if want := "skillrun shim: " + tc.step + ": "; !strings.HasPrefix(run.stderr, want) || strings.Count(run.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", run.stderr, want)
			}
		})
	}
}

func TestShimExitCode(t *testing.T) {
	for _, tc := range []struct {
		ws   syscall.WaitStatus
		want int
	}{
		{0, 0},
		{7 << 8, 7},
		{255 << 8, 255},
		{syscall.WaitStatus(syscall.SIGKILL), 137},
		{syscall.WaitStatus(syscall.SIGTERM) | 0x80, 143}, // with a core dump
	} {
		if got := exitCode(tc.ws); got != tc.want {
			t.Errorf("exitCode(%#x) = %d, want %d", uint32(tc.ws), got, tc.want)
		}
	}
}

// TestExecStageTinyAddressSpace sets RLIMIT_AS far below what the exec
// stage's Go runtime has mapped: from then on every mmap fails, so both the
// execve and the message of a failed one must do without.
func TestExecStageTinyAddressSpace(t *testing.T) {
	dir, exe := shimTestDir(t)
	as := Rlimit{Name: "RLIMIT_AS", Resource: unix.RLIMIT_AS, Soft: 32 << 20, Hard: 32 << 20}
	for _, tc := range []struct {
		name, entry, stdout, stderr string
		code                        int
	}{
		{"runs", "/bin/sh", "Max address space         33554432             33554432             bytes     \n", "", 0},
		{"fails to exec", filepath.Join(dir, "missing"), "", "skillrun: exec " + filepath.Join(dir, "missing") + ": no such file or directory\n", 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _ := json.Marshal(ExecSpec{Protocol: Protocol, Entrypoint: tc.entry, Args: []string{"-c", "grep 'address space' /proc/self/limits"},
				Rlimits: []Rlimit{as}})
			out, stderr, code := runExecStage(t, exe, string(spec), false)
			if code != tc.code || out != tc.stdout || stderr != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

type need struct {
	ok  func() bool
	why string
}

func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if !n.ok() {
			t.Skip(n.why)
		}
	}
}

// TestProtocolMismatch: a config or exec spec from a skillrun of another
// build is refused, naming both protocol numbers, before anything runs.
func TestProtocolMismatch(t *testing.T) {
	cfg := Config{Protocol: Protocol + 1, Entrypoint: "/skill/main", UID: nobody, GID: nobody, Seccomp: denyUname}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("protocol %d, this shim speaks %d", Protocol+1, Protocol)) {
		t.Fatalf("Validate of protocol %d: %v, want a protocol mismatch", Protocol+1, err)
	}
	cfg.Protocol = Protocol
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate of this protocol: %v", err)
	}
	spec, _ := json.Marshal(ExecSpec{Entrypoint: "/bin/true"})
	_, stderr, code := runExecStage(t, testBinary(t), string(spec), false)
	if code != setupFailed || !strings.Contains(stderr, "protocol 0") {
		t.Fatalf("exec stage of an old spec: exit %d, stderr %q; want %d and a protocol mismatch", code, stderr, setupFailed)
	}
}

func testBinary(t *testing.T) string {
	t.Helper()
	_, exe := shimTestDir(t)
	return exe
}

// TestSeccompProgramChecked: a config whose program the kernel could not
// take is refused before the shim does anything.
func TestSeccompProgramChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog []byte
	}{
		{"missing", nil},
		{"a partial instruction", denyUname[:len(denyUname)-3]},
		{"over the kernel's 4096 instructions", make([]byte, 8*(maxFilter+1))},
	} {
		cfg := Config{Protocol: Protocol, Entrypoint: "/skill/main", UID: nobody, GID: nobody, Seccomp: tc.prog}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "seccomp: a program of") {
			t.Errorf("%s: Validate = %v, want a seccomp refusal", tc.name, err)
		}
	}
}

// TestSubcommandNames: only this protocol's names run anything; the names
// of another (or of the shim before protocols, "__shim" and "__exec") are
// not recognised, so a binary of another build refuses before it acts.
func TestSubcommandNames(t *testing.T) {
	if !strings.HasSuffix(ShimCommand, fmt.Sprintf(".v%d", Protocol)) || !strings.HasSuffix(ExecCommand, fmt.Sprintf(".v%d", Protocol)) {
		t.Fatalf("ShimCommand %q and ExecCommand %q must name protocol %d", ShimCommand, ExecCommand, Protocol)
	}
	for _, args := range [][]string{
		{"__shim", "{}"}, {"__exec", "{}"},
		{fmt.Sprintf("__shim.v%d", Protocol+1), "{}"}, {fmt.Sprintf("__exec.v%d", Protocol+1), "{}"},
		{"version"}, {},
	} {
		if code, ok := Subcommand(args); ok {
			t.Errorf("Subcommand(%q) ran (exit %d); want it not recognised", args, code)
		}
	}
	// The current name is recognised; a refused spec shows it ran.
	code, ok := Subcommand([]string{ExecCommand, "not json"})
	if !ok || code != setupFailed {
		t.Errorf("Subcommand(%s, bad spec) = %d, %v; want %d, true", ExecCommand, code, ok, setupFailed)
	}
}
