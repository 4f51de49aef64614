package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
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

// insertAudit writes one row. json_insert only adds absent keys. The
// payload is bound as TEXT (a Go string): SQLite ≥ 3.45 would read a BLOB
// argument as binary JSONB. The parameters are anonymous, the three ids
// bound twice (appendAuditArgs): the driver looks each numbered parameter
// up by name, in a list as long as the statement's, and those lookups cost
// a many-row insert more than its rows did.
const insertAudit = `INSERT INTO audit (ts, kind, invocation_id, skill_id, trace_id, payload) VALUES ` + auditValues

// auditValues is one row of insertAudit. A payload that already has the
// three ids (completePayload) is bound as the first argument of coalesce
// and the rest as NULL; any other is bound to json_insert and the first as
// NULL. coalesce stops at its first value that is not NULL, so SQLite
// parses a complete payload only for the table's CHECK, not also to add
// nothing to it.
const auditValues = `(?, ?, ?, ?, ?, coalesce(?, json_insert(?, '$.invocation_id', ?, '$.skill_id', ?, '$.trace_id', ?)))`

// Audit appends one row.
func (s *Store) Audit(ctx context.Context, r Row) error {
	args, err := auditArgs(r)
	if err != nil {
		return fmt.Errorf("audit %s: %w", r.Kind, err)
	}
	stmt, err := s.inserts.stmt(ctx, s.db, 1)
	if err == nil {
		_, err = stmt.ExecContext(ctx, args...)
	}
	if err != nil {
		return fmt.Errorf("audit %s of invocation %s: %w", r.Kind, r.InvocationID, err)
	}
	return nil
}

// AuditBatch appends rows in one transaction: all or none. Rows are checked
// before the write lock is taken, so a bad row costs no lock time. They go
// in as few statements as their count allows (see insertStmt), in order, so
// their seq follows the order of rows.
func (s *Store) AuditBatch(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	args := make([]any, 0, auditCols*len(rows))
	for i, r := range rows {
		var err error
		if args, err = appendAuditArgs(args, r); err != nil {
			return fmt.Errorf("audit batch: row %d (%s): %w", i, r.Kind, err)
		}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for rest := args; len(rest) > 0; {
			n := chunkRows(len(rest) / auditCols)
			stmt, err := s.inserts.stmt(ctx, s.db, n)
			if err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, rest[:n*auditCols]...); err != nil {
				return err
			}
			rest = rest[n*auditCols:]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit batch of %d rows: %w", len(rows), err)
	}
	return nil
}

func auditArgs(r Row) ([]any, error) {
	return appendAuditArgs(make([]any, 0, auditCols), r)
}

// auditCols is the number of arguments of one row in insertAudit.
const auditCols = 10

// appendAuditArgs appends the arguments of r for insertAudit.
func appendAuditArgs(dst []any, r Row) ([]any, error) {
	if !knownKinds[r.Kind] {
		return dst, fmt.Errorf("%w: unknown audit kind %q", ErrInvalid, r.Kind)
	}
	payload := bytes.TrimSpace(r.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if payload[0] != '{' || !json.Valid(payload) {
		return dst, fmt.Errorf("%w: audit payload is not a JSON object", ErrInvalid)
	}
	dst = append(dst, nanos(r.TS), r.Kind, r.InvocationID, r.SkillID, r.TraceID)
	if completePayload(payload) {
		return append(dst, string(payload), nil, nil, nil, nil), nil
	}
	return append(dst, nil, string(payload), r.InvocationID, r.SkillID, r.TraceID), nil
}

// completePayload reports whether json_insert would give payload, a JSON
// object, back as it is: it already has invocation_id, skill_id and
// trace_id at its top level, once each, and it is compact text without an
// escape, which SQLite renders back byte for byte
// (TestCompletePayloadIsKept). The payloads the broker and the invocation
// write are all of this kind.
func completePayload(p []byte) bool {
	if bytes.IndexByte(p, '\\') >= 0 {
		return false
	}
	var has [3]bool
	depth, key := 0, false
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case ' ', '\t', '\n', '\r':
			return false
		case '"':
			n := bytes.IndexByte(p[i+1:], '"')
			if n < 0 {
				return false
			}
			if depth == 1 && key {
				if k := idKey(p[i+1 : i+1+n]); k >= 0 {
					if has[k] {
						return false
					}
					has[k] = true
				}
				key = false
			}
			i += n + 1
		case '{':
			depth++
			key = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		}
	}
	return has[0] && has[1] && has[2]
}

// idKey is the index of one of the keys json_insert adds, or -1.
func idKey(k []byte) int {
	switch string(k) {
	case "invocation_id":
		return 0
	case "skill_id":
		return 1
	case "trace_id":
		return 2
	}
	return -1
}

// A batch is written by statements that insert chunkMax, …, 4, 2 or 1 rows
// at once, each prepared once per connection: a statement per row costs
// more in the driver than the row costs in SQLite, and a statement text per
// batch size would be parsed again for every batch.
const chunkLog = 5 // chunks of up to 1<<chunkLog rows

// chunkRows is the largest chunk size not over n (n ≥ 1).
func chunkRows(n int) int {
	c := 1 << chunkLog
	for c > n {
		c >>= 1
	}
	return c
}

// insertStmts holds the prepared multi-row inserts, made on first use.
type insertStmts struct {
	mu    sync.Mutex
	stmts [chunkLog + 1]*sql.Stmt
}

func (p *insertStmts) stmt(ctx context.Context, db *sql.DB, rows int) (*sql.Stmt, error) {
	i := bits.Len(uint(rows)) - 1
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmts[i] == nil {
		stmt, err := db.PrepareContext(ctx, insertAuditRows(rows))
		if err != nil {
			return nil, err
		}
		p.stmts[i] = stmt
	}
	return p.stmts[i], nil
}

func (p *insertStmts) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for i, stmt := range p.stmts {
		if stmt != nil {
			errs = append(errs, stmt.Close())
			p.stmts[i] = nil
		}
	}
	return errors.Join(errs...)
}

// insertAuditRows is insertAudit for n rows.
func insertAuditRows(n int) string {
	return insertAudit + strings.Repeat(","+auditValues, n-1)
}

const auditColumns = `seq, ts, kind, invocation_id, skill_id, trace_id, payload`

// Rows returns every row of an invocation in the order it was written.
func (s *Store) Rows(ctx context.Context, invocationID string) ([]Row, error) {
	return s.RowsSince(ctx, invocationID, 0)
}

// RowsSince returns the rows of an invocation with seq > afterSeq, in seq
// order: a tail polls with the last seq it has seen. Seq is assigned at
// commit under the write lock, so a row with a smaller seq never appears
// after a larger one has been read.
func (s *Store) RowsSince(ctx context.Context, invocationID string, afterSeq int64) ([]Row, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit
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
