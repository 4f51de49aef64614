package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrChanged means the skill tree changed between loading and copying:
// what would run is not what was hashed and trusted.
var ErrChanged = errors.New("skill changed while loading")

// Materialize copies the snapshot's tree to dst (which must not exist) and
// checks the copy hashes to the snapshot's hash. The sandbox runs the copy,
// so an edit made after the trust check cannot reach the skill, and the
// copy is readable by the invocation's own uid whatever the original's
// owner and modes: directories 0755, files 0644 or 0755 by their exec bit.
func (s *Snapshot) Materialize(dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("materialize: %w", err)
	}
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil || rel == "." {
			return err
		}
		return copyEntry(p, filepath.Join(dst, rel), d)
	})
	if err != nil {
		return fmt.Errorf("materialize %s: %w", s.dir, err)
	}
	got, err := HashTree(dst)
	if err != nil {
		return fmt.Errorf("materialize: %w", err)
	}
	if got != s.hash {
		return fmt.Errorf("%s: %w", s.dir, ErrChanged)
	}
	return nil
}

func copyEntry(src, dst string, d fs.DirEntry) error {
	switch t := d.Type(); {
	case t.IsDir():
		return os.Mkdir(dst, 0o755)
	case t&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case t.IsRegular():
		return copyFile(src, dst)
	}
	// Sockets, fifos and devices are recorded by the hash but not copied:
	// a skill has no business shipping them, and the hash check fails.
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if info.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(mode); err != nil { // the umask may have taken bits
		out.Close()
		return err
	}
	return out.Close()
}
