//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/landlock"
	"github.com/skillrun/skillrun/store"
)

// skillrunBin is the static skillrun binary every test runs, built once:
// the tests drive the real CLI, the real sandbox and the real broker.
var skillrunBin string

func TestMain(m *testing.M) {
	if goruntime.GOOS != "linux" {
		fmt.Println("integration: skipped: the sandbox tests need Linux")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "skillrun-it-")
	if err != nil {
		panic(err)
	}
	// The binary is also the sandbox's shim, executed by the invocation's
	// unprivileged uid: its folder must be searchable by others.
	os.Chmod(dir, 0o755)
	skillrunBin = filepath.Join(dir, "skillrun")
	// Built elsewhere, then copied into place as an install would: the
	// page cache the linker leaves behind is in large folios, which would
	// inflate every process's RSS (BenchmarkScale) by some 10 MiB.
	build := filepath.Join(dir, "build")
	if err := os.Mkdir(build, 0o700); err != nil {
		panic(err)
	}
	for _, b := range []struct{ name, pkg string }{{"skillrun", "../cmd/skillrun"}, {"skillrun-shim", "../cmd/skillrun-shim"}} {
		if err := buildBinary(filepath.Join(build, b.name), b.pkg); err != nil {
			fmt.Printf("integration: building %s: %v\n", b.name, err)
			os.Exit(1)
		}
		if err := installBinary(filepath.Join(build, b.name), filepath.Join(dir, b.name)); err != nil {
			fmt.Printf("integration: installing %s: %v\n", b.name, err)
			os.Exit(1)
		}
	}
	os.RemoveAll(build)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary builds one of the two binaries as `make build` does:
// skillrun static with cgo and the seccomp tag, skillrun-shim pure Go.
func buildBinary(out, pkg string) error {
	args := []string{"build", "-o", out, pkg}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if filepath.Base(pkg) == "skillrun" {
		args = []string{"build", "-tags", "seccomp netgo osusergo",
			"-ldflags", `-linkmode external -extldflags "-static"`, "-o", out, pkg}
		env = append(os.Environ(), "CGO_ENABLED=1")
	}
	build := exec.Command("go", args...)
	build.Env = env
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	return build.Run()
}

// installBinary copies src to dst, mode 0755, as install(1) does: through
// copy_file_range, in pieces. (One large write leaves the page cache in
// large folios, and a process mapping the binary then counts some 10 MiB
// more RSS for the same pages touched.)
func installBinary(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// need is one requirement a test declares through requires.
type need func() (ok bool, why string)

var (
	root need = func() (bool, string) {
		return os.Geteuid() == 0, "needs root: the sandbox uses namespaces, cgroups and per-invocation uids"
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

// skill writes a skill folder with SKILL.md and an executable main and
// trusts it.
func (e *env) skill(name, frontmatter, main string) string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: integration test skill\n" + frontmatter + "\n---\n"
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

func (e *env) trust(dir string) {
	e.t.Helper()
	if r := e.run("trust", dir); r.code != 0 {
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

// run runs skillrun with --root set to the env's state dir.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runCtx(e.t.Context(), args...)
}

func (e *env) runCtx(ctx context.Context, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, skillrunBin, append([]string{"--root", e.root}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		e.t.Fatalf("skillrun %v: %v", args, err)
	}
	if first, _, ok := strings.Cut(r.stderr, "\n"); ok && strings.HasPrefix(first, "invocation ") {
		r.id = strings.TrimPrefix(first, "invocation ")
	}
	return r
}

// exec trusts and runs a skill.
func (e *env) exec(dir string, args ...string) result {
	e.t.Helper()
	e.trust(dir)
	return e.run(append([]string{"exec", dir}, args...)...)
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

func kinds(rows []store.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Kind)
	}
	return out
}

// pyClient is a minimal broker client for Python skills, prepended to a
// test's script: call(method, params) returns the whole reply.
const pyClient = `#!/usr/bin/env python3
import json, os, socket, struct, sys
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
def send_raw(body):
    _sock.sendall(struct.pack(">I", len(body)) + body)
    (n,) = struct.unpack(">I", _recv(4))
    return json.loads(_recv(n))
_id = 0
def call(method, params):
    global _id
    _id += 1
    return send_raw(json.dumps({"jsonrpc": "2.0", "id": _id, "method": method, "params": params}).encode())
`
