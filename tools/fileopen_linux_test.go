package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openers runs a test once with openat2 and once with the walk that
// replaces it on kernels without it.
var openers = []struct {
	name string
	walk bool
}{{"openat2", false}, {"walk", true}}

// useWalk forces the fallback walk for the rest of the test.
func useWalk(t *testing.T, walk bool) {
	t.Helper()
	prev := noOpenat2.Load()
	noOpenat2.Store(walk)
	t.Cleanup(func() { noOpenat2.Store(prev) })
}

func TestOpenNoFollow(t *testing.T) {
	dir := realTempDir(t)
	secret := realTempDir(t)
	writeFile(t, filepath.Join(dir, "file"), []byte("allowed"))
	writeFile(t, filepath.Join(secret, "shadow"), []byte("secret"))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	writeFile(t, filepath.Join(dir, "sub", "f"), []byte("nested"))
	must(t, os.Symlink(filepath.Join(secret, "shadow"), filepath.Join(dir, "link")))
	must(t, os.Symlink("file", filepath.Join(dir, "samedir")))
	must(t, os.Symlink(secret, filepath.Join(dir, "linkdir")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	held, err := os.Open(filepath.Join(dir, "file"))
	must(t, err)
	defer held.Close()

	tests := []struct {
		name string
		path string
		want error // nil: opens and reads body
		body string
	}{
		{"regular", dir + "/file", nil, "allowed"},
		{"nested", dir + "/sub/f", nil, "nested"},
		{"symlink last", dir + "/link", ErrSymlink, ""},
		{"symlink in the same dir", dir + "/samedir", ErrSymlink, ""},
		{"symlink directory", dir + "/linkdir/shadow", ErrSymlink, ""},
		{"magic link", fmt.Sprintf("/proc/self/fd/%d", held.Fd()), ErrSymlink, ""},
		{"fifo", dir + "/fifo", ErrNotRegular, ""},
		{"directory", dir + "/sub", ErrNotRegular, ""},
		{"device", "/dev/null", ErrNotRegular, ""},
		{"root", "/", ErrNotRegular, ""},
		{"missing", dir + "/nope", fs.ErrNotExist, ""},
		{"file as directory", dir + "/file/x", syscall.ENOTDIR, ""},
		{"relative", "file", fs.ErrInvalid, ""},
		{"dotdot", dir + "/sub/../file", fs.ErrInvalid, ""},
		{"trailing slash", dir + "/file/", fs.ErrInvalid, ""},
	}
	for _, o := range openers {
		for _, tt := range tests {
			t.Run(o.name+"/"+tt.name, func(t *testing.T) {
				useWalk(t, o.walk)
				f, err := openWithin(t, tt.path, os.O_RDONLY)
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if err != nil {
					return
				}
				defer f.Close()
				got, err := io.ReadAll(f)
				if err != nil || string(got) != tt.body {
					t.Fatalf("read %q, %v; want %q", got, err, tt.body)
				}
				flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
				if err != nil || flags&unix.O_NONBLOCK != 0 || flags&unix.O_ACCMODE != unix.O_RDONLY {
					t.Fatalf("flags = %#x, %v: want O_RDONLY, blocking", flags, err)
				}
			})
		}
	}
}

func TestOpenNoFollowCreate(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			useWalk(t, o.walk)
			path := filepath.Join(realTempDir(t), "new")
			f, err := openWithin(t, path, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&^0o644 != 0 {
				t.Fatalf("created %v, %v: want a regular file, mode within 0644", fi.Mode(), err)
			}
		})
	}
}

// openWithin fails the test rather than hanging when open blocks, which is
// what opening a FIFO without O_NONBLOCK would do.
func openWithin(t *testing.T, path string, flags int) (*os.File, error) {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := OpenNoFollow(path, flags)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("OpenNoFollow(%s) blocked", path)
		return nil, nil
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
