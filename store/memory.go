package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// MemoryRow is one entry of the memory store, keyed by (Tenant, Path).
// Every method takes the tenant explicitly and filters by it in SQL: a
// skill only ever sees rows of its own invocation's tenant (DESIGN §7).
type MemoryRow struct {
	Tenant       string
	Path         string
	Body         string
	ContentHash  string // hex SHA-256 of Body; computed by MemoryPut when empty
	TraceID      string
	InvocationID string
	UpdatedAt    time.Time
	// Snippet is set by MemorySearch only: an excerpt of Body with the
	// matched terms between SnippetOpen and SnippetClose.
	Snippet string
}

// Snippet markers around matched terms in MemoryRow.Snippet.
const (
	SnippetOpen  = "["
	SnippetClose = "]"
)

// maxSearchTerms bounds the work one search may ask of FTS5; terms past it
// are ignored.
const maxSearchTerms = 32

// MemoryPut inserts or replaces the row at (Tenant, Path). A zero UpdatedAt
// means now. The full-text index follows through triggers, in the same
// transaction.
func (s *Store) MemoryPut(ctx context.Context, m MemoryRow) error {
	if m.Tenant == "" || m.Path == "" {
		return fmt.Errorf("memory put %q/%q: %w: tenant and path are required", m.Tenant, m.Path, ErrInvalid)
	}
	if m.ContentHash == "" {
		sum := sha256.Sum256([]byte(m.Body))
		m.ContentHash = hex.EncodeToString(sum[:])
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO memory
		(tenant, path, body, content_hash, trace_id, invocation_id, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, path) DO UPDATE SET
			body = excluded.body, content_hash = excluded.content_hash,
			trace_id = excluded.trace_id, invocation_id = excluded.invocation_id,
			updated_at = excluded.updated_at`,
		m.Tenant, m.Path, m.Body, m.ContentHash, m.TraceID, m.InvocationID, nanos(m.UpdatedAt))
	if err != nil {
		return fmt.Errorf("memory put %s/%s: %w", m.Tenant, m.Path, err)
	}
	return nil
}

const memoryCols = `m.tenant, m.path, m.body, m.content_hash, m.trace_id, m.invocation_id, m.updated_at`

// MemoryGet returns the row at (tenant, path), or ErrNotFound.
func (s *Store) MemoryGet(ctx context.Context, tenant, path string) (MemoryRow, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+memoryCols+`, ''
		FROM memory m WHERE m.tenant = ? AND m.path = ?`, tenant, path)
	m, err := scanMemory(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return MemoryRow{}, fmt.Errorf("memory get %s/%s: %w", tenant, path, err)
	}
	return m, nil
}

// MemoryDelete removes the row at (tenant, path); ErrNotFound if absent.
func (s *Store) MemoryDelete(ctx context.Context, tenant, path string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM memory WHERE tenant = ? AND path = ?`, tenant, path)
	if err == nil {
		var ok bool
		if ok, err = affected(res); err == nil && !ok {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("memory delete %s/%s: %w", tenant, path, err)
	}
	return nil
}

// MemoryList returns up to limit rows of tenant whose path starts with
// prefix (literally: no glob or LIKE metacharacters), in path order.
func (s *Store) MemoryList(ctx context.Context, tenant, prefix string, limit int) ([]MemoryRow, error) {
	rows, err := s.queryMemory(ctx, `SELECT `+memoryCols+`, '' FROM memory m
		WHERE m.tenant = ?1 AND substr(m.path, 1, length(?2)) = ?2
		ORDER BY m.path LIMIT ?3`, tenant, prefix, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("memory list %s/%s: %w", tenant, prefix, err)
	}
	return rows, nil
}

// MemorySearch returns up to limit rows of tenant under prefix whose path
// or body contain every word of query, best match first, each with a
// Snippet. query is untrusted text and is never read as FTS5 syntax: it is
// split into words (runs of letters and digits) and each word becomes a
// quoted FTS5 string, so quotes, '*', '^', ':', NEAR, AND/OR/NOT and column
// filters match as plain words or not at all. Only the first 32 words
// count. A query with no letters or digits matches nothing. prefix is
// compared literally.
func (s *Store) MemorySearch(ctx context.Context, tenant, query, prefix string, limit int) ([]MemoryRow, error) {
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	// The FTS table is queried in a subquery so rank and snippet() run
	// against the MATCH scan whatever join order the planner picks.
	rows, err := s.queryMemory(ctx, `SELECT `+memoryCols+`, f.snip
		FROM (SELECT rowid AS id, rank,
		             snippet(memory_fts, 1, '`+SnippetOpen+`', '`+SnippetClose+`', '…', 16) AS snip
		      FROM memory_fts WHERE memory_fts MATCH ?1) f
		JOIN memory m ON m.id = f.id
		WHERE m.tenant = ?2 AND substr(m.path, 1, length(?3)) = ?3
		ORDER BY f.rank, m.path LIMIT ?4`, match, tenant, prefix, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("memory search %s/%s: %w", tenant, prefix, err)
	}
	return rows, nil
}

// ftsQuery turns user text into an FTS5 query meaning "all of these words".
// Words are runs of letters, digits and combining marks, so each is a
// single token: the work a query can ask for stays bounded by
// maxSearchTerms (one word like "a-a-a-…" would otherwise be a phrase of
// thousands of tokens). Each word is still quoted, so AND, OR, NOT and NEAR
// are words, not operators. Runs of marks alone are dropped: they tokenize
// to nothing.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range strings.FieldsFunc(q, func(r rune) bool { return !isWordRune(r) && !unicode.IsMark(r) }) {
		if !strings.ContainsFunc(w, isWordRune) {
			continue
		}
		// A word holds no '"' today; escape anyway, should isWordRune grow.
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
		if len(terms) == maxSearchTerms {
			break
		}
	}
	return strings.Join(terms, " ")
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func (s *Store) queryMemory(ctx context.Context, query string, args ...any) ([]MemoryRow, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MemoryRow
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanMemory(sc scanner) (MemoryRow, error) {
	var (
		m  MemoryRow
		at int64
	)
	if err := sc.Scan(&m.Tenant, &m.Path, &m.Body, &m.ContentHash, &m.TraceID, &m.InvocationID, &at, &m.Snippet); err != nil {
		return MemoryRow{}, err
	}
	m.UpdatedAt = fromNanos(at)
	return m, nil
}
