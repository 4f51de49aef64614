//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

func TestWrite(t *testing.T) {
	dir, secret := ftTempDir(t), ftTempDir(t)
	ftTree(t, dir, "old", "private", "alias -> old", "sub/")
	ftTree(t, secret, "shadow")
	if err := os.Chmod(filepath.Join(dir, "private"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := ftPolicy(t, "Write", dir+"/**")

	tests := []struct {
		name, path, body string
		file             string // where the body must land
		mode             fs.FileMode
	}{
		{"new file", dir + "/new", "fresh", dir + "/new", 0o644},
		{"new file in a subdirectory", dir + "/sub/new", "x", dir + "/sub/new", 0o644},
		{"overwrite", dir + "/old", "replaced", dir + "/old", 0o644},
		{"overwrite keeps the mode", dir + "/private", "still private", dir + "/private", 0o600},
		{"empty body", dir + "/empty", "", dir + "/empty", 0o644},
		{"unicode", dir + "/u", "wörld ✓\n", dir + "/u", 0o644},
		{"unclean path", dir + "/sub/../unclean", "u", dir + "/unclean", 0o644},
		{"symlink inside the grant writes its target", dir + "/alias", "via alias", dir + "/old", 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ftCall(t.Context(), NewWrite(), e, map[string]string{"path": tt.path, "body": tt.body})
			if err != nil {
				t.Fatal(err)
			}
			want := WriteResult{BytesWritten: len(tt.body), ContentHash: hashOf([]byte(tt.body))}
			if got := *res.(*WriteResult); got != want {
				t.Fatalf("result %+v, want %+v", got, want)
			}
			got, err := os.ReadFile(tt.file)
			if err != nil || string(got) != tt.body {
				t.Fatalf("%s holds %q (%v), want %q", tt.file, got, err, tt.body)
			}
			if fi, _ := os.Lstat(tt.file); fi.Mode() != tt.mode {
				t.Fatalf("mode %v, want %v", fi.Mode(), tt.mode)
			}
		})
	}
	if fi, err := os.Lstat(dir + "/alias"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the alias was replaced: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(secret + "/shadow"); string(got) != "body of shadow" {
		t.Fatalf("the secret changed: %q", got)
	}
	ftNoTemp(t, dir)
}

func TestWriteErrors(t *testing.T) {
	dir, secret := ftTempDir(t), ftTempDir(t)
	ftTree(t, dir, "sub/", "fifo|", "ok",
		"out -> "+secret+"/shadow", "outdir -> "+secret, "dangling -> "+secret+"/nope")
	ftTree(t, secret, "shadow")
	before := ftSnapshot(t, secret)
	e := ftPolicy(t, "Read, Write", dir+"/**")
	readOnly := ftPolicy(t, "Read", dir+"/**")

	tests := []struct {
		name string
		e    *enforce.Enforcer
		args string
		want error
	}{
		{"outside the globs", e, ftWriteArgs(secret+"/shadow", "x"), enforce.ErrFileViolation},
		{"new file outside", e, ftWriteArgs(secret+"/new", "x"), enforce.ErrFileViolation},
		{"symlink out, last", e, ftWriteArgs(dir+"/out", "x"), enforce.ErrFileViolation},
		{"symlink out, on the way", e, ftWriteArgs(dir+"/outdir/shadow", "x"), enforce.ErrFileViolation},
		{"symlink out, new file on the way", e, ftWriteArgs(dir+"/outdir/new", "x"), enforce.ErrFileViolation},
		{"dangling symlink", e, ftWriteArgs(dir+"/dangling", "x"), enforce.ErrFileViolation},
		{"dotdot out", e, ftWriteArgs(dir+"/../"+filepath.Base(secret)+"/shadow", "x"), enforce.ErrFileViolation},
		{"relative", e, ftWriteArgs("ok", "x"), enforce.ErrFileViolation},
		{"directory", e, ftWriteArgs(dir+"/sub", "x"), ErrNotRegular},
		{"fifo", e, ftWriteArgs(dir+"/fifo", "x"), ErrNotRegular},
		{"parent missing", e, ftWriteArgs(dir+"/no/such/dir/f", "x"), fs.ErrNotExist},
		{"parent missing outside", e, ftWriteArgs(secret+"/no/f", "x"), enforce.ErrFileViolation},
		{"parent missing behind a link out", e, ftWriteArgs(dir+"/outdir/no/f", "x"), enforce.ErrFileViolation},
		{"parent is a file", e, ftWriteArgs(dir+"/ok/f", "x"), enforce.ErrFileViolation},
		{"no write grant", readOnly, ftWriteArgs(dir+"/ok", "x"), enforce.ErrToolNotAllowed},
		{"missing body", e, `{"path":"` + dir + `/ok"}`, jsonrpc.ErrInvalidParams},
		{"missing path", e, `{"body":"x"}`, jsonrpc.ErrInvalidParams},
		{"unknown field", e, `{"path":"` + dir + `/ok","body":"x","mode":7}`, jsonrpc.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ftCall(t.Context(), NewWrite(), tt.e, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d, ok := enforce.AsDenial(err); ok && d.Tool != "Write" {
				t.Fatalf("denial names tool %q", d.Tool)
			}
		})
	}
	if got, _ := os.ReadFile(dir + "/ok"); string(got) != "body of ok" {
		t.Fatalf("ok changed: %q", got)
	}
	ftSame(t, secret, before)
	ftNoTemp(t, dir)
}

func TestWriteBodyCap(t *testing.T) {
	dir := ftTempDir(t)
	e := ftPolicy(t, "Write", dir+"/**")
	w := Write{Max: 4}
	if _, err := ftCall(t.Context(), w, e, ftWriteArgs(dir+"/f", "12345")); !errors.Is(err, jsonrpc.ErrInvalidParams) {
		t.Fatalf("err = %v, want invalid params", err)
	}
	if _, err := ftCall(t.Context(), w, e, ftWriteArgs(dir+"/f", "1234")); err != nil {
		t.Fatal(err)
	}
}

// TestWriteHardLink shows why Write renames: a hard link planted in the
// grant to a file outside it is replaced, not written through.
func TestWriteHardLink(t *testing.T) {
	dir, secret := ftTempDir(t), ftTempDir(t)
	ftTree(t, secret, "shadow")
	if err := os.Link(secret+"/shadow", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	e := ftPolicy(t, "Write", dir+"/**")
	if _, err := ftCall(t.Context(), NewWrite(), e, ftWriteArgs(dir+"/link", "pwned")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(secret + "/shadow"); string(got) != "body of shadow" {
		t.Fatalf("the write went through the hard link: %q", got)
	}
}

// TestWriteInvokeRefusesSymlink is the use-time check alone: what Prepare
// saw as real is a link when Invoke writes.
func TestWriteInvokeRefusesSymlink(t *testing.T) {
	for _, o := range openers {
		for _, swapDir := range []bool{false, true} {
			name := o.name + "/last"
			if swapDir {
				name = o.name + "/directory"
			}
			t.Run(name, func(t *testing.T) {
				useWalk(t, o.walk)
				dir, secret := ftTempDir(t), ftTempDir(t)
				ftTree(t, dir, "sub/f")
				ftTree(t, secret, "f")
				before := ftSnapshot(t, secret)
				e := ftPolicy(t, "Write", dir+"/**")
				checked, err := NewWrite().Prepare(json.RawMessage(ftWriteArgs(dir+"/sub/f", "pwned")), e)
				if err != nil {
					t.Fatal(err)
				}
				victim, target := dir+"/sub/f", secret+"/f"
				if swapDir {
					victim, target = dir+"/sub", secret
				}
				if err := os.RemoveAll(victim); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, victim); err != nil {
					t.Fatal(err)
				}
				_, err = NewWrite().Invoke(t.Context(), Call{Args: checked})
				d, ok := enforce.AsDenial(err)
				if !ok || d.Reason != enforce.ReasonFileViolation || d.Tool != "Write" {
					t.Fatalf("err = %v, want a Write file_violation", err)
				}
				ftSame(t, secret, before)
			})
		}
	}
}

// writeRaceIterations is how many Writes the swap race runs.
const writeRaceIterations = 5000

// TestWriteSymlinkSwapRace is the check-then-use attack on Write: a
// directory on the path flips with a symlink to another directory (/etc,
// say) while Writes go through Prepare and Invoke. Nothing may ever be
// created or changed in the other directory.
func TestWriteSymlinkSwapRace(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			useWalk(t, o.walk)
			dir, etc := ftTempDir(t), ftTempDir(t)
			ftTree(t, dir, "sub/passwd", "sublink -> "+etc)
			ftTree(t, etc, "passwd")
			before := ftSnapshot(t, etc)
			e := ftPolicy(t, "Write", dir+"/**")
			stop := ftSwap(t, dir+"/sub", dir+"/sublink")
			var out struct{ written, deniedAtCheck, deniedAtUse, missing int }
			for i := range writeRaceIterations {
				path := dir + "/sub/passwd"
				if i%2 == 1 {
					path = dir + "/sub/new"
				}
				checked, err := NewWrite().Prepare(json.RawMessage(ftWriteArgs(path, "root::0:0::/:/bin/sh")), e)
				if err != nil {
					if !errors.Is(err, enforce.ErrFileViolation) {
						stop()
						t.Fatalf("Prepare: %v", err)
					}
					out.deniedAtCheck++
					continue
				}
				_, err = NewWrite().Invoke(t.Context(), Call{Args: checked})
				switch {
				case err == nil:
					out.written++
				case errors.Is(err, enforce.ErrFileViolation):
					out.deniedAtUse++
				case errors.Is(err, fs.ErrNotExist):
					out.missing++ // the directory was mid-swap
				default:
					stop()
					t.Fatalf("Invoke: %v", err)
				}
			}
			stop()
			t.Logf("%+v", out)
			if out.written == 0 || out.deniedAtCheck+out.deniedAtUse == 0 {
				t.Fatalf("the swap did not race the writes")
			}
			ftSame(t, etc, before)
		})
	}
}

// ftSwap exchanges a and b atomically in a tight loop until the returned
// func, which stops it and waits, is called.
func ftSwap(t testing.TB, a, b string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func ftWriteArgs(path, body string) string {
	b, _ := json.Marshal(map[string]string{"path": path, "body": body})
	return string(b)
}

// ftSame fails unless dir is as snapshotted.
func ftSame(t testing.TB, dir string, before []string) {
	t.Helper()
	after := ftSnapshot(t, dir)
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("%s changed:\nbefore %q\nafter  %q", dir, before, after)
	}
}

// ftNoTemp fails if a temporary file of Write or Edit was left in dir.
func ftNoTemp(t testing.TB, dir string) {
	t.Helper()
	for _, line := range ftSnapshot(t, dir) {
		if strings.Contains(line, ".skillrun-") {
			t.Fatalf("temporary file left: %s", line)
		}
	}
}
