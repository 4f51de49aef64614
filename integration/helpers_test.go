//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
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
	build := exec.Command("go", "build", "-tags", "seccomp netgo osusergo",
		"-ldflags", `-linkmode external -extldflags "-static"`, "-o", skillrunBin, "../cmd/skillrun")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("integration: building skillrun:", err)
		os.Exit(1)
	}
	// The dedicated shim beside it, as `make build` installs them; the
	// fallback without it has a test of its own (TestExecWithoutShimBinary).
	if err := buildShim(filepath.Join(dir, "skillrun-shim"), "../cmd/skillrun-shim"); err != nil {
		fmt.Println("integration: building skillrun-shim:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildShim builds cmd/skillrun-shim as `make build` does: pure Go, static.
func buildShim(out, pkg string) error {
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	return build.Run()
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
