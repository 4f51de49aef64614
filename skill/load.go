package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the declaration file every skill folder holds.
const FileName = "SKILL.md"

// maxSkillFile bounds SKILL.md; the body is instructions, not data.
const maxSkillFile = 4 << 20

// Load reads the skill folder at dir: it resolves every symlink of the
// folder path (a skill linked from a pack reads its own tree, never the
// pack's), parses and validates SKILL.md, checks the entrypoint and hashes
// the resolved tree. A declaration with errors yields a *LoadError listing
// all of them; I/O failures are returned wrapped with the path.
func Load(dir string) (*Snapshot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if info, err := os.Stat(resolved); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory: %w", dir, ErrNotSkill)
	}
	display := filepath.Join(dir, FileName)
	data, err := readSkillFile(filepath.Join(resolved, FileName), display)
	if err != nil {
		return nil, err
	}
	m, diags := Parse(display, data)
	diags = append(diags, checkFolder(m, resolved, display)...)
	if hasErrors(diags) {
		return nil, &LoadError{Diagnostics: diags}
	}
	hash, err := HashTree(resolved)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(m, resolved, display, hash, diags), nil
}

// readSkillFile refuses a SKILL.md that is a symlink: the declaration must
// be part of the tree that is hashed and mounted, not a pointer out of it.
func readSkillFile(p, display string) ([]byte, error) {
	info, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file: %w", display, ErrNotSkill)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	if !info.Mode().IsRegular() {
		return nil, &LoadError{Diagnostics: []Diagnostic{{File: display, Field: "SKILL.md", Message: "must be a regular file, not a symlink or special file", Severity: SeverityError}}}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	if len(data) > maxSkillFile {
		return nil, &LoadError{Diagnostics: []Diagnostic{{File: display, Field: "SKILL.md", Message: "larger than 4 MiB", Severity: SeverityError}}}
	}
	return data, nil
}

// checkFolder reports what the declaration says about the folder that is
// not so: a missing entrypoint is a warning here (instruction-only skills
// validate) and exit 127 at exec time.
func checkFolder(m Manifest, resolved, display string) []Diagnostic {
	var out []Diagnostic
	warn := func(line int, field, format string, args ...any) {
		out = append(out, Diagnostic{File: display, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if m.Name != "" && m.Name != filepath.Base(resolved) {
		warn(m.Line("name"), "name", "%q differs from the folder name %q; the name is the skill id", m.Name, filepath.Base(resolved))
	}
	ep := filepath.Join(resolved, filepath.FromSlash(m.Entrypoint))
	line := m.Line("x-entrypoint")
	switch info, err := os.Stat(ep); {
	case err != nil:
		warn(line, "x-entrypoint", "%s not found; exec will fail with 127", m.Entrypoint)
	case !info.Mode().IsRegular():
		warn(line, "x-entrypoint", "%s is not a regular file; exec will fail with 126", m.Entrypoint)
	case info.Mode().Perm()&0o111 == 0:
		warn(line, "x-entrypoint", "%s is not executable; exec will fail with 126", m.Entrypoint)
	}
	return out
}

func hasErrors(diags []Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}
