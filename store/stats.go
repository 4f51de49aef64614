package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Activity is what `skillrun broker status` shows: the invocations still
// active and how many audit rows of some kinds were written since a time.
type Activity struct {
	Active []Invocation     // oldest first, as ActiveInvocations
	Counts map[string]int64 // rows with ts >= since, by kind; every asked kind is present
}

// ActivitySince reads the active invocations and, for each of kinds, the
// number of audit rows with ts >= since (a zero since counts all time).
// Everything is read in one read transaction, so the list and the counts
// are of the same moment even while exec processes write: a WAL reader
// sees one snapshot and neither waits for nor blocks a writer.
func (s *Store) ActivitySince(ctx context.Context, since time.Time, kinds ...string) (Activity, error) {
	a := Activity{Counts: make(map[string]int64, len(kinds))}
	// ReadOnly makes the driver issue a plain (deferred) BEGIN instead of
	// the BEGIN IMMEDIATE of the DSN, which would take the write lock.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Activity{}, fmt.Errorf("read activity: %w", err)
	}
	defer rollback(tx)
	rows, err := tx.QueryContext(ctx, `SELECT `+invocationCols+` FROM invocations
		WHERE finished_at IS NULL ORDER BY started_at, id`)
	if err != nil {
		return Activity{}, fmt.Errorf("read activity: active invocations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		inv, err := scanInvocation(rows)
		if err != nil {
			return Activity{}, fmt.Errorf("read activity: active invocations: %w", err)
		}
		a.Active = append(a.Active, inv)
	}
	if err := rows.Err(); err != nil {
		return Activity{}, fmt.Errorf("read activity: active invocations: %w", err)
	}
	rows.Close()
	for _, kind := range kinds {
		if !knownKinds[kind] {
			return Activity{}, fmt.Errorf("read activity: %w: unknown audit kind %q", ErrInvalid, kind)
		}
		var n int64
		// The (kind, ts) index answers this without touching other kinds.
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE kind = ? AND ts >= ?`, kind, clampNanos(since)).Scan(&n)
		if err != nil {
			return Activity{}, fmt.Errorf("read activity: count %s since %s: %w", kind, since.Format(time.RFC3339), err)
		}
		a.Counts[kind] = n
	}
	return a, nil
}
