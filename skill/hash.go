package skill

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Limits on what a skill tree may hold before hashing refuses it; a skill
// is code and a few assets, and an unbounded walk is a denial of service.
const (
	MaxTreeEntries = 20000
	MaxTreeBytes   = 1 << 30
)

// HashTree returns the hex SHA-256 content hash of the tree at dir. It is
// independent of walk order and of timestamps: it covers each entry's
// relative path, its kind, the executable bit of files, the bytes of files
// and the target text of symlinks (which are recorded, not followed, so a
// link can neither pull outside files into the hash nor change silently).
func HashTree(dir string) (string, error) {
	type entry struct{ rel, line string }
	var entries []entry
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("hash %s: %w", p, err)
		}
		if len(entries) >= MaxTreeEntries {
			return fmt.Errorf("%s: more than %d entries: %w", dir, MaxTreeEntries, ErrTreeTooLarge)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		var line string
		switch t := d.Type(); {
		case t.IsDir():
			line = "d " + rel
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("hash %s: %w", p, err)
			}
			line = fmt.Sprintf("l %q %s", target, rel)
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("hash %s: %w", p, err)
			}
			if total += info.Size(); total > MaxTreeBytes {
				return fmt.Errorf("%s: more than %s: %w", dir, FormatSize(MaxTreeBytes), ErrTreeTooLarge)
			}
			sum, err := hashFile(p)
			if err != nil {
				return err
			}
			line = fmt.Sprintf("f %d %s %s", info.Mode().Perm()&0o111, sum, rel)
		default:
			// Sockets, devices and fifos have no content to pin; their
			// presence and name still change the hash.
			line = fmt.Sprintf("o %o %s", uint32(t), rel)
		}
		entries = append(entries, entry{rel, line})
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	io.WriteString(h, "skillrun-tree-v1\n")
	for _, e := range entries {
		io.WriteString(h, e.line)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
