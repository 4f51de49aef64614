package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openTest opens a fresh store in a temp dir and closes it at cleanup.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openDir(t, t.TempDir())
}

func openDir(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestResolveRoot(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		euid int
		want string
	}{
		{"override wins for root", map[string]string{"SKILLRUN_ROOT": "/srv/sr", "HOME": "/root"}, 0, "/srv/sr"},
		{"override wins for user", map[string]string{"SKILLRUN_ROOT": "rel/dir", "XDG_STATE_HOME": "/x"}, 1000, "rel/dir"},
		{"root", map[string]string{"HOME": "/root", "XDG_STATE_HOME": "/x"}, 0, "/var/lib/skillrun"},
		{"xdg", map[string]string{"HOME": "/home/a", "XDG_STATE_HOME": "/home/a/st"}, 1000, "/home/a/st/skillrun"},
		{"relative xdg ignored", map[string]string{"HOME": "/home/a", "XDG_STATE_HOME": "st"}, 1000, "/home/a/.local/state/skillrun"},
		{"home fallback", map[string]string{"HOME": "/home/a"}, 1000, "/home/a/.local/state/skillrun"},
		{"nothing", map[string]string{}, 1000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveRoot(func(k string) string { return tt.env[k] }, tt.euid)
			if got != tt.want {
				t.Errorf("ResolveRoot = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultRootEnv(t *testing.T) {
	t.Setenv(RootEnv, "/tmp/skillrun-test-root")
	if got := DefaultRoot(); got != "/tmp/skillrun-test-root" {
		t.Errorf("DefaultRoot = %q", got)
	}
}

func TestOpenCreates(t *testing.T) {
	// The odd characters would be read as URI syntax if the DSN did not
	// escape the path.
	dir := filepath.Join(t.TempDir(), "a b?c=1#d%20e", "state")
	s := openDir(t, dir)
	if s.Path() != filepath.Join(dir, DBName) {
		t.Errorf("Path = %q", s.Path())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %#o, want %#o", path, got, want)
		}
	}
	// SQLite must have opened the file we checked, not a name cut at '?'.
	entries, err := os.ReadDir(filepath.Dir(filepath.Dir(dir)))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "a b?c=1#d%20e" {
		t.Errorf("stray files next to the state dir: %v", entries)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(s.Path() + suffix)
		if err != nil {
			t.Fatalf("WAL file: %v", err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", fi.Name(), got)
		}
	}
	pragmas := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1", "busy_timeout": "5000"}
	for p, want := range pragmas {
		var got string
		if err := s.db.QueryRowContext(t.Context(), "PRAGMA "+p).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want %q", p, got, want)
		}
	}
}

func TestOpenEmptyDir(t *testing.T) {
	if _, err := Open(t.Context(), ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open(\"\") = %v, want ErrInvalid", err)
	}
}

func TestMigrations(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 { // from empty, then re-open twice: idempotent
		s, err := Open(t.Context(), dir)
		if err != nil {
			t.Fatalf("open #%d: %v", i, err)
		}
		v, err := userVersion(t.Context(), s.db)
		if err != nil {
			t.Fatal(err)
		}
		if v != SchemaVersion {
			t.Errorf("open #%d: user_version %d, want %d", i, v, SchemaVersion)
		}
		var tables int
		err = s.db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table'
			AND name IN ('invocations','audit','trust','quarantine','memory','memory_fts','approvals')`).Scan(&tables)
		if err != nil {
			t.Fatal(err)
		}
		if tables != 7 {
			t.Errorf("open #%d: %d tables, want 7", i, tables)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSchemaTooNew(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	if _, err := s.db.ExecContext(t.Context(), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), dir)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestUnsafeDir(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"world writable dir", func(t *testing.T, dir string) { chmod(t, dir, 0o777) }},
		{"group writable dir", func(t *testing.T, dir string) { chmod(t, dir, 0o770) }},
		{"sticky tmp-like dir", func(t *testing.T, dir string) { chmod(t, dir, 0o777|os.ModeSticky) }},
		{"world writable db", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, DBName), 0o666)
		}},
		{"db is a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, DBName), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"db is a symlink", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "elsewhere.db")
			writeFile(t, target, 0o600)
			if err := os.Symlink(target, filepath.Join(dir, DBName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"dir owned by another user", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("requires root to chown")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			_, err := Open(t.Context(), dir)
			if !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("Open = %v, want ErrUnsafeDir", err)
			}
		})
	}
}

func TestDirIsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	writeFile(t, path, 0o600)
	if _, err := Open(t.Context(), path); err == nil {
		t.Fatal("Open on a regular file succeeded")
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, nil, mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// Every write path takes the write lock up front: a deferred transaction
// would fail with SQLITE_BUSY_SNAPSHOT under contention, without waiting.
func TestWriteTxIsImmediate(t *testing.T) {
	s := openTest(t)
	err := s.write(t.Context(), func(tx *sql.Tx) error {
		// A second connection must now be unable to take the write lock.
		other, err := sql.Open("sqlite", "file:"+s.Path()+"?_pragma=busy_timeout(0)")
		if err != nil {
			return err
		}
		defer other.Close()
		_, err = other.ExecContext(t.Context(), "BEGIN IMMEDIATE")
		if err == nil {
			return errors.New("second writer got the lock during a write transaction")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestClampNanos(t *testing.T) {
	tests := []struct {
		in   time.Time
		want int64
	}{
		{time.Time{}, math.MinInt64},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
		{time.Unix(0, 42), 42},
	}
	for _, tt := range tests {
		if got := clampNanos(tt.in); got != tt.want {
			t.Errorf("clampNanos(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
