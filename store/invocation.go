package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Invocation is one `skillrun exec`: who ran what, where its sandbox lives
// (so `broker status` and cleanup can find it), and how it ended.
type Invocation struct {
	ID            string
	SkillID       string
	ContentHash   string
	Tenant        string
	Isolation     string // isolation level actually applied, e.g. "container", "rlimit"
	LandlockABI   int    // ABI enforced, 0 when Landlock was not applied
	SupervisorPID int
	ContainerID   string
	SocketPath    string
	CgroupPath    string
	StateDir      string
	StartedAt     time.Time
	FinishedAt    time.Time // zero while active
	Outcome       string    // "" while active
	ExitCode      int       // meaningful once finished
}

// Finished reports whether the invocation has a final outcome.
func (inv Invocation) Finished() bool { return !inv.FinishedAt.IsZero() }

// Sandbox is what is known once the sandbox is up; SetSandbox records it.
type Sandbox struct {
	Isolation   string
	ContainerID string
	CgroupPath  string
	LandlockABI int
}

const invocationCols = `id, skill_id, content_hash, tenant, isolation, landlock_abi,
	supervisor_pid, container_id, socket_path, cgroup_path, state_dir,
	started_at, finished_at, outcome, exit_code`

// BeginInvocation records a new, active invocation. A zero StartedAt means
// now; finish fields of inv are ignored. A duplicate id is ErrExists.
func (s *Store) BeginInvocation(ctx context.Context, inv Invocation) error {
	if inv.ID == "" || inv.SkillID == "" {
		return fmt.Errorf("begin invocation %q: %w: id and skill id are required", inv.ID, ErrInvalid)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO invocations
		(id, skill_id, content_hash, tenant, isolation, landlock_abi, supervisor_pid,
		 container_id, socket_path, cgroup_path, state_dir, started_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`,
		inv.ID, inv.SkillID, inv.ContentHash, inv.Tenant, inv.Isolation, inv.LandlockABI,
		inv.SupervisorPID, inv.ContainerID, inv.SocketPath, inv.CgroupPath, inv.StateDir,
		nanos(inv.StartedAt))
	if err != nil {
		return fmt.Errorf("begin invocation %s: %w", inv.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("begin invocation %s: %w", inv.ID, err)
	} else if !ok {
		return fmt.Errorf("begin invocation %s: %w", inv.ID, ErrExists)
	}
	return nil
}

// SetSandbox records the sandbox of an active invocation. Unknown id is
// ErrNotFound, a finished one ErrFinished: its record is final.
func (s *Store) SetSandbox(ctx context.Context, id string, sb Sandbox) error {
	err := s.updateActive(ctx, id, `UPDATE invocations
		SET isolation = ?, container_id = ?, cgroup_path = ?, landlock_abi = ?
		WHERE id = ? AND finished_at IS NULL`,
		sb.Isolation, sb.ContainerID, sb.CgroupPath, sb.LandlockABI, id)
	if err != nil {
		return fmt.Errorf("set sandbox of invocation %s: %w", id, err)
	}
	return nil
}

// FinishInvocation records the outcome and exit code, once. Unknown id is
// ErrNotFound; an invocation already finished is ErrFinished, so a second
// writer cannot overwrite the first outcome.
func (s *Store) FinishInvocation(ctx context.Context, id, outcome string, exitCode int) error {
	if outcome == "" {
		return fmt.Errorf("finish invocation %s: %w: empty outcome", id, ErrInvalid)
	}
	err := s.updateActive(ctx, id, `UPDATE invocations
		SET finished_at = ?, outcome = ?, exit_code = ?
		WHERE id = ? AND finished_at IS NULL`,
		nanos(time.Time{}), outcome, exitCode, id)
	if err != nil {
		return fmt.Errorf("finish invocation %s: %w", id, err)
	}
	return nil
}

// updateActive runs an UPDATE guarded by "finished_at IS NULL" and, when it
// changes nothing, tells a missing row from a finished one. Both statements
// share one transaction so the answer is about the same row state.
func (s *Store) updateActive(ctx context.Context, id, query string, args ...any) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM invocations WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		return ErrFinished
	})
}

// Invocation returns one invocation, or ErrNotFound.
func (s *Store) Invocation(ctx context.Context, id string) (Invocation, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+invocationCols+` FROM invocations WHERE id = ?`, id)
	inv, err := scanInvocation(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Invocation{}, fmt.Errorf("get invocation %s: %w", id, err)
	}
	return inv, nil
}

// ActiveInvocations returns the invocations not yet finished, oldest first.
// A row whose supervisor died stays active; callers check SupervisorPID.
func (s *Store) ActiveInvocations(ctx context.Context) ([]Invocation, error) {
	invs, err := s.queryInvocations(ctx, `SELECT `+invocationCols+` FROM invocations
		WHERE finished_at IS NULL ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list active invocations: %w", err)
	}
	return invs, nil
}

// RecentInvocations returns up to limit invocations, newest first.
func (s *Store) RecentInvocations(ctx context.Context, limit int) ([]Invocation, error) {
	invs, err := s.queryInvocations(ctx, `SELECT `+invocationCols+` FROM invocations
		ORDER BY started_at DESC, id DESC LIMIT ?`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list recent invocations: %w", err)
	}
	return invs, nil
}

func (s *Store) queryInvocations(ctx context.Context, query string, args ...any) ([]Invocation, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var invs []Invocation
	for rows.Next() {
		inv, err := scanInvocation(rows)
		if err != nil {
			return nil, err
		}
		invs = append(invs, inv)
	}
	return invs, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

func scanInvocation(sc scanner) (Invocation, error) {
	var (
		inv      Invocation
		started  int64
		finished sql.NullInt64
		outcome  sql.NullString
		exitCode sql.NullInt64
	)
	err := sc.Scan(&inv.ID, &inv.SkillID, &inv.ContentHash, &inv.Tenant, &inv.Isolation,
		&inv.LandlockABI, &inv.SupervisorPID, &inv.ContainerID, &inv.SocketPath,
		&inv.CgroupPath, &inv.StateDir, &started, &finished, &outcome, &exitCode)
	if err != nil {
		return Invocation{}, err
	}
	inv.StartedAt = fromNanos(started)
	inv.FinishedAt = fromNullNanos(finished)
	inv.Outcome = outcome.String
	inv.ExitCode = int(exitCode.Int64)
	return inv, nil
}

// DefaultLimit and MaxLimit bound list queries: a limit <= 0 means
// DefaultLimit, and no caller gets more than MaxLimit rows at once.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}
