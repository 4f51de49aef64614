package landlock

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tree is a small file system the restricted children act on.
type tree struct {
	root, ro, rw, out, noexec, file, sibling string
}

// newTree builds the fixture and the plan that confines a child to it:
// read+exec on /usr, read on ro/ and on one file, read+write on rw/, read
// but no exec on noexec/, nothing on out/ and on the file's sibling.
func newTree(t *testing.T) (tree, Plan) {
	t.Helper()
	root := t.TempDir()
	tr := tree{
		root: root, ro: filepath.Join(root, "ro"), rw: filepath.Join(root, "rw"),
		out: filepath.Join(root, "out"), noexec: filepath.Join(root, "noexec"),
		file: filepath.Join(root, "file.txt"), sibling: filepath.Join(root, "sibling.txt"),
	}
	trueBin, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{
		filepath.Join(tr.ro, "f.txt"): "ro", filepath.Join(tr.rw, "a", "x.txt"): "x",
		filepath.Join(tr.out, "secret.txt"): "secret", tr.file: "file", tr.sibling: "sibling",
		filepath.Join(tr.noexec, "true"): string(trueBin),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(tr.rw, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := Plan{
		Rules: []FSRule{
			{Path: "/usr", Dir: true, Read: true, Exec: true},
			{Path: "/etc/ld.so.cache", Read: true},
			{Path: "/dev/null", Read: true, Write: true},
			{Path: tr.ro, Dir: true, Read: true},
			{Path: tr.rw, Dir: true, Read: true, Write: true},
			{Path: tr.noexec, Dir: true, Read: true},
			{Path: tr.file, Read: true},
		},
		DenyTCPBind: true, DenyTCPConnect: true, ScopeAbstract: true, ScopeSignal: true,
	}
	return tr, plan
}

const eacces, eperm = int(syscall.EACCES), int(syscall.EPERM)

func TestRestrictFiles(t *testing.T) {
	requires(t, landlockABI(2))
	tr, plan := newTree(t)
	for _, tc := range []struct {
		name, action, arg string
		stdin             string
		errno, exit       int
		out               string
	}{
		{name: "read under a Read rule", action: "read", arg: filepath.Join(tr.ro, "f.txt"), out: "ro"},
		{name: "read under a file rule", action: "read", arg: tr.file, out: "file"},
		{name: "read the file rule's sibling", action: "read", arg: tr.sibling, errno: eacces},
		{name: "read outside every rule", action: "read", arg: filepath.Join(tr.out, "secret.txt"), errno: eacces},
		{name: "write under a Read rule", action: "open-write", arg: filepath.Join(tr.ro, "f.txt"), errno: eacces},
		{name: "create under a Read rule", action: "write", arg: filepath.Join(tr.ro, "new"), errno: eacces},
		{name: "create under a Write rule", action: "write", arg: filepath.Join(tr.rw, "new")},
		{name: "rename between directories of a Write tree", action: "rename",
			arg: filepath.Join(tr.rw, "a", "x.txt") + "|" + filepath.Join(tr.rw, "b", "x.txt")},
		{name: "write /dev/null", action: "write", arg: "/dev/null"},
		{name: "read the inherited stdin", action: "read-stdin", stdin: "hello", out: "hello"},
		{name: "exec under an Exec rule", action: "exec", arg: "/usr/bin/true"},
		{name: "exec under a rule without Exec", action: "exec", arg: filepath.Join(tr.noexec, "true"), errno: eacces},
		{name: "a child started afterwards is confined", action: "spawn-cat", arg: filepath.Join(tr.out, "secret.txt"), exit: 1},
		{name: "a child started afterwards reads its grants", action: "spawn-cat", arg: filepath.Join(tr.ro, "f.txt"), out: "ro"},
		{name: "a thread started before is confined", action: "thread-read", arg: filepath.Join(tr.out, "secret.txt"), errno: eacces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdin io.Reader
			if tc.stdin != "" {
				stdin = strings.NewReader(tc.stdin)
			}
			o := runRestricted(t, probe{Plan: plan, MinABI: 1, Action: tc.action, Arg: tc.arg}, stdin)
			if o.RestrictEr != "" {
				t.Fatalf("Restrict: %s", o.RestrictEr)
			}
			if o.Errno != tc.errno || o.ExitCode != tc.exit {
				t.Errorf("errno %d, exit %d (%s); want errno %d, exit %d", o.Errno, o.ExitCode, o.ActErr, tc.errno, tc.exit)
			}
			if tc.out != "" && o.Out != tc.out {
				t.Errorf("output %q, want %q", o.Out, tc.out)
			}
			if tc.exit != 0 && !strings.Contains(o.Out, "Permission denied") {
				t.Errorf("cat said %q, want Permission denied", o.Out)
			}
		})
	}
}

func TestRestrictResult(t *testing.T) {
	requires(t, landlockABI(6))
	tr, plan := newTree(t)
	plan.Rules = append(plan.Rules,
		FSRule{Path: filepath.Join(tr.root, "missing"), Dir: true, Read: true},
		FSRule{Path: "/nonexistent/x", Read: true},
		FSRule{Path: tr.out, Dir: true}) // no rights: not a rule
	o := runRestricted(t, probe{Plan: plan, MinABI: 6, Action: "read", Arg: filepath.Join(tr.ro, "f.txt")}, nil)
	abi, kernel, _ := usableABI()
	want := Result{ABI: abi, KernelABI: kernel, Rules: 7, Skipped: 2, Net: true, Scoped: true,
		SkippedPaths: []string{filepath.Join(tr.root, "missing"), "/nonexistent/x"}}
	if abi < 9 {
		want.Unenforced = []string{"resolve_unix"}
	}
	got := o.Result
	if o.RestrictEr != "" || o.Errno != 0 {
		t.Fatalf("Restrict: %s; read: %s", o.RestrictEr, o.ActErr)
	}
	if got.ABI != want.ABI || got.KernelABI != want.KernelABI || got.Rules != want.Rules || got.Skipped != want.Skipped ||
		got.Net != want.Net || got.Scoped != want.Scoped || !slices.Equal(got.SkippedPaths, want.SkippedPaths) ||
		!slices.Equal(got.Unenforced, want.Unenforced) {
		t.Errorf("Result = %+v\nwant     %+v", got, want)
	}
}

func TestRestrictBadRules(t *testing.T) {
	requires(t, landlockABI(1))
	tr, _ := newTree(t)
	for _, tc := range []struct {
		name string
		rule FSRule
		is   string
	}{
		{"file rule names a directory", FSRule{Path: tr.ro, Read: true}, "ErrRuleType"},
		{"relative path", FSRule{Path: "usr", Dir: true, Read: true}, "ErrBadRule"},
		{"unclean path", FSRule{Path: "/usr/../etc", Dir: true, Read: true}, "ErrBadRule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := Plan{Rules: []FSRule{tc.rule}}
			o := runRestricted(t, probe{Plan: plan, MinABI: 1, Action: "read", Arg: filepath.Join(tr.out, "secret.txt")}, nil)
			if !slices.Contains(o.RestrictIs, tc.is) {
				t.Fatalf("Restrict error %q matches %q, want %s", o.RestrictEr, o.RestrictIs, tc.is)
			}
			if o.Result.ABI != 0 || o.Result.Rules != 0 {
				t.Errorf("a failed Restrict reports %+v, want nothing enforced", o.Result)
			}
		})
	}
}

// listenTCP opens a listener in this (unconfined) process for a child to
// connect to; the port is not in any rule.
func listenTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func listenAbstract(t *testing.T) string {
	t.Helper()
	name := "skillrun-landlock-test-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(t.TempDir())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return name
}

func TestRestrictNetwork(t *testing.T) {
	requires(t, landlockABI(4))
	_, plan := newTree(t)
	addr := listenTCP(t)
	open := plan
	open.DenyTCPBind, open.DenyTCPConnect = false, false
	for _, tc := range []struct {
		name   string
		plan   Plan
		action string
		arg    string
		errno  int
	}{
		{"connect to a listener of the parent", plan, "connect-tcp", addr, eacces},
		{"bind", plan, "bind-tcp", "127.0.0.1:0", eacces},
		{"connect when the plan allows TCP", open, "connect-tcp", addr, 0},
		{"bind when the plan allows TCP", open, "bind-tcp", "127.0.0.1:0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runRestricted(t, probe{Plan: tc.plan, MinABI: 4, Action: tc.action, Arg: tc.arg}, nil)
			if o.RestrictEr != "" || o.Errno != tc.errno {
				t.Errorf("Restrict %q, errno %d (%s); want errno %d", o.RestrictEr, o.Errno, o.ActErr, tc.errno)
			}
			if o.Result.Net != (tc.plan.DenyTCPConnect || tc.plan.DenyTCPBind) {
				t.Errorf("Result.Net = %v", o.Result.Net)
			}
		})
	}
}

func TestRestrictScopes(t *testing.T) {
	requires(t, landlockABI(6))
	_, plan := newTree(t)
	name := listenAbstract(t)
	self := strconv.Itoa(os.Getpid())
	unscoped := plan
	unscoped.ScopeAbstract, unscoped.ScopeSignal = false, false
	for _, tc := range []struct {
		name   string
		plan   Plan
		action string
		arg    string
		errno  int
	}{
		{"connect to an abstract socket of the parent", plan, "connect-abstract", name, eperm},
		{"signal the parent", plan, "kill", self, eperm},
		{"signal a child from the thread that started it", plan, "kill-child", "same", 0},
		{"connect when the plan does not scope", unscoped, "connect-abstract", name, 0},
		{"signal when the plan does not scope", unscoped, "kill", self, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runRestricted(t, probe{Plan: tc.plan, MinABI: 6, Action: tc.action, Arg: tc.arg}, nil)
			if o.RestrictEr != "" || o.Errno != tc.errno {
				t.Errorf("Restrict %q, errno %d (%s); want errno %d", o.RestrictEr, o.Errno, o.ActErr, tc.errno)
			}
		})
	}
}

func TestRestrictABI(t *testing.T) {
	requires(t, landlockABI(4))
	tr, plan := newTree(t)
	abi, _, _ := usableABI()
	secret := filepath.Join(tr.out, "secret.txt")
	addr := listenTCP(t)
	for _, tc := range []struct {
		name      string
		p         probe
		is        []string // the Restrict error matches these; none: no error
		abi       int
		errno     int
		net       bool
		unenforce string // one entry Result.Unenforced must hold
	}{
		{name: "minimum above the kernel fails closed",
			p:  probe{MinABI: abi + 1, Action: "read", Arg: secret},
			is: []string{"ErrABITooLow"}, abi: 0},
		{name: "minimum above the kernel, degradation allowed",
			p:   probe{MinABI: abi + 1, Degraded: true, Action: "read", Arg: secret},
			abi: abi, errno: eacces, net: true},
		{name: "an ABI 3 kernel confines files but not TCP",
			p:   probe{MinABI: 3, FakeABI: 3, Action: "connect-tcp", Arg: addr},
			abi: 3, unenforce: "tcp_connect"},
		{name: "an ABI 3 kernel still denies reading outside the rules",
			p:   probe{MinABI: 3, FakeABI: 3, Action: "read", Arg: secret},
			abi: 3, errno: eacces, unenforce: "scope_signal"},
		{name: "no Landlock fails closed",
			p:  probe{MinABI: 1, FakeErrno: int(syscall.ENOSYS), Action: "read", Arg: secret},
			is: []string{"ENOSYS", "ErrABITooLow", "ErrUnsupported"}},
		{name: "no Landlock fails closed even with minimum 0",
			p:  probe{MinABI: 0, FakeErrno: int(syscall.ENOSYS), Action: "read", Arg: secret},
			is: []string{"ENOSYS", "ErrABITooLow", "ErrUnsupported"}},
		{name: "no Landlock, degradation allowed, runs unconfined and says so",
			p:   probe{MinABI: 1, Degraded: true, FakeErrno: int(syscall.ENOSYS), Action: "read", Arg: secret},
			abi: 0, unenforce: "filesystem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.p.Plan = plan
			o := runRestricted(t, tc.p, nil)
			slices.Sort(o.RestrictIs)
			slices.Sort(tc.is)
			if !slices.Equal(o.RestrictIs, tc.is) {
				t.Fatalf("Restrict error %q matches %q, want %q", o.RestrictEr, o.RestrictIs, tc.is)
			}
			if o.Result.ABI != tc.abi || o.Result.Net != tc.net {
				t.Errorf("Result = %+v, want ABI %d, Net %v", o.Result, tc.abi, tc.net)
			}
			if tc.unenforce != "" && !slices.Contains(o.Result.Unenforced, tc.unenforce) {
				t.Errorf("Result.Unenforced = %q, want it to hold %q", o.Result.Unenforced, tc.unenforce)
			}
			if len(tc.is) == 0 && o.Errno != tc.errno {
				t.Errorf("errno %d (%s), want %d", o.Errno, o.ActErr, tc.errno)
			}
		})
	}
}

// TestRestrictTerminal checks that handling ioctl_dev (ABI ≥ 5) leaves a
// terminal the skill inherited usable, while a device it opens afterwards
// gets no ioctls beyond the kernel's always-allowed few.
func TestRestrictTerminal(t *testing.T) {
	requires(t, landlockABI(5))
	_, plan := newTree(t)
	tty := openPTY(t)
	o := runRestricted(t, probe{Plan: plan, MinABI: 5, Action: "ioctl-stdin"}, tty)
	if o.RestrictEr != "" || o.Errno != 0 {
		t.Errorf("TCGETS on the inherited tty: %s%s", o.RestrictEr, o.ActErr)
	}
	o = runRestricted(t, probe{Plan: plan, MinABI: 5, Action: "ioctl", Arg: "/dev/null"}, nil)
	if o.RestrictEr != "" || o.Errno != eacces {
		t.Errorf("TCGETS on /dev/null opened afterwards: errno %d (%s%s), want EACCES", o.Errno, o.RestrictEr, o.ActErr)
	}
}

// openPTY returns the terminal end of a new pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("needs a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// TestRestrictThreadDomains pins a consequence of enforcing with libpsx
// below ABI 8: each thread gets a Landlock domain of its own, so under
// signal scoping a child may be signalled only from the thread it was
// started on. From ABI 8 (TSYNC) all threads share one domain.
func TestRestrictThreadDomains(t *testing.T) {
	requires(t, landlockABI(6))
	_, plan := newTree(t)
	abi, _, _ := usableABI()
	want := 0
	if abi < 8 {
		want = eperm
	}
	o := runRestricted(t, probe{Plan: plan, MinABI: 6, Action: "kill-child", Arg: "other"}, nil)
	if o.RestrictEr != "" || o.Errno != want {
		t.Errorf("signal from another thread: errno %d (%s%s), want %d at ABI %d", o.Errno, o.RestrictEr, o.ActErr, want, abi)
	}
}
