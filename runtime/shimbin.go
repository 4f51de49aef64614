package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// hide a tampered or half-installed copy.
func LocateShim(exe string) (path string, dedicated bool, err error) {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	candidate := filepath.Join(filepath.Dir(exe), ShimName)
	real, err := filepath.EvalSymlinks(candidate)
	if errors.Is(err, fs.ErrNotExist) {
		return exe, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("shim %s: %w", candidate, err)
	}
	if err := checkShimBinary(real, exe); err != nil {
		return "", false, fmt.Errorf("shim %s: %w", real, err)
	}
	return real, true, nil
}

// checkShimBinary applies LocateShim's rules to path.
func checkShimBinary(path, exe string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	perm := st.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("mode %04o: writable by group or others; it would run as root in every sandbox (chmod go-w)", perm)
	}
	if perm&0o001 == 0 {
		return fmt.Errorf("mode %04o: not executable by others, as the invocation's uid runs it (chmod o+rx)", perm)
	}
	owner, ok := fileOwner(st)
	if !ok {
		return nil
	}
	exeSt, err := os.Stat(exe)
	if err != nil {
		return err
	}
	if exeOwner, _ := fileOwner(exeSt); owner != 0 && owner != exeOwner {
		return fmt.Errorf("owned by uid %d, neither root nor the owner of %s (uid %d)", owner, exe, exeOwner)
	}
	return nil
}

func fileOwner(st fs.FileInfo) (uint32, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Uid, true
	}
	return 0, false
}
