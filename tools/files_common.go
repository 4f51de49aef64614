package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillrun/skillrun/enforce"
)

// Sentinels of the file tools (Write, Edit, Glob, Grep).
var (
	// ErrFileTooLarge means a file over the cap Edit reads.
	ErrFileTooLarge = errors.New("file too large")
	// ErrOldNotFound means Edit's old string is not in the file.
	ErrOldNotFound = errors.New("old string not found")
	// ErrOldAmbiguous means Edit's old string occurs more than once and
	// replace_all is not set.
	ErrOldAmbiguous = errors.New("old string occurs more than once")
	// ErrEnforcerMismatch means a Glob or Grep was prepared with another
	// enforcer than the one it was built with, which filters its results:
	// a wiring bug, refused rather than filtered by the wrong policy.
	ErrEnforcerMismatch = errors.New("tool built for another enforcer")
)

// The reasons of the file tools' failures, as tool_error data.reason.
const (
	ReasonOldNotFound  = "old_not_found"
	ReasonOldAmbiguous = "old_ambiguous"
	ReasonFileTooLarge = "file_too_large"
)

// DefaultWriteMax caps Write's body and the file Edit reads and writes.
const DefaultWriteMax = 8 << 20

// fileToolSpec is name's entry of NativeSpecs, so each schema lives in one
// place. It panics on a name NativeSpecs lacks: a programming error.
func fileToolSpec(name string) Spec {
	for _, s := range NativeSpecs() {
		if s.Name == name {
			return s
		}
	}
	panic("tools: NativeSpecs has no " + name)
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkWritePath is Prepare's check for a file Write or Edit will replace:
// CheckFile, except that a path whose parent directory is missing is
// resolved through its deepest existing ancestor and, if that real path is
// allowed, goes on to fail at Invoke as not found. Reporting file_violation
// for a missing directory inside the grant would be wrong; one outside is
// still denied here, and says nothing about what exists there.
func checkWritePath(e *enforce.Enforcer, tool, p string) (string, error) {
	if !e.FileWrite() {
		// The broker's CheckTool already refused a skill without Write or
		// Edit; this holds even if a tool is ever wired without it.
		return "", enforce.Deny(enforce.ReasonToolNotAllowed, tool, "x-allowed-files are not writable")
	}
	real, err := e.CheckFile(tool, p)
	if err == nil {
		return real, nil
	}
	if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return "", err
	}
	clean := filepath.Clean(p)
	anc := filepath.Dir(clean)
	if _, lerr := os.Lstat(anc); !errors.Is(lerr, fs.ErrNotExist) {
		return "", err // the parent exists (or cannot be looked at): CheckFile stands
	}
	for {
		anc = filepath.Dir(anc)
		_, lerr := os.Lstat(anc)
		if lerr == nil {
			break
		}
		if !errors.Is(lerr, fs.ErrNotExist) {
			return "", err
		}
	}
	realAnc, rerr := filepath.EvalSymlinks(anc)
	if rerr != nil {
		return "", err
	}
	rel, rerr := filepath.Rel(anc, clean)
	if rerr != nil {
		return "", err
	}
	candidate := filepath.Join(realAnc, rel)
	if err := e.CheckFilePath(tool, candidate); err != nil {
		return "", err
	}
	return candidate, nil
}

// useError turns an error met using a checked path into what the skill
// gets: a symlink on the way is a file_violation denial (the path was
// symlink-free when checked, so one there now is a swap); anything else is
// wrapped with the operation.
func useError(tool, op, path string, err error) error {
	if errors.Is(err, ErrSymlink) {
		return enforce.Deny(enforce.ReasonFileViolation, tool, "symlink on the way to %s", path)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
