package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocateShim(t *testing.T) {
	install := func(t *testing.T, shimMode os.FileMode) (dir, exe string) {
		dir = t.TempDir()
		exe = filepath.Join(dir, "skillrun")
		if err := os.WriteFile(exe, []byte("skillrun"), 0o755); err != nil {
			t.Fatal(err)
		}
		if shimMode != 0 {
			shim := filepath.Join(dir, ShimName)
			if err := os.WriteFile(shim, []byte("shim"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(shim, shimMode); err != nil {
				t.Fatal(err)
			}
		}
		return dir, exe
	}

	t.Run("absent: the skillrun binary itself", func(t *testing.T) {
		_, exe := install(t, 0)
		got, dedicated, err := LocateShim(exe)
		if err != nil || dedicated || got != exe {
			t.Fatalf("LocateShim = %q, %v, %v; want %q, false, nil", got, dedicated, err, exe)
		}
	})
	t.Run("installed beside it", func(t *testing.T) {
		dir, exe := install(t, 0o755)
		got, dedicated, err := LocateShim(exe)
		if want := filepath.Join(dir, ShimName); err != nil || !dedicated || got != want {
			t.Fatalf("LocateShim = %q, %v, %v; want %q, true, nil", got, dedicated, err, want)
		}
	})
	t.Run("found through a symlinked skillrun", func(t *testing.T) {
		dir, exe := install(t, 0o755)
		link := filepath.Join(t.TempDir(), "skillrun")
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
		got, dedicated, err := LocateShim(link)
		if want := filepath.Join(dir, ShimName); err != nil || !dedicated || got != want {
			t.Fatalf("LocateShim = %q, %v, %v; want %q, true, nil", got, dedicated, err, want)
		}
	})
	for _, tc := range []struct {
		name string
		mode os.FileMode
		want string
	}{
		{"writable by others", 0o757, "writable by group or others"},
		{"writable by the group", 0o775, "writable by group or others"},
		{"not executable by others", 0o750, "not executable by others"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, exe := install(t, tc.mode)
			got, _, err := LocateShim(exe)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ShimName) {
				t.Fatalf("LocateShim = %q, %v; want an error naming %s and saying %q", got, err, ShimName, tc.want)
			}
		})
	}
	t.Run("refused: a directory", func(t *testing.T) {
		dir, exe := install(t, 0)
		if err := os.Mkdir(filepath.Join(dir, ShimName), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LocateShim of a directory: %v, want 'not a regular file'", err)
		}
	})
	t.Run("refused: owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root: only root can give the shim file another owner")
		}
		dir, exe := install(t, 0o755)
		if err := os.Chown(filepath.Join(dir, ShimName), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("LocateShim of a shim owned by 65534: %v, want 'owned by uid 65534'", err)
		}
	})
}
