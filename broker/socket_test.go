package broker_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
)

func TestSocketPath(t *testing.T) {
	tests := []struct {
		id   string
		want string
		err  error
	}{
		{"inv-1", "/tmp/cyberos-skill-broker.inv-1.sock", nil},
		{"A_b-9", "/tmp/cyberos-skill-broker.A_b-9.sock", nil},
		{strings.Repeat("a", 64), "/tmp/cyberos-skill-broker." + strings.Repeat("a", 64) + ".sock", nil},
		{"", "", broker.ErrInvalidInvocationID},
		{strings.Repeat("a", 65), "", broker.ErrInvalidInvocationID},
		{"../etc/x", "", broker.ErrInvalidInvocationID},
		{"a/b", "", broker.ErrInvalidInvocationID},
		{"a.b", "", broker.ErrInvalidInvocationID},
		{"a b", "", broker.ErrInvalidInvocationID},
		{"a\x00", "", broker.ErrInvalidInvocationID},
		{"é", "", broker.ErrInvalidInvocationID},
	}
	for _, tt := range tests {
		got, err := broker.SocketPath(tt.id)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, %v", tt.id, got, err, tt.want, tt.err)
		}
	}
}

func TestListenModeAndOwner(t *testing.T) {
	requires(t, root)
	tests := []struct {
		name     string
		owner    broker.Owner
		uid, gid uint32
	}{
		{"keep", broker.KeepOwner, uint32(os.Geteuid()), uint32(os.Getegid())},
		{"nobody", broker.Owner{UID: 65534, GID: 65534}, 65534, 65534},
		{"uid only", broker.Owner{UID: 65534, GID: -1}, 65534, uint32(os.Getegid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "b.sock")
			l, err := broker.Listen(sock, tt.owner)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			fi, err := os.Lstat(sock)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 || st.Uid != tt.uid || st.Gid != tt.gid {
				t.Fatalf("socket %v uid %d gid %d, want socket 0600 %d:%d", fi.Mode(), st.Uid, st.Gid, tt.uid, tt.gid)
			}
			// Reachable at its final path, though bound under another.
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		})
	}
}

// TestListenCollision checks that whatever is at the path makes Listen
// fail and stays exactly as it was.
func TestListenCollision(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string) (check func())
	}{
		{"regular file", func(t *testing.T, path string) func() {
			if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() { assertFile(t, path, "mine") }
		}},
		{"someone's live socket", func(t *testing.T, path string) func() {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return func() {
				c, err := net.Dial("unix", path)
				if err != nil {
					t.Fatalf("the other socket no longer answers: %v", err)
				}
				c.Close()
			}
		}},
		{"stale socket", func(t *testing.T, path string) func() {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
			return func() {
				if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
					t.Fatalf("stale socket gone: %v", err)
				}
			}
		}},
		{"dangling symlink", func(t *testing.T, path string) func() {
			if err := os.Symlink(path+".nowhere", path); err != nil {
				t.Fatal(err)
			}
			return func() {
				if target, err := os.Readlink(path); err != nil || target != path+".nowhere" {
					t.Fatalf("symlink changed: %q, %v", target, err)
				}
				if _, err := os.Lstat(path + ".nowhere"); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the link's target was created: %v", err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "b.sock")
			check := tt.setup(t, path)
			l, err := broker.Listen(path, broker.KeepOwner)
			if !errors.Is(err, broker.ErrSocketCollision) || !strings.Contains(err.Error(), path) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("err = %v, want ErrSocketCollision naming %s", err, path)
			}
			check()
			assertOnly(t, dir, "b.sock")
		})
	}
}

// TestListenCloseOnlyOurs checks Close removes the socket it made, and
// leaves a file that replaced it alone.
func TestListenCloseOnlyOurs(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "b.sock")
		l, err := broker.Listen(path, broker.KeepOwner)
		if err != nil {
			t.Fatal(err)
		}
		if l.Path() != path || l.Addr().String() != path {
			t.Errorf("Path %q Addr %q, want %q", l.Path(), l.Addr(), path)
		}
		if replaced {
			replaceWithFile(t, path)
		}
		for range 2 { // idempotent
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		if replaced {
			assertFile(t, path, "someone else's")
			assertOnly(t, dir, "b.sock")
		} else {
			assertOnly(t, dir)
		}
	}
}

// TestListenAtSocketPath uses the real location under /tmp once.
func TestListenAtSocketPath(t *testing.T) {
	path, err := broker.SocketPath(fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	l, err := broker.Listen(path, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket at %s: %v, %v", path, fi, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left at %s: %v", path, err)
	}
}

func TestListenMissingDir(t *testing.T) {
	_, err := broker.Listen(filepath.Join(t.TempDir(), "no", "b.sock"), broker.KeepOwner)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

// assertOnly checks dir holds exactly names: no private bind directory or
// other leftovers.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %q, want %q", dir, got, names)
	}
}
