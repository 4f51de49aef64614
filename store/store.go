package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"time"

	// Pure-Go SQLite: no cgo, so the CLI cross-compiles and runs anywhere.
	_ "modernc.org/sqlite"
)

// DBName is the database file inside the state dir.
const DBName = "state.db"

// BusyTimeout is how long a statement waits for another process's lock
// before failing with SQLITE_BUSY. Write transactions are short (one audit
// batch, one upsert), so 5 s only runs out when something is stuck.
const BusyTimeout = 5 * time.Second

// maxConns keeps the pool small: SQLite has one writer at a time anyway,
// and every open connection holds file descriptors and a page cache.
const maxConns = 4

// Store is the state database of one state dir. It is safe for concurrent
// use by goroutines, and any number of processes may open the same dir.
type Store struct {
	db      *sql.DB
	path    string
	inserts insertStmts // audit.go
}

// Open creates the state dir if needed (mode 0700), refuses it if it is
// writable by group or others or owned by another user (ErrUnsafeDir),
// opens dir/state.db and migrates its schema to the newest this binary
// knows. A database migrated by a newer binary is refused (ErrSchemaTooNew).
func Open(ctx context.Context, dir string) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("open store: %w: empty state dir (set --root, %s or HOME)", ErrInvalid, RootEnv)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := prepareDir(abs); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	path := filepath.Join(abs, DBName)
	if err := prepareDBFile(path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	s := &Store{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database. Rows already committed are durable; WAL
// checkpointing is left to SQLite.
func (s *Store) Close() error {
	serr := s.inserts.close()
	if err := errors.Join(serr, s.db.Close()); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Path is the database file, for messages and `skillrun doctor`.
func (s *Store) Path() string { return s.path }

// dsn builds the modernc.org/sqlite DSN. The path is URL-escaped so a state
// dir containing '?', '#' or '%' cannot be read as URI parameters. Every
// connection of the pool gets the same per-connection pragmas, because
// database/sql opens connections lazily and any of them may run a write.
// The journal mode is not among them: WAL is a property of the file, set
// once by enableWAL.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	// NORMAL in WAL mode: a commit survives a process crash; only an OS
	// crash may lose the last transactions, never corrupt the file.
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// BEGIN IMMEDIATE takes the write lock at the start of a transaction,
	// where busy_timeout applies. A deferred transaction that reads first
	// and then writes gets SQLITE_BUSY_SNAPSHOT at once, with no wait.
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), OmitHost: true, RawQuery: q.Encode()}
	return u.String()
}

// prepareDir creates dir (0700) and checks that nobody but us can write it:
// the database decides which skills may run, so a dir another user can
// write is a dir another user can grant trust from.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat state dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	return checkSafe(dir, fi)
}

// prepareDBFile creates the database file 0600 before SQLite does (SQLite
// would use 0644 minus umask); SQLite copies its mode onto -wal and -shm.
// An existing file is checked like the dir; a symlink is refused, since it
// would put the state outside the dir that was checked.
func prepareDBFile(path string) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrUnsafeDir, path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	return checkSafe(path, fi)
}

func checkSafe(path string, fi os.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %#o); run chmod go-w on it", ErrUnsafeDir, path, perm)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrUnsafeDir, path, uid, os.Geteuid())
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE, see dsn), and
// commits it if fn succeeds.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if rerr := rollback(tx); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit()
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// nanos and fromNanos convert the stored INTEGER timestamps. The zero time
// maps to now at write, so callers may leave timestamps unset.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return clampNanos(t)
}

// Unix nanoseconds fit an int64 from 1677 to 2262 only.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// clampNanos is t.UnixNano saturated at the int64 range, where UnixNano
// itself is undefined; the zero time, as a lower bound, means "ever".
func clampNanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// fromNullNanos maps NULL to the zero time.
func fromNullNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

// affected reports whether res changed at least one row.
func affected(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	return n > 0, err
}
