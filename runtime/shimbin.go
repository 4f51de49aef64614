package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ShimName is the file name of the dedicated shim binary (cmd/skillrun-shim)
// installed beside the skillrun binary.
const ShimName = "skillrun-shim"

// LocateShim returns the host binary the sandbox runs as its pid 1 and exec
// stage: ShimName beside exe when it is installed there, else exe itself,
// which has the same subcommands but is about fifteen times larger, so
// every invocation starts some milliseconds slower. dedicated says which.
//
// The shim runs as root inside every sandbox, so an installed one must be
// as safe as exe: a regular file (symlinks are followed), owned by root or
// by exe's owner, writable by nobody else, and executable by others (the
// exec stage runs it as the invocation's uid). One that is not is refused
// with an error naming it, rather than passed over: a quiet fallback would
// hide a tampered or half-installed copy. The same goes for every
// directory on the way to it (and to exe, when exe plays the shim): the
// sandbox bind-mounts the file by path later, and whoever may rename
// entries in one of them could swap the binary in between.
func LocateShim(exe string) (path string, dedicated bool, err error) {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	candidate := filepath.Join(filepath.Dir(exe), ShimName)
	if _, err := os.Lstat(candidate); errors.Is(err, fs.ErrNotExist) {
		if err := CheckShim(exe, exe); err != nil {
			return "", false, fmt.Errorf("shim %s (skillrun itself): %w", exe, err)
		}
		return exe, false, nil
	}
	real, err := filepath.EvalSymlinks(candidate)
	if err != nil {
		return "", false, fmt.Errorf("shim %s: %w", candidate, err)
	}
	if err := CheckShim(real, exe); err != nil {
		return "", false, fmt.Errorf("shim %s: %w", real, err)
	}
	return real, true, nil
}

// CheckShim applies LocateShim's rules to path, a symlink-free absolute
// path, for a supervisor running exe (symlink-free too): the file must be
// regular, owned by root or by exe's owner, writable by no one else,
// without setuid or setgid bits, and executable by others; no directory
// above it may be writable by group or others unless it has the sticky
// bit (which keeps them from renaming what they do not own), and one that
// does not also hold exe must be owned by root or by exe's owner.
func CheckShim(path, exe string) error {
	exeSt, err := os.Stat(exe)
	if err != nil {
		return err
	}
	exeOwner, _ := fileOwner(exeSt)
	trusted := func(st fs.FileInfo) bool {
		owner, ok := fileOwner(st)
		return !ok || owner == 0 || owner == exeOwner
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	mode := st.Mode()
	if mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return fmt.Errorf("mode %s: setuid or setgid bit set (chmod ug-s)", mode)
	}
	perm := mode.Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("mode %04o: writable by group or others; it would run as root in every sandbox (chmod go-w)", perm)
	}
	if perm&0o001 == 0 {
		return fmt.Errorf("mode %04o: not executable by others, as the invocation's uid runs it (chmod o+rx)", perm)
	}
	if !trusted(st) {
		owner, _ := fileOwner(st)
		return fmt.Errorf("owned by uid %d, neither root nor the owner of %s (uid %d)", owner, exe, exeOwner)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		dst, err := os.Lstat(dir)
		if err != nil {
			return err
		}
		// A folder skillrun itself lies in is trusted as far as skillrun
		// is: whoever owns it could replace skillrun as well (a checkout
		// of another user's, built and run with sudo, is one).
		if !trusted(dst) && !within(filepath.Dir(exe), dir) {
			owner, _ := fileOwner(dst)
			return fmt.Errorf("folder %s is owned by uid %d, who could swap the binary (neither root nor the owner of %s)", dir, owner, exe)
		}
		if dst.Mode().Perm()&0o022 != 0 && dst.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("folder %s is writable by group or others (mode %04o), who could swap the binary (chmod go-w)", dir, dst.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// within reports whether path is dir or lies beneath it; both clean.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func fileOwner(st fs.FileInfo) (uint32, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Uid, true
	}
	return 0, false
}
