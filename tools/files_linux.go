package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// newFileMode is the mode of a file Write creates.
const newFileMode = 0o644

// openDirNoFollow opens the directory at path (absolute and clean) as an
// O_PATH descriptor, following no symlink on the way or at the end. What
// is done relative to the descriptor then happens in that very directory,
// whatever is renamed or swapped along path afterwards.
func openDirNoFollow(path string) (int, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	if path == "/" {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, openError("open", path, err)
		}
		return fd, nil
	}
	// O_NOFOLLOW with O_PATH opens a final symlink itself instead of
	// failing, so the fstat below tells a link from a missing directory.
	fd, err := openat2(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return requireDir(fd, path, "open")
}

// pinnedParent opens the parent directory of path (openDirNoFollow) and
// returns it with the last element of path.
func pinnedParent(path string) (dirfd int, base string, err error) {
	if err := checkOpenPath(path); err != nil {
		return -1, "", err
	}
	dir, base := filepath.Split(path)
	dirfd, err = openDirNoFollow(filepath.Clean(dir))
	return dirfd, base, err
}

// statAt is what is at base in dirfd now: nil when nothing is, the stat of
// a regular file, ErrSymlink for a link, ErrNotRegular for anything else.
func statAt(dirfd int, base, path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case err != nil:
		return nil, openError("fstatat", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return &st, nil
	case unix.S_IFLNK:
		return nil, symlinkError(path, unix.ELOOP)
	}
	return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
}

// replaceFile is Write's I/O: path (the checked real path) becomes a
// regular file holding data, by replaceAt in its pinned parent.
func replaceFile(path string, data []byte) error {
	dirfd, base, err := pinnedParent(path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	// The check is for the error the skill gets; safety does not rest on
	// it, since the rename that follows never follows a link or writes
	// into an existing file.
	prev, err := statAt(dirfd, base, path)
	if err != nil {
		return err
	}
	return replaceAt(dirfd, base, path, data, prev)
}

// editFile is Edit's I/O: it reads the regular file at path (at most max
// bytes, else ErrFileTooLarge) through its pinned parent, and replaces it
// in that same directory with what edit returns.
func editFile(path string, max int64, edit func([]byte) ([]byte, error)) error {
	dirfd, base, err := pinnedParent(path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, base, flags, 0) })
	if errors.Is(err, unix.ELOOP) {
		return symlinkError(path, err)
	}
	if err != nil {
		return openError("openat", path, err)
	}
	f, err := regularFile(fd, path, flags)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	err = unix.Fstat(int(f.Fd()), &st)
	var old []byte
	if err == nil {
		old, err = io.ReadAll(io.LimitReader(f, max+1))
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(old)) > max {
		return fmt.Errorf("edit %s: %w", path, ErrFileTooLarge)
	}
	data, err := edit(old)
	if err != nil {
		return err
	}
	return replaceAt(dirfd, base, path, data, &st)
}

// replaceAt writes data to a new temporary file in dirfd and renames it
// over base. A reader sees the old file or the new one, never half of
// one; and since rename(2) replaces the name rather than writing through
// it, a link swapped in at base, or a hard link to a file elsewhere, is
// replaced instead of followed. prev is the file being replaced, or nil:
// its permission bits and owner carry over.
func replaceAt(dirfd int, base, path string, data []byte, prev *unix.Stat_t) (err error) {
	tmp, fd, err := createTemp(dirfd, path)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(path), tmp))
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0) // best effort: the name is ours and random
		}
	}()
	if err := setOwnerMode(fd, prev); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// fsync before the rename: after a crash the name holds the old bytes
	// or all the new ones, never an empty file. The directory is not
	// synced: the rename may be lost in a crash, but never half done.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("close %s: %w", path, cerr)
	}
	err = unix.Renameat(dirfd, tmp, dirfd, base)
	switch {
	case errors.Is(err, unix.EISDIR), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		// A directory was put at base since statAt looked.
		return &fs.PathError{Op: "rename", Path: path, Err: ErrNotRegular}
	case err != nil:
		return openError("renameat", path, err)
	}
	return nil
}

// createTemp creates a fresh file in dirfd under a random name. O_EXCL
// refuses any name that exists, a symlink included, so it never opens
// someone else's file.
func createTemp(dirfd int, path string) (string, int, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for range 4 {
		var r [8]byte
		rand.Read(r[:]) // never fails (crypto/rand)
		name := ".skillrun-" + hex.EncodeToString(r[:]) + ".tmp"
		// 0600 until setOwnerMode: the bytes are not anyone's to read
		// before the file has its final owner and mode.
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, 0o600) })
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, openError("openat", filepath.Join(filepath.Dir(path), name), err)
		}
		return name, fd, nil
	}
	return "", -1, openError("openat", path, unix.EEXIST)
}

// setOwnerMode gives the temporary file the mode of prev, or newFileMode.
// Only permission bits carry over: a body a skill wrote must not become a
// setuid or setgid program. The owner carries over when the broker may
// set it (it runs as root, or owns the file); otherwise the file becomes
// the broker's, as with any editor that saves by rename.
func setOwnerMode(fd int, prev *unix.Stat_t) error {
	mode := uint32(newFileMode)
	if prev != nil {
		mode = prev.Mode & 0o777
		if err := unix.Fchown(fd, int(prev.Uid), int(prev.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("fchown: %w", err)
		}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("fchmod: %w", err)
	}
	return nil
}
