//go:build !linux

package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// OpenNoFollow opens the regular file at path, which must be absolute and
// clean, refusing symlinks on the way; see the Linux version for the
// contract.
//
// Best effort, and weaker than on Linux: without openat2 or a portable
// O_PATH walk, every component is Lstat'ed first and the file is then
// opened by name, so a swap in between can make open(2) follow a link. The
// opened file is then compared (device and inode) with what the walk saw,
// and a mismatch fails with ErrSymlink, so a swap is never read from; but
// the open itself has happened, which for O_CREAT or O_TRUNC is a side
// effect on the wrong file. Non-Linux hosts run skills rlimit-only anyway
// (DESIGN §4).
func OpenNoFollow(path string, flags int) (*os.File, error) {
	if err := checkOpenPath(path); err != nil {
		return nil, err
	}
	before, err := lstatWalk(path)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && flags&os.O_CREATE != 0) {
		return nil, err
	}
	// O_NONBLOCK: a FIFO swapped in must not block the broker in open(2).
	f, err := os.OpenFile(path, flags|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	if err := sameRegular(f, path, before); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openForRead opens path for Read with OpenNoFollow and returns its size,
// or -1 when it cannot be told.
func openForRead(path string) (io.ReadCloser, int64, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY)
	if err != nil {
		return nil, 0, err
	}
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return f, size, nil
}

// symlinkFree cannot tell here: Read resolves paths the enforcer's way.
func symlinkFree(string) bool { return false }

// lstatWalk checks that no component of path is a symlink and returns
// what the last one is.
func lstatWalk(path string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		var err error
		if fi, err = os.Lstat(path[:i]); err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("open %s: %w at %s", path, ErrSymlink, path[:i])
		}
	}
	return fi, nil
}

// sameRegular checks that f is a regular file and the one the walk saw
// (or, for a file just created, the one at path now).
func sameRegular(f *os.File, path string, before fs.FileInfo) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if before == nil {
		if before, err = lstatWalk(path); err != nil {
			return err
		}
	}
	if !os.SameFile(before, st) {
		return fmt.Errorf("open %s: %w: the file changed during open", path, ErrSymlink)
	}
	return nil
}
