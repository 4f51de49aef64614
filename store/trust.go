package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Pin is a trusted content hash (DESIGN §8). Editing any file of the skill
// changes its hash, so the pin no longer matches: trust is by content, the
// path is only for display.
type Pin struct {
	ContentHash string
	SkillID     string // the skill's name, or the pack's for a pack pin
	Path        string
	PinnedAt    time.Time
	Pack        bool
}

// Trust pins the content hash of a skill. Pinning a hash again refreshes
// its id, path and time.
func (s *Store) Trust(ctx context.Context, hash, skillID, path string) error {
	return s.pin(ctx, Pin{ContentHash: hash, SkillID: skillID, Path: path})
}

// TrustPack pins the content hash of a pack (a folder of skills) as a whole.
func (s *Store) TrustPack(ctx context.Context, hash, packID, path string) error {
	return s.pin(ctx, Pin{ContentHash: hash, SkillID: packID, Path: path, Pack: true})
}

func (s *Store) pin(ctx context.Context, p Pin) error {
	if p.ContentHash == "" {
		return fmt.Errorf("trust %s: %w: empty content hash", p.Path, ErrInvalid)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO trust (content_hash, skill_id, path, pinned_at, pack)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (content_hash) DO UPDATE SET
			skill_id = excluded.skill_id, path = excluded.path,
			pinned_at = excluded.pinned_at, pack = excluded.pack`,
		p.ContentHash, p.SkillID, p.Path, nanos(p.PinnedAt), p.Pack)
	if err != nil {
		return fmt.Errorf("trust %s (%s): %w", p.ContentHash, p.Path, err)
	}
	return nil
}

// Trusted reports whether hash is pinned (as a skill or as a pack).
func (s *Store) Trusted(ctx context.Context, hash string) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM trust WHERE content_hash = ?`, hash).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check trust of %s: %w", hash, err)
	}
	return true, nil
}

// Untrust removes a pin; ErrNotFound if hash was not pinned.
func (s *Store) Untrust(ctx context.Context, hash string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM trust WHERE content_hash = ?`, hash)
	if err == nil {
		var ok bool
		if ok, err = affected(res); err == nil && !ok {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("untrust %s: %w", hash, err)
	}
	return nil
}

// TrustList returns every pin, ordered by skill id then hash.
func (s *Store) TrustList(ctx context.Context) ([]Pin, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT content_hash, skill_id, path, pinned_at, pack
		FROM trust ORDER BY skill_id, content_hash`)
	if err != nil {
		return nil, fmt.Errorf("list trust: %w", err)
	}
	defer rows.Close()
	var out []Pin
	for rows.Next() {
		var (
			p  Pin
			at int64
		)
		if err := rows.Scan(&p.ContentHash, &p.SkillID, &p.Path, &at, &p.Pack); err != nil {
			return nil, fmt.Errorf("list trust: %w", err)
		}
		p.PinnedAt = fromNanos(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list trust: %w", err)
	}
	return out, nil
}

// QuarantineEntry is a content hash barred from running until an operator
// releases it (DESIGN §9).
type QuarantineEntry struct {
	ContentHash  string
	SkillID      string
	Reason       string
	InvocationID string // the invocation whose violation caused it
	At           time.Time
}

// Quarantine bars a content hash. If it is already quarantined the first
// entry is kept: it names the violation that started it, and later ones are
// in the audit log.
func (s *Store) Quarantine(ctx context.Context, q QuarantineEntry) error {
	if q.ContentHash == "" {
		return fmt.Errorf("quarantine %s: %w: empty content hash", q.SkillID, ErrInvalid)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO quarantine (content_hash, skill_id, reason, invocation_id, at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (content_hash) DO NOTHING`,
		q.ContentHash, q.SkillID, q.Reason, q.InvocationID, nanos(q.At))
	if err != nil {
		return fmt.Errorf("quarantine %s (%s): %w", q.SkillID, q.ContentHash, err)
	}
	return nil
}

// Quarantined reports whether hash is quarantined, and why.
func (s *Store) Quarantined(ctx context.Context, hash string) (bool, string, error) {
	var reason string
	err := s.db.QueryRowContext(ctx, `SELECT reason FROM quarantine WHERE content_hash = ?`, hash).Scan(&reason)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("check quarantine of %s: %w", hash, err)
	}
	return true, reason, nil
}

// Release lifts quarantine by skill id (every hash of that skill) or by
// content hash, and returns how many entries it removed; ErrNotFound if
// none matched.
func (s *Store) Release(ctx context.Context, skillIDOrHash string) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM quarantine WHERE skill_id = ?1 OR content_hash = ?1`, skillIDOrHash)
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", skillIDOrHash, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", skillIDOrHash, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("release %s: %w", skillIDOrHash, ErrNotFound)
	}
	return int(n), nil
}

// QuarantineList returns every quarantined hash, oldest first.
func (s *Store) QuarantineList(ctx context.Context) ([]QuarantineEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT content_hash, skill_id, reason, invocation_id, at
		FROM quarantine ORDER BY at, content_hash`)
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	defer rows.Close()
	var out []QuarantineEntry
	for rows.Next() {
		var (
			q  QuarantineEntry
			at int64
		)
		if err := rows.Scan(&q.ContentHash, &q.SkillID, &q.Reason, &q.InvocationID, &at); err != nil {
			return nil, fmt.Errorf("list quarantine: %w", err)
		}
		q.At = fromNanos(at)
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	return out, nil
}
