package enforce

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveFilePath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "x.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	tests := []struct {
		in, want string
		err      error
	}{
		{file, file, nil},
		{dir + "/sub/../x.txt", file, nil},
		{dir + "/link", "/etc/passwd", nil},
		{dir + "/new.txt", dir + "/new.txt", nil},
		{dir + "/sub/new.txt", dir + "/sub/new.txt", nil},
		{dir + "/dangling", "", fs.ErrNotExist},
		{dir + "/missing/new.txt", "", fs.ErrNotExist},
		{"relative.txt", "", ErrRelativePath},
		{dir + "/a\x00b", "", ErrPathNUL},
	}
	for _, tt := range tests {
		got, err := ResolveFilePath(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("ResolveFilePath(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}
