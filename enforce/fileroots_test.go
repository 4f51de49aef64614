package enforce

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGlobRootAndDepth(t *testing.T) {
	tests := []struct {
		pattern string
		root    string
		ok      bool
		depth   int
	}{
		{"/a/b/**", "/a/b", true, -1},
		{"/a/b/*.txt", "/a/b", true, 3},
		{"/a/b*", "/a", true, 2},
		{"/a/b.txt", "/a/b.txt", true, 2},
		{"/**", "/", true, -1},
		{"/*", "/", true, 1},
		{"/", "/", true, 1},
		{"**/x", "/", true, -1},
		{"{/a,/b}/x", "/", true, 3},
		{`/a/\*/x`, "/a/*/x", true, 3},
		{"/a/[bc]/x", "/a", true, -1},
		{"/a/?/x", "/a", true, 3},
		{"/a/../etc/*", "", false, 4},
		{"/a//b/*", "", false, 4},
		{"/a/./b", "", false, 3},
		{"/a/b/", "", false, 3},
		{"a/b/*", "", false, 2},
		{"/a\x00/*", "", false, 2},
		{"", "", false, 0},
	}
	for _, tt := range tests {
		root, ok := GlobRoot(tt.pattern)
		if root != tt.root || ok != tt.ok {
			t.Errorf("GlobRoot(%q) = %q, %v; want %q, %v", tt.pattern, root, ok, tt.root, tt.ok)
		}
		if d := GlobDepth(tt.pattern); d != tt.depth {
			t.Errorf("GlobDepth(%q) = %d, want %d", tt.pattern, d, tt.depth)
		}
	}
}

// TestGlobRootBoundsMatches checks the property the walks rely on: every
// path a glob matches lies under its root and is no deeper than its depth.
func TestGlobRootBoundsMatches(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c.txt", "/a/bc", "/ab/c", "/a/*/x", "/x/a/b", "/a/b/c/d/e.txt"}
	for _, p := range []string{"/a/b/**", "/a/b*", "/a/*/x", "/**", "**/b", "/a/{b,bc}", "/*/a/b", "/a/b/*.txt", "/a/**/e.txt"} {
		g, err := CompileFileGlob(p)
		if err != nil {
			t.Fatal(err)
		}
		root, _ := GlobRoot(p)
		depth := GlobDepth(p)
		for _, x := range paths {
			if !g.Match(x) {
				continue
			}
			if !WithinRoot(x, root) {
				t.Errorf("%q matches %q outside its root %q", p, x, root)
			}
			if depth >= 0 && countSlash(x) > depth {
				t.Errorf("%q matches %q deeper than %d", p, x, depth)
			}
		}
	}
}

func countSlash(s string) (n int) {
	for i := range len(s) {
		if s[i] == '/' {
			n++
		}
	}
	return n
}

func TestFileRootsAndCheckFileTree(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"data/x", "data-x", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := compileDeclaration(Declaration{SkillID: "t", Files: []string{
		dir + "/data/**", dir + "/data/sub/*.txt", dir + "/notes.md", dir + "/data-x/*", "relative/*",
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantRoots := []string{dir + "/data", dir + "/data-x", dir + "/notes.md"}
	if got := e.FileRoots(); !slices.Equal(got, wantRoots) {
		t.Fatalf("FileRoots = %q, want %q", got, wantRoots)
	}
	if d := e.FileDepth(); d != -1 {
		t.Fatalf("FileDepth = %d, want -1", d)
	}
	tests := []struct {
		path string
		want error
	}{
		{dir + "/data", nil},
		{dir + "/data/x", nil},
		{dir + "/data-x", nil},
		{dir + "/notes.md", nil},
		{dir, ErrFileViolation},
		{dir + "/other", ErrFileViolation},
		{"/", ErrFileViolation},
		{"relative", ErrFileViolation},
	}
	for _, tt := range tests {
		if _, err := e.CheckFileTree("Grep", tt.path); !errors.Is(err, tt.want) {
			t.Errorf("CheckFileTree(%q) = %v, want %v", tt.path, err, tt.want)
		}
	}
}
