//go:build unix

package store

import (
	"os"
	"syscall"
)

// fileOwner returns the uid owning fi, and whether the platform reports one.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
