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
	t.Run("refused: setuid", func(t *testing.T) {
		_, exe := install(t, 0o755|os.ModeSetuid)
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "setuid or setgid") {
			t.Fatalf("LocateShim of a setuid shim: %v, want a refusal", err)
		}
	})
	t.Run("refused: a dangling symlink", func(t *testing.T) {
		dir, exe := install(t, 0)
		if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, ShimName)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), ShimName) {
			t.Fatalf("LocateShim with a dangling %s: %v, want an error, not skillrun itself", ShimName, err)
		}
	})
	t.Run("refused: a folder others can write", func(t *testing.T) {
		dir, exe := install(t, 0o755)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
			t.Fatalf("LocateShim in a 0777 folder: %v, want a refusal naming the folder", err)
		}
		// The sticky bit keeps others from renaming what is not theirs.
		if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err != nil {
			t.Fatalf("LocateShim in a sticky 1777 folder: %v", err)
		}
	})
	t.Run("refused: skillrun itself in a folder others can write", func(t *testing.T) {
		dir, exe := install(t, 0)
		if err := os.Chmod(dir, 0o757); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "skillrun itself") {
			t.Fatalf("LocateShim of skillrun in a 0757 folder: %v, want a refusal", err)
		}
	})
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
	t.Run("accepted: a folder another user owns that holds skillrun too", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root: only root can give a folder another owner")
		}
		// A user's checkout, built and run with sudo: the user could swap
		// skillrun itself, so the shim beside it is no weaker.
		dir, exe := install(t, 0o755)
		if err := os.Chown(dir, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if got, dedicated, err := LocateShim(exe); err != nil || !dedicated {
			t.Fatalf("LocateShim in a folder of uid 1000 that holds skillrun: %q, %v, %v", got, dedicated, err)
		}
	})
	t.Run("refused: a symlink into a folder another user owns", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root: only root can give a folder another owner")
		}
		dir, exe := install(t, 0)
		theirs := t.TempDir()
		target := filepath.Join(theirs, "shim")
		if err := os.WriteFile(target, []byte("shim"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, ShimName)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LocateShim(exe); err == nil || !strings.Contains(err.Error(), "owned by uid 1000") {
			t.Fatalf("LocateShim through a folder of uid 1000: %v, want a refusal naming it", err)
		}
	})
}
