package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// migrations is the schema history: migrations[i] takes the database from
// PRAGMA user_version i to i+1. Append only; never edit an entry that has
// shipped, since databases in the field already ran it.
//
// Conventions: STRICT tables so a wrong Go type fails loudly instead of being
// stored as whatever SQLite coerces it to; timestamps are INTEGER unix
// nanoseconds (see doc.go); empty strings, not NULL, for "unset" text
// columns, except where NULL carries meaning (an active invocation's
// finished_at, a pending approval's verdict).
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE invocations (
	id             TEXT PRIMARY KEY,
	skill_id       TEXT NOT NULL,
	content_hash   TEXT NOT NULL,
	tenant         TEXT NOT NULL,
	isolation      TEXT NOT NULL DEFAULT '',
	landlock_abi   INTEGER NOT NULL DEFAULT 0,
	supervisor_pid INTEGER NOT NULL DEFAULT 0,
	container_id   TEXT NOT NULL DEFAULT '',
	socket_path    TEXT NOT NULL DEFAULT '',
	cgroup_path    TEXT NOT NULL DEFAULT '',
	state_dir      TEXT NOT NULL DEFAULT '',
	started_at     INTEGER NOT NULL,
	finished_at    INTEGER,
	outcome        TEXT,
	exit_code      INTEGER
) STRICT;
CREATE INDEX invocations_started ON invocations (started_at);
CREATE INDEX invocations_active ON invocations (started_at) WHERE finished_at IS NULL;

-- No foreign key to invocations: loader defects are audited before an
-- invocation row exists, and queued rows may arrive after it is gone.
CREATE TABLE audit (
	seq           INTEGER PRIMARY KEY AUTOINCREMENT,
	ts            INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	invocation_id TEXT NOT NULL DEFAULT '',
	skill_id      TEXT NOT NULL DEFAULT '',
	trace_id      TEXT NOT NULL DEFAULT '',
	payload       TEXT NOT NULL CHECK (json_valid(payload) AND json_type(payload) = 'object')
) STRICT;
CREATE INDEX audit_invocation ON audit (invocation_id, seq);
CREATE INDEX audit_kind_ts ON audit (kind, ts);

CREATE TABLE trust (
	content_hash TEXT PRIMARY KEY,
	skill_id     TEXT NOT NULL,
	path         TEXT NOT NULL,
	pinned_at    INTEGER NOT NULL,
	pack         INTEGER NOT NULL DEFAULT 0 CHECK (pack IN (0, 1))
) STRICT;

CREATE TABLE quarantine (
	content_hash  TEXT PRIMARY KEY,
	skill_id      TEXT NOT NULL,
	reason        TEXT NOT NULL,
	invocation_id TEXT NOT NULL DEFAULT '',
	at            INTEGER NOT NULL
) STRICT;
CREATE INDEX quarantine_skill ON quarantine (skill_id);

-- (tenant, path) is the key; id is an explicit rowid alias because the
-- external-content FTS index refers to rows by rowid, and an implicit rowid
-- may change on VACUUM.
CREATE TABLE memory (
	id            INTEGER PRIMARY KEY,
	tenant        TEXT NOT NULL,
	path          TEXT NOT NULL,
	body          TEXT NOT NULL,
	content_hash  TEXT NOT NULL,
	trace_id      TEXT NOT NULL DEFAULT '',
	invocation_id TEXT NOT NULL DEFAULT '',
	updated_at    INTEGER NOT NULL,
	UNIQUE (tenant, path)
) STRICT;
CREATE VIRTUAL TABLE memory_fts USING fts5 (
	path, body, content = 'memory', content_rowid = 'id', tokenize = 'unicode61'
);
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
	INSERT INTO memory_fts (rowid, path, body) VALUES (new.id, new.path, new.body);
END;
CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, path, body) VALUES ('delete', old.id, old.path, old.body);
END;
CREATE TRIGGER memory_fts_update AFTER UPDATE ON memory BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, path, body) VALUES ('delete', old.id, old.path, old.body);
	INSERT INTO memory_fts (rowid, path, body) VALUES (new.id, new.path, new.body);
END;

CREATE TABLE approvals (
	id            TEXT PRIMARY KEY,
	workspace     TEXT NOT NULL,
	command       TEXT NOT NULL,
	invocation_id TEXT NOT NULL DEFAULT '',
	requested_at  INTEGER NOT NULL,
	verdict       TEXT CHECK (verdict IN ('approve', 'deny')),
	decided_at    INTEGER,
	CHECK ((verdict IS NULL) = (decided_at IS NULL))
) STRICT;
CREATE INDEX approvals_key ON approvals (workspace, command, decided_at);
CREATE INDEX approvals_pending ON approvals (requested_at) WHERE verdict IS NULL;
`,
}

// SchemaVersion is the user_version this binary migrates to.
var SchemaVersion = len(migrations)

// migrate brings the database to SchemaVersion. The common case, an
// up-to-date database, costs one read and no write lock, so a burst of
// `skillrun exec` processes does not serialise on Open.
func (s *Store) migrate(ctx context.Context) error {
	if err := s.enableWAL(ctx); err != nil {
		return err
	}
	v, err := userVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	if v > SchemaVersion {
		return tooNew(v)
	}
	// Re-read under the write lock: another process may have migrated
	// between the read above and now, and must not be migrated twice.
	return s.write(ctx, func(tx *sql.Tx) error {
		v, err := userVersion(ctx, tx)
		if err != nil {
			return err
		}
		if v > SchemaVersion {
			return tooNew(v)
		}
		for i := v; i < SchemaVersion; i++ {
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
			}
		}
		// PRAGMA takes no bound parameters; SchemaVersion is our constant.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
			return fmt.Errorf("set schema version %d: %w", SchemaVersion, err)
		}
		return nil
	})
}

func tooNew(v int) error {
	return fmt.Errorf("%w: database is at schema version %d, this skillrun knows up to %d; upgrade skillrun", ErrSchemaTooNew, v, SchemaVersion)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func userVersion(ctx context.Context, q queryer) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// enableWAL switches the database to WAL, or fails if it cannot (a file
// system without shared-memory support, for one): in rollback-journal mode
// readers block the writer and concurrent exec processes would fail under
// load. WAL persists in the file, so this does work only on a new database;
// but there, concurrent openers deadlock on the rollback-journal locks and
// SQLite answers SQLITE_BUSY at once rather than wait under busy_timeout.
// Hence the retry, bounded by BusyTimeout like any other lock wait.
func (s *Store) enableWAL(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		var mode string
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, not WAL; put the state dir on a local file system", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("set WAL journal mode: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("set WAL journal mode: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

// isBusy reports SQLITE_BUSY, whatever its extended code.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
