package skill

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

const minimalSkill = "---\nname: report\ndescription: Monthly report.\nallowed-tools: Read\n---\nbody\n"

// writeSkill makes a skill folder named name under root with an
// executable entrypoint and returns its path.
func writeSkill(t *testing.T, root, name, skillMD string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(skillMD), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadResolvesSymlinkedFolder(t *testing.T) {
	root := t.TempDir()
	real := writeSkill(t, filepath.Join(root, "pack", "skills"), "report", minimalSkill)
	link := filepath.Join(root, "linked")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := Load(link)
	if err != nil {
		t.Fatal(err)
	}
	wantDir, _ := filepath.EvalSymlinks(real)
	if s.Dir() != wantDir {
		t.Fatalf("Dir = %s, want the resolved %s", s.Dir(), wantDir)
	}
	if s.ID() != "report" || len(s.Hash()) != 64 {
		t.Fatalf("id %q hash %q", s.ID(), s.Hash())
	}
	if len(s.Warnings()) != 0 {
		t.Fatalf("unexpected warnings: %v", s.Warnings())
	}
}

func TestLoadFailures(t *testing.T) {
	root := t.TempDir()
	t.Run("missing folder", func(t *testing.T) {
		_, err := Load(filepath.Join(root, "nope"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist", err)
		}
	})
	t.Run("no SKILL.md", func(t *testing.T) {
		dir := filepath.Join(root, "empty")
		os.Mkdir(dir, 0o755)
		_, err := Load(dir)
		if !errors.Is(err, ErrNotSkill) {
			t.Fatalf("err = %v, want ErrNotSkill", err)
		}
	})
	t.Run("SKILL.md is a symlink", func(t *testing.T) {
		dir := filepath.Join(root, "linkmd")
		os.Mkdir(dir, 0o755)
		os.Symlink("/etc/hostname", filepath.Join(dir, FileName))
		_, err := Load(dir)
		var le *LoadError
		if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v, want *LoadError", err)
		}
	})
	t.Run("bad frontmatter names the line", func(t *testing.T) {
		dir := writeSkill(t, root, "bad", "---\nname: bad\ndescription: d\neffort_minutes: -3\n---\n")
		_, err := Load(dir)
		want := filepath.Join(dir, FileName) + ":4: effort_minutes: must be between 1 and 1440, got -3"
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v\nwant %s", err, want)
		}
	})
}

func TestLoadWarnsAboutEntrypointAndName(t *testing.T) {
	root := t.TempDir()
	dir := writeSkill(t, root, "folder", "---\nname: other\ndescription: d\nx-entrypoint: run.sh\n---\n")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range s.Warnings() {
		got[w.Field] = true
	}
	if !got["name"] || !got["x-entrypoint"] {
		t.Fatalf("warnings = %v, want name and x-entrypoint", s.Warnings())
	}
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("x"), 0o644)
	s, _ = Load(dir)
	for _, w := range s.Warnings() {
		if w.Field == "x-entrypoint" && w.Message != "run.sh is not executable; exec will fail with 126" {
			t.Fatalf("warning %q", w)
		}
	}
}

func TestHashTree(t *testing.T) {
	root := t.TempDir()
	dir := writeSkill(t, root, "report", minimalSkill)
	os.MkdirAll(filepath.Join(dir, "lib", "deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "lib", "deep", "a.txt"), []byte("a"), 0o644)
	base, err := HashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Same content elsewhere, created in another order: same hash.
	other := filepath.Join(root, "copy")
	os.MkdirAll(filepath.Join(other, "lib", "deep"), 0o755)
	os.WriteFile(filepath.Join(other, "lib", "deep", "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(other, "main"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(other, FileName), []byte(minimalSkill), 0o644)
	if h, _ := HashTree(other); h != base {
		t.Fatalf("hash depends on location or order: %s != %s", h, base)
	}
	changes := []struct {
		name string
		do   func()
		undo func()
	}{
		{"edit a file", func() { os.WriteFile(filepath.Join(dir, "lib", "deep", "a.txt"), []byte("b"), 0o644) },
			func() { os.WriteFile(filepath.Join(dir, "lib", "deep", "a.txt"), []byte("a"), 0o644) }},
		{"exec bit", func() { os.Chmod(filepath.Join(dir, "main"), 0o644) }, func() { os.Chmod(filepath.Join(dir, "main"), 0o755) }},
		{"add empty dir", func() { os.Mkdir(filepath.Join(dir, "new"), 0o755) }, func() { os.Remove(filepath.Join(dir, "new")) }},
		{"add symlink", func() { os.Symlink("/etc/passwd", filepath.Join(dir, "l")) }, func() { os.Remove(filepath.Join(dir, "l")) }},
		{"rename", func() { os.Rename(filepath.Join(dir, "lib"), filepath.Join(dir, "lib2")) }, func() { os.Rename(filepath.Join(dir, "lib2"), filepath.Join(dir, "lib")) }},
	}
	for _, c := range changes {
		c.do()
		h, err := HashTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		if h == base {
			t.Errorf("%s: hash unchanged", c.name)
		}
		c.undo()
		if h, _ := HashTree(dir); h != base {
			t.Fatalf("%s: undo did not restore the hash", c.name)
		}
	}
}

func TestMaterialize(t *testing.T) {
	root := t.TempDir()
	dir := writeSkill(t, root, "report", minimalSkill)
	os.MkdirAll(filepath.Join(dir, "lib"), 0o700)
	os.WriteFile(filepath.Join(dir, "lib", "secret-mode.txt"), []byte("x"), 0o600)
	os.Symlink("lib/secret-mode.txt", filepath.Join(dir, "link"))
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "copy")
	if err := s.Materialize(dst); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"lib": 0o755 | os.ModeDir, "lib/secret-mode.txt": 0o644, "main": 0o755} {
		info, err := os.Lstat(filepath.Join(dst, p))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, info.Mode(), err, want)
		}
	}
	if target, _ := os.Readlink(filepath.Join(dst, "link")); target != "lib/secret-mode.txt" {
		t.Errorf("symlink not recreated: %q", target)
	}
	// An edit after loading must not reach the copy unnoticed.
	os.WriteFile(filepath.Join(dir, "main"), []byte("#!/bin/sh\nrm -rf /\n"), 0o755)
	if err := s.Materialize(filepath.Join(root, "copy2")); !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v, want ErrChanged", err)
	}
}
