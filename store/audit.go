package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Audit kinds (DESIGN §7). The set is closed: Audit refuses any other kind,
// so a typo in a caller fails its test instead of writing rows no query
// will ever find.
const (
	KindInvokedStarted    = "skill.invoked_started"
	KindInvokedCompleted  = "skill.invoked_completed"
	KindToolCallStarted   = "skill.tool_call_started"
	KindToolCallCompleted = "skill.tool_call_completed"
	KindToolDenied        = "skill.tool_denied"
	KindTimeout           = "skill.timeout"
	KindNoConnect         = "skill.no_connect"
	KindLoaderDefect      = "skill.loader_defect"
	KindQuarantined       = "skill.quarantined"
	KindApprovalRequested = "skill.approval_requested"
)

var knownKinds = map[string]bool{
	KindInvokedStarted: true, KindInvokedCompleted: true,
	KindToolCallStarted: true, KindToolCallCompleted: true,
	KindToolDenied: true, KindTimeout: true, KindNoConnect: true,
	KindLoaderDefect: true, KindQuarantined: true, KindApprovalRequested: true,
}

// Row is one audit row. Seq is assigned by the store and ignored on write;
// a zero TS means now. Payload must be a JSON object (or empty, meaning
// {}); the store adds invocation_id, skill_id and trace_id to it when the
// object lacks them, so a query on the payload alone finds them, and keeps
// them as columns for the indexes. A payload's own value of one of those
// keys is kept as written; the columns are what the indexes use.
type Row struct {
	Seq          int64
	TS           time.Time
	Kind         string
	InvocationID string
	SkillID      string
	TraceID      string
	Payload      json.RawMessage
}

// json_insert only adds absent keys. The payload is bound as TEXT (a Go
// string): SQLite ≥ 3.45 would read a BLOB argument as binary JSONB.
const insertAudit = `INSERT INTO audit (ts, kind, invocation_id, skill_id, trace_id, payload)
	VALUES (?1, ?2, ?3, ?4, ?5,
		json_insert(?6, '$.invocation_id', ?3, '$.skill_id', ?4, '$.trace_id', ?5))`

// Audit appends one row.
func (s *Store) Audit(ctx context.Context, r Row) error {
	args, err := auditArgs(r)
	if err != nil {
		return fmt.Errorf("audit %s: %w", r.Kind, err)
	}
	if _, err := s.db.ExecContext(ctx, insertAudit, args...); err != nil {
		return fmt.Errorf("audit %s of invocation %s: %w", r.Kind, r.InvocationID, err)
	}
	return nil
}

// AuditBatch appends rows in one transaction: all or none. Rows are checked
// before the write lock is taken, so a bad row costs no lock time.
func (s *Store) AuditBatch(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	all := make([][]any, len(rows))
	for i, r := range rows {
		args, err := auditArgs(r)
		if err != nil {
			return fmt.Errorf("audit batch: row %d (%s): %w", i, r.Kind, err)
		}
		all[i] = args
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, insertAudit)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, args := range all {
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit batch of %d rows: %w", len(rows), err)
	}
	return nil
}

func auditArgs(r Row) ([]any, error) {
	if !knownKinds[r.Kind] {
		return nil, fmt.Errorf("%w: unknown audit kind %q", ErrInvalid, r.Kind)
	}
	payload := bytes.TrimSpace(r.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if payload[0] != '{' || !json.Valid(payload) {
		return nil, fmt.Errorf("%w: audit payload is not a JSON object", ErrInvalid)
	}
	return []any{nanos(r.TS), r.Kind, r.InvocationID, r.SkillID, r.TraceID, string(payload)}, nil
}

const auditCols = `seq, ts, kind, invocation_id, skill_id, trace_id, payload`

// Rows returns every row of an invocation in the order it was written.
func (s *Store) Rows(ctx context.Context, invocationID string) ([]Row, error) {
	return s.RowsSince(ctx, invocationID, 0)
}

// RowsSince returns the rows of an invocation with seq > afterSeq, in seq
// order: a tail polls with the last seq it has seen. Seq is assigned at
// commit under the write lock, so a row with a smaller seq never appears
// after a larger one has been read.
func (s *Store) RowsSince(ctx context.Context, invocationID string, afterSeq int64) ([]Row, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+auditCols+` FROM audit
		WHERE invocation_id = ? AND seq > ? ORDER BY seq`, invocationID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("audit rows of invocation %s: %w", invocationID, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var (
			r       Row
			ts      int64
			payload string
		)
		if err := rows.Scan(&r.Seq, &ts, &r.Kind, &r.InvocationID, &r.SkillID, &r.TraceID, &payload); err != nil {
			return nil, fmt.Errorf("audit rows of invocation %s: %w", invocationID, err)
		}
		r.TS = fromNanos(ts)
		r.Payload = json.RawMessage(payload)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit rows of invocation %s: %w", invocationID, err)
	}
	return out, nil
}

// CountSince counts rows of a kind with ts >= since ("denied today"). An
// empty kind counts every kind; a zero since counts all time.
func (s *Store) CountSince(ctx context.Context, kind string, since time.Time) (int64, error) {
	var (
		n   int64
		err error
	)
	if kind == "" {
		err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE ts >= ?`, clampNanos(since)).Scan(&n)
	} else {
		err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE kind = ? AND ts >= ?`, kind, clampNanos(since)).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count audit %q since %s: %w", kind, since.Format(time.RFC3339), err)
	}
	return n, nil
}
