//go:build integration

package escape

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/landlock"
	"github.com/skillrun/skillrun/store"
)

// skillrunBin is the static skillrun binary every case runs, built once.
// It is also the sandbox's shim, bind-mounted at /run/skillrun/shim: the
// binary case 1 tries to overwrite.
var skillrunBin string

// shimBin is the skillrun-shim beside it: the binary every sandbox runs as
// pid 1 and exec stage, at /run/skillrun/shim (empty file name when a
// prebuilt skillrun came without one: skillrun then plays the shim).
var shimBin string

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// uidBase is the first host uid of the range the corpus's invocations get
// (uidCount wide). It is not the default 200000, and it is drawn anew for
// each run of the corpus, so that the fork bomb's RLIMIT_NPROC (which
// counts per uid across the whole host), the host processes started as
// the invocation's uid and the process scans after them do not collide
// with other integration tests, or another run of this corpus, on the same
// machine.
var uidBase = 260000 + uidCount*rand.IntN(1000)

const uidCount = 100

func TestMain(m *testing.M) {
	if goruntime.GOOS != "linux" {
		fmt.Println("escape: skipped: the sandbox tests need Linux")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "skillrun-escape-")
	if err != nil {
		panic(err)
	}
	// The shim is executed by the invocation's uid: its folder must be
	// searchable by others.
	os.Chmod(dir, 0o755)
	skillrunBin = filepath.Join(dir, "skillrun")
	shimBin = filepath.Join(dir, "skillrun-shim")
	if prebuilt := os.Getenv("SKILLRUN_ESCAPE_BIN"); prebuilt != "" {
		// A static binary built elsewhere (say, of another revision),
		// copied so that case 1's hash is of a file no one else writes.
		// Its skillrun-shim, when it has one beside it, comes along.
		err := copyFile(prebuilt, skillrunBin)
		if shim := filepath.Join(filepath.Dir(prebuilt), "skillrun-shim"); err == nil && fileExists(shim) {
			err = copyFile(shim, shimBin)
		}
		if err != nil {
			fmt.Println("escape: SKILLRUN_ESCAPE_BIN:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	} else {
		build := exec.Command("go", "build", "-tags", "seccomp netgo osusergo",
			"-ldflags", `-linkmode external -extldflags "-static"`, "-o", skillrunBin, "../../cmd/skillrun")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		err := build.Run()
		if err == nil {
			// The sandbox's pid 1 and exec stage, as `make build` installs it.
			shim := exec.Command("go", "build", "-o", shimBin, "../../cmd/skillrun-shim")
			shim.Env = append(os.Environ(), "CGO_ENABLED=0")
			shim.Stdout, shim.Stderr = os.Stdout, os.Stderr
			err = shim.Run()
		}
		if err != nil {
			fmt.Println("escape: building skillrun:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// need is one requirement a test declares through requires.
type need func() (ok bool, why string)

var (
	root need = func() (bool, string) {
		return os.Geteuid() == 0, "needs root: the sandbox uses namespaces, cgroups and per-invocation uids"
	}
	cc need = func() (bool, string) {
		_, err := exec.LookPath("gcc")
		return err == nil, "needs gcc to build the static C attack programs"
	}
	readableShadow need = func() (bool, string) {
		b, err := os.ReadFile("/etc/shadow")
		return err == nil && len(b) > 0, "needs a readable, non-empty /etc/shadow on the host to attack"
	}
	setpriv need = func() (bool, string) {
		_, err := exec.LookPath("setpriv")
		return err == nil, "needs setpriv (util-linux) to start host processes as another uid"
	}
)

func landlockABI(min int) need {
	return func() (bool, string) {
		abi, _ := landlock.ABI()
		return abi >= min, fmt.Sprintf("needs Landlock ABI %d, the kernel has %d", min, abi)
	}
}

// requires skips the test, saying why, unless every need is met.
func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if ok, why := n(); !ok {
			t.Skip(why)
		}
	}
}

// env is one test's state dir and skills.
type env struct {
	t    *testing.T
	root string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	requires(t, root, landlockABI(1))
	return &env{t: t, root: t.TempDir()}
}

// skill writes a skill folder with SKILL.md and, unless main is empty, an
// executable main.
func (e *env) skill(name, frontmatter, main string) string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: escape corpus case\n" + frontmatter + "\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if main != "" {
		if err := os.WriteFile(filepath.Join(dir, "main"), []byte(main), 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	return dir
}

// cskill writes a skill whose main is the static build of the C source
// src, compiled here with gcc.
func (e *env) cskill(name, frontmatter, src string) string {
	e.t.Helper()
	requires(e.t, cc)
	dir := e.skill(name, frontmatter, "")
	out := filepath.Join(dir, "main")
	compileC(e.t, src, out)
	return dir
}

// compileC builds src into a static executable at out.
func compileC(t *testing.T, src, out string) {
	t.Helper()
	c := filepath.Join(t.TempDir(), "prog.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("gcc", "-static", "-O1", "-o", out, c)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
}

func (e *env) trust(dir string) {
	e.t.Helper()
	r := e.cli(context.Background(), "trust", dir)
	if r.code != 0 {
		e.t.Fatalf("trust %s: exit %d: %s", dir, r.code, r.stderr)
	}
}

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
	id             string
	elapsed        time.Duration
}

// run is how a skill is started: skillrun flags, the skill's arguments, a
// stdin, and a callback for each stdout line as it arrives.
type run struct {
	flags  []string // exec flags before DIR (--timeout 60s unless given)
	args   []string // the skill's own arguments, after --
	stdin  *os.File
	onLine func(line string)
}

// proc is a running skillrun exec.
type proc struct {
	cmd      *exec.Cmd
	stderr   *bytes.Buffer
	lines    []string
	mu       sync.Mutex
	readDone chan struct{}
	start    time.Time
	cancel   context.CancelFunc
}

// start trusts dir and starts `skillrun exec` on it without waiting.
func (e *env) start(dir string, o run) *proc {
	e.t.Helper()
	e.trust(dir)
	flags := o.flags
	if !hasFlag(flags, "--timeout") {
		flags = append(flags, "--timeout", "60s")
	}
	args := append([]string{"--root", e.root, "exec", "--uid-base", strconv.Itoa(uidBase), "--uid-count", strconv.Itoa(uidCount)}, flags...)
	args = append(args, dir)
	if len(o.args) > 0 {
		args = append(append(args, "--"), o.args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, skillrunBin, args...)
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, readDone: make(chan struct{}), cancel: cancel}
	cmd.Stderr = p.stderr
	if o.stdin != nil {
		cmd.Stdin = o.stdin
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		e.t.Fatalf("start skillrun: %v", err)
	}
	go func() {
		defer close(p.readDone)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			l := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.mu.Unlock()
			if o.onLine != nil {
				o.onLine(l)
			}
		}
		io.Copy(io.Discard, out)
	}()
	return p
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// wait waits for the run to end and returns its result.
func (p *proc) wait() result {
	<-p.readDone
	err := p.cmd.Wait()
	p.cancel()
	r := result{stdout: strings.Join(p.lines, "\n") + "\n", stderr: p.stderr.String(), elapsed: time.Since(p.start)}
	if p.cmd.ProcessState != nil {
		r.code = p.cmd.ProcessState.ExitCode()
	} else if err != nil {
		r.code = -1
		r.stderr += "\nwait: " + err.Error()
	}
	if first, _, ok := strings.Cut(r.stderr, "\n"); ok && strings.HasPrefix(first, "invocation ") {
		r.id = strings.TrimPrefix(first, "invocation ")
	}
	return r
}

// exec trusts and runs a skill to its end.
func (e *env) exec(dir string, o run) result {
	e.t.Helper()
	return e.start(dir, o).wait()
}

// cli runs another skillrun command against the env's state dir.
func (e *env) cli(ctx context.Context, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, skillrunBin, append([]string{"--root", e.root}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		e.t.Fatalf("skillrun %v: %v", args, err)
	}
	return r
}

// rows returns the audit rows of an invocation.
func (e *env) rows(id string) []store.Row {
	e.t.Helper()
	st, err := store.Open(e.t.Context(), e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Rows(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// lines parses the "key=value" lines a skill printed; a later line wins.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// expect checks that the skill printed exactly want for each key.
func expect(t *testing.T, r result, want map[string]string) {
	t.Helper()
	got := lines(r.stdout)
	bad := false
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %q, want %q", k, g, v)
			bad = true
		}
	}
	if bad {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// fileHash is the hex SHA-256 of a host file.
func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// procsOfUID lists the host pids whose real or effective uid is uid.
func procsOfUID(uid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "Uid:" {
				if f[1] == strconv.Itoa(uid) || f[2] == strconv.Itoa(uid) {
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

// waitNoProcs waits up to d for every process of uid to be gone and
// returns those left.
func waitNoProcs(uid int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := procsOfUID(uid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// worldDir makes a directory the invocation's uid may write in, to
// declare in x-allowed-files. It is under /var/tmp, not /tmp: a declared
// path under /tmp takes the sandbox's own scratch /tmp away.
func worldDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "skillrun-escape-")
	if err != nil {
		d = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// py is the prelude of every Python attack: raw syscalls through ctypes,
// errno names, and a minimal broker client. out(k, v) prints one result
// line; sc(name, nr, ...) makes a raw syscall and prints "ok" or the errno
// name; attempt(name, fn) does the same for a Python call.
const py = `#!/usr/bin/env python3
import ctypes, errno, json, os, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def ename(e):
    return errno.errorcode.get(e, str(e))
def out(k, v):
    print("%s=%s" % (k, v), flush=True)
def _arg(a):
    if isinstance(a, int):
        return ctypes.c_long(a)
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    return a
def raw(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[_arg(a) for a in args])
    return r, ctypes.get_errno()
def sc(name, nr, *args):
    r, e = raw(nr, *args)
    out(name, "ok" if r >= 0 else ename(e))
    return r
def attempt(name, fn):
    try:
        v = fn()
        out(name, "ok")
        return v
    except OSError as err:
        out(name, ename(err.errno))
    except Exception as err:
        out(name, "exc:" + type(err).__name__)
_sock = None
def _recv(n):
    b = b""
    while len(b) < n:
        c = _sock.recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return b
def connect():
    global _sock
    _sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _sock.connect(os.environ["CYBEROS_BROKER_SOCKET"])
    return _sock
def send_raw(body):
    _sock.sendall(struct.pack(">I", len(body)) + body)
    (n,) = struct.unpack(">I", _recv(4))
    return json.loads(_recv(n))
_id = 0
def call(method, params):
    global _id
    _id += 1
    return send_raw(json.dumps({"jsonrpc": "2.0", "id": _id, "method": method, "params": params}).encode())
def tool(name, args):
    r = call("tool.call", {"tool": name, "args": args})
    if "error" in r:
        return "error:" + str((r["error"].get("data") or {}).get("reason") or r["error"].get("message"))
    return r["result"]
`
