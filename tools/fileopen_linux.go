package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 has answered ENOSYS (kernels before 5.6,
// or a seccomp profile that hides it), so later opens go straight to the
// walk. Tests set it to exercise the walk on a kernel that has openat2.
var noOpenat2 atomic.Bool

// OpenNoFollow opens the regular file at path, which must be absolute and
// clean (the real path the enforcer checked), following no symlink
// anywhere on the way: a symlink met at any component fails with an error
// wrapping ErrSymlink. Anything but a regular file fails with ErrNotRegular.
//
// flags are os.OpenFile flags; O_CLOEXEC, O_NOFOLLOW, O_NOCTTY and
// O_NONBLOCK are added. O_NONBLOCK is there so that a FIFO swapped in for the
// file cannot block the broker in open(2); it is cleared again once the file
// is known to be regular. A file created by O_CREAT gets mode 0644 less the
// umask; callers that want otherwise change it on the returned file.
//
// On Linux 5.6+ this is one openat2 with RESOLVE_NO_SYMLINKS (which also
// refuses /proc magic links); on older kernels it walks the path from "/"
// one component at a time, each opened with O_NOFOLLOW relative to the
// descriptor of the one before, so no component can be swapped behind it.
func OpenNoFollow(path string, flags int) (*os.File, error) {
	if err := checkOpenPath(path); err != nil {
		return nil, err
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK
	var mode uint32
	if flags&unix.O_CREAT != 0 {
		mode = 0o644
	}
	fd, err := openat2(path, flags, mode)
	if err != nil {
		return nil, err
	}
	return regularFile(fd, path, flags)
}

// symlinkFree reports whether path, absolute and clean, has no symlink on
// it now: an O_PATH openat2 with RESOLVE_NO_SYMLINKS succeeds only then,
// and opens nothing (no FIFO can block it, no device is touched). False
// when it cannot tell.
func symlinkFree(path string) bool {
	if noOpenat2.Load() {
		return false
	}
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := ignoringEINTR(func() (int, error) { return unix.Openat2(unix.AT_FDCWD, path, how) })
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func openat2(path string, flags int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		how := &unix.OpenHow{
			Flags:   uint64(flags),
			Mode:    uint64(mode),
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat2(unix.AT_FDCWD, path, how) })
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS):
			noOpenat2.Store(true)
		case errors.Is(err, unix.ELOOP):
			// With RESOLVE_NO_SYMLINKS, ELOOP means a link on the way.
			return -1, symlinkError(path, err)
		default:
			return -1, openError("openat2", path, err)
		}
	}
	return openWalk(path, flags, mode)
}

// openWalk is openat2 by hand: every directory is opened relative to the
// descriptor of its parent with O_NOFOLLOW, so each step is pinned to the
// directory the step before really found.
func openWalk(path string, flags int, mode uint32) (int, error) {
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, openError("open", "/", err)
	}
	names := strings.Split(path[1:], "/")
	last := len(names) - 1
	for _, name := range names[:last] {
		next, err := openDirStep(dir, name, path)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	defer unix.Close(dir)
	fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(dir, names[last], flags, mode) })
	if errors.Is(err, unix.ELOOP) {
		return -1, symlinkError(path, err) // O_NOFOLLOW met a link
	}
	if err != nil {
		return -1, openError("openat", path, err)
	}
	return fd, nil
}

// openDirStep opens one directory of the walk. O_PATH|O_NOFOLLOW opens a
// symlink itself rather than failing, so the fstat that follows tells
// what was really there when it was opened, not what is there a moment
// later.
func openDirStep(dir int, name, path string) (int, error) {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, openError("openat", path, err)
	}
	return requireDir(fd, path, "openat")
}

// requireDir keeps an O_PATH|O_NOFOLLOW fd only if it is a directory: a
// symlink found there is refused as one, anything else is ENOTDIR. It
// closes fd when it refuses it.
func requireDir(fd int, path, op string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, openError("fstat", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fd, nil
	case unix.S_IFLNK:
		unix.Close(fd)
		return -1, symlinkError(path, unix.ELOOP)
	}
	unix.Close(fd)
	return -1, openError(op, path, unix.ENOTDIR)
}

// ignoringEINTR retries open when a signal (Go's own preemption signal
// among them) interrupts it, as os.OpenFile does.
func ignoringEINTR(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func symlinkError(path string, errno error) error {
	return fmt.Errorf("open %s: %w: %w", path, ErrSymlink, errno)
}

// openError keeps the errno reachable, so errors.Is(err, fs.ErrNotExist)
// and fs.ErrPermission work.
func openError(op, path string, errno error) error {
	return &fs.PathError{Op: op, Path: path, Err: errno}
}

// regularFile checks that fd, opened with flags, is a regular file and
// hands it to an *os.File in blocking mode; otherwise it closes fd.
func regularFile(fd int, path string, flags int) (*os.File, error) {
	if _, err := regularFD(fd, path, flags); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// regularFD is regularFile for a bare descriptor; it returns the file's
// size.
func regularFD(fd int, path string, flags int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, openError("fstat", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return 0, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	// The status flags are those fd was opened with: set them less
	// O_NONBLOCK, without reading them back first (F_SETFL ignores the
	// access mode and the creation flags).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return 0, openError("fcntl", path, err)
	}
	return st.Size, nil
}

// openForRead opens path for Read as OpenNoFollow opens it for reading,
// and returns its size. Read's file lives for one call and is read once,
// front to back: the bare descriptor does, without the fcntl, the second
// fstat and the finalizer an *os.File would cost.
func openForRead(path string) (io.ReadCloser, int64, error) {
	if err := checkOpenPath(path); err != nil {
		return nil, 0, err
	}
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK
	fd, err := openat2(path, flags, 0)
	if err != nil {
		return nil, 0, err
	}
	size, err := regularFD(fd, path, flags)
	if err != nil {
		return nil, 0, err
	}
	return &fdReader{fd: fd, path: path}, size, nil
}

// fdReader reads a descriptor until EOF, then closes it.
type fdReader struct {
	fd   int
	path string
}

func (r *fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ignoringEINTR(func() (int, error) { return unix.Read(r.fd, p) })
	switch {
	case err != nil:
		return 0, &fs.PathError{Op: "read", Path: r.path, Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *fdReader) Close() error {
	if err := unix.Close(r.fd); err != nil {
		return &fs.PathError{Op: "close", Path: r.path, Err: err}
	}
	return nil
}
