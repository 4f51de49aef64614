package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Verdict is an operator's decision on a parked command (DESIGN §8).
type Verdict string

const (
	// VerdictNone: no decision (pending, or nothing remembered).
	VerdictNone    Verdict = ""
	VerdictApprove Verdict = "approve"
	VerdictDeny    Verdict = "deny"
)

// Approval is one parked command awaiting, or having received, a verdict.
type Approval struct {
	ID           string
	Workspace    string
	Command      string // verbatim, as the operator must see it
	InvocationID string
	RequestedAt  time.Time
	Verdict      Verdict   // VerdictNone while pending
	DecidedAt    time.Time // zero while pending
}

const approvalCols = `id, workspace, command, invocation_id, requested_at, verdict, decided_at`

// RequestApproval parks a command and returns the pending approval with a
// new id.
func (s *Store) RequestApproval(ctx context.Context, workspace, command, invocationID string) (Approval, error) {
	if command == "" {
		return Approval{}, fmt.Errorf("request approval in %s: %w: empty command", workspace, ErrInvalid)
	}
	a := Approval{
		ID: uuid.NewString(), Workspace: workspace, Command: command,
		InvocationID: invocationID, RequestedAt: time.Now().UTC(),
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO approvals (id, workspace, command, invocation_id, requested_at)
		VALUES (?, ?, ?, ?, ?)`, a.ID, a.Workspace, a.Command, a.InvocationID, nanos(a.RequestedAt))
	if err != nil {
		return Approval{}, fmt.Errorf("request approval in %s: %w", workspace, err)
	}
	return a, nil
}

// Decide records the verdict of a pending approval. Unknown id is
// ErrNotFound; one already decided is ErrDecided, so two operators racing
// cannot flip each other's verdict.
func (s *Store) Decide(ctx context.Context, id string, v Verdict) error {
	if v != VerdictApprove && v != VerdictDeny {
		return fmt.Errorf("decide approval %s: %w: verdict %q", id, ErrInvalid, v)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET verdict = ?, decided_at = ?
			WHERE id = ? AND verdict IS NULL`, string(v), nanos(time.Time{}), id)
		if err != nil {
			return err
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
		return approvalMissingOrDecided(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("decide approval %s: %w", id, err)
	}
	return nil
}

// CancelApproval drops a pending approval: a dismissal or an expired wait
// records nothing (DESIGN §8). Unknown id is ErrNotFound, a decided one
// ErrDecided (verdicts are kept).
func (s *Store) CancelApproval(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM approvals WHERE id = ? AND verdict IS NULL`, id)
		if err != nil {
			return err
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
		return approvalMissingOrDecided(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("cancel approval %s: %w", id, err)
	}
	return nil
}

func approvalMissingOrDecided(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM approvals WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return ErrDecided
}

// Approval returns one approval by id, or ErrNotFound; a parked call polls
// it for its verdict.
func (s *Store) Approval(ctx context.Context, id string) (Approval, error) {
	a, err := scanApproval(s.db.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Approval{}, fmt.Errorf("get approval %s: %w", id, err)
	}
	return a, nil
}

// Verdict returns the remembered verdict for a verbatim command in a
// workspace: the latest decision, or VerdictNone if it was never decided.
func (s *Store) Verdict(ctx context.Context, workspace, command string) (Verdict, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT verdict FROM approvals
		WHERE workspace = ? AND command = ? AND decided_at IS NOT NULL
		ORDER BY decided_at DESC LIMIT 1`, workspace, command).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return VerdictNone, nil
	}
	if err != nil {
		return VerdictNone, fmt.Errorf("verdict in %s: %w", workspace, err)
	}
	return Verdict(v), nil
}

// PendingApprovals returns approvals awaiting a verdict, oldest first.
func (s *Store) PendingApprovals(ctx context.Context) ([]Approval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals
		WHERE verdict IS NULL ORDER BY requested_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list pending approvals: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	return out, nil
}

func scanApproval(sc scanner) (Approval, error) {
	var (
		a         Approval
		requested int64
		verdict   sql.NullString
		decided   sql.NullInt64
	)
	if err := sc.Scan(&a.ID, &a.Workspace, &a.Command, &a.InvocationID, &requested, &verdict, &decided); err != nil {
		return Approval{}, err
	}
	a.RequestedAt = fromNanos(requested)
	a.Verdict = Verdict(verdict.String)
	a.DecidedAt = fromNullNanos(decided)
	return a, nil
}
