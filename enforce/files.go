package enforce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrRelativePath means a file tool was given a path that is not absolute:
// the broker has no working directory of the skill to resolve it against.
var ErrRelativePath = errors.New("file path must be absolute")

// ResolveFilePath returns the real path a file tool would touch: p made
// clean and every symlink resolved. A path whose last element does not
// exist yet (a Write creating a file) resolves through its parent. The
// result is what the glob check sees; the tool must then open exactly that
// path refusing symlinks, so a link swapped in afterwards fails the open.
func ResolveFilePath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", ErrPathNUL
	}
	if !filepath.IsAbs(p) {
		return "", ErrRelativePath
	}
	clean := filepath.Clean(p)
	real, err := filepath.EvalSymlinks(clean)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("resolve %s: %w", clean, err)
	}
	dir, base := filepath.Split(clean)
	if _, lerr := os.Lstat(clean); lerr == nil {
		// The name exists but does not resolve: a dangling symlink. Writing
		// through it would create its target, wherever that is.
		return "", fmt.Errorf("resolve %s: dangling symlink: %w", clean, fs.ErrNotExist)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	return filepath.Join(realDir, base), nil
}
