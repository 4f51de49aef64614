//go:build linux && cgo && seccomp

package seccomp

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramsRun execs ordinary programs under the filter, the way
// libcontainer's init execs the shim: the probe subprocess loads the
// filter and replaces itself with the program. Each program also prints
// its own Seccomp line from /proc, to show the filter came along.
func TestProgramsRun(t *testing.T) {
	t.Parallel()
	const status = `; grep -E '^Seccomp(_filters)?:' /proc/self/status`
	const filtered = "Seccomp:\t2\nSeccomp_filters:\t1\n"
	repo := t.TempDir()
	tests := []struct {
		name string
		argv func(t *testing.T) []string
		want string
	}{
		{"sh", func(*testing.T) []string { return []string{"/bin/sh", "-c", "echo ok" + status} }, "ok\n" + filtered},
		{"python3", func(t *testing.T) []string {
			return []string{python(t), "-c", "print(1); print(open('/proc/self/status').read().count('Seccomp:\\t2'))"}
		}, "1\n1\n"},
		{"coreutils", func(t *testing.T) []string {
			return []string{"/bin/sh", "-c", "cd " + t.TempDir() + " && ls / >/dev/null && printf 'b\\na\\n' | sort | head -n1 && " +
				"mkdir -p x/y && touch x/y/z && cp -r x w && find w -type f && rm -r x w" + status}
		}, "a\nw/y/z\n" + filtered},
		{"git", func(t *testing.T) []string {
			if _, err := exec.LookPath("git"); err != nil {
				t.Skip("no git on PATH")
			}
			return []string{"/bin/sh", "-c", "cd " + repo + " && git init -q && echo hi > f && git add f && " +
				"git -c user.name=t -c user.email=t@t commit -qm first && git log --format=%s" + status}
		}, "first\n" + filtered},
		{"static Go: unix sockets, threads, os/exec", func(t *testing.T) []string {
			return []string{staticGoProbe(t)}
		}, "ok\n" + filtered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv, _ := json.Marshal(tt.argv(t))
			o := runProbe(t, "exec", string(argv), true, "HOME="+t.TempDir())
			if o.reported {
				t.Fatalf("exec failed: %v", o.errno())
			}
			if o.err != nil || o.stdout != tt.want {
				t.Errorf("%s under the filter: %v, output %q, want %q", argv, o.err, o.stdout, tt.want)
			}
		})
	}
}

// python returns the real interpreter behind python3 on PATH (which may be
// a shim script).
func python(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// staticGoSource is a small program that uses what a Go skill would:
// goroutines on several threads, a Unix socket round trip, a child process.
const staticGoSource = `package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

func main() {
	dir, err := os.MkdirTemp("", "seccomp-probe")
	check(err)
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	check(err)
	go func() {
		c, err := l.Accept()
		check(err)
		buf := make([]byte, 4)
		n, _ := c.Read(buf)
		c.Write(buf[:n])
		c.Close()
	}()
	c, err := net.Dial("unix", filepath.Join(dir, "s"))
	check(err)
	_, err = c.Write([]byte("ping"))
	check(err)
	buf := make([]byte, 4)
	_, err = c.Read(buf)
	check(err)
	var wg sync.WaitGroup
	sums := make([]int, 8)
	for i := range sums {
		wg.Go(func() {
			for j := range 1000000 {
				sums[i] += j
			}
		})
	}
	wg.Wait()
	check(exec.Command("/bin/true").Run())
	if string(buf) == "ping" {
		fmt.Println("ok")
	}
	status, err := os.ReadFile("/proc/self/status")
	check(err)
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Seccomp") {
			fmt.Println(line)
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
`

// staticGoProbe builds staticGoSource without cgo and checks that the
// result is static (no ELF interpreter).
func staticGoProbe(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the static probe")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "main.go"), filepath.Join(dir, "probe")
	if err := os.WriteFile(src, []byte(staticGoSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the static probe: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the probe is dynamically linked")
		}
	}
	return bin
}
