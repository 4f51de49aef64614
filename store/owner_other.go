//go:build !unix

package store

import "os"

// fileOwner is best effort off Unix: there is no uid to compare, so the
// ownership check is skipped and only the mode bits are checked.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
