package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/store"
)

// MemorySearch limits: results per call when limit is absent, and the most
// one call returns (a larger limit is clamped, not refused).
const (
	DefaultMemorySearchLimit = 20
	MaxMemorySearchLimit     = 100
)

// memoryOverFetch is how many rows the first store query asks for per
// result wanted: rows outside the scopes are dropped after the query, so
// asking for exactly limit would often return fewer.
const memoryOverFetch = 4

// ErrNoScopePolicy means a MemorySearch built without the Enforcer it must
// filter results through, or checked with another one. It refuses every
// call rather than return rows nothing checked. (Here rather than in
// tools/errors.go only because this change may not edit that file.)
var ErrNoScopePolicy = errors.New("memory search has no scope policy")

// MemorySearch is the native MemorySearch tool (DESIGN §6): full-text search
// over the rows of the invocation's tenant that allowed_memory_scopes
// allow.
//
// Every row the store returns is filtered, in Invoke, through the scope
// globs; the store's tenant and prefix narrow the query but are not relied
// on for safety. So a search never returns a row outside scope, whatever
// the query or prefix. Because the filter runs in Invoke, which the broker
// hands no Enforcer, the tool is built with the invocation's.
//
// The optional path is a prefix, segment-wise: "a/b" covers "a/b" and
// "a/b/…", not "a/bc". It may be broader than the scopes ("memories" for
// a skill granted memories/projects/x/**: the results are filtered), but a
// prefix under which no scope can match is a scope_violation, so a probe
// outside the grant is refused and audited rather than answered empty.
//
// The store has no offset, so the filter works on the best-ranked rows
// only: first limit×4, then, if that was not enough and the store had
// more, store.MaxLimit. A search whose first store.MaxLimit matches are
// nearly all out of scope returns fewer than limit results.
type MemorySearch struct {
	st     MemoryStore
	tenant string
	scope  *enforce.Enforcer
	roots  []string // scopeRoot of each allowed_memory_scopes glob
}

// NewMemorySearch searches rows of tenant in st, filtered through scope,
// which must be the Enforcer the broker checks this invocation's calls with.
func NewMemorySearch(st MemoryStore, tenant string, scope *enforce.Enforcer) MemorySearch {
	m := MemorySearch{st: st, tenant: tenant, scope: scope}
	if scope != nil {
		for _, g := range scope.Declaration().Memory {
			m.roots = append(m.roots, scopeRoot(g))
		}
	}
	return m
}

// MemorySearchResult is MemorySearch's result; Results is never null.
type MemorySearchResult struct {
	Results []MemoryHit `json:"results"`
}

// MemoryHit is one row found: its path and an excerpt with the matched
// words between store.SnippetOpen and store.SnippetClose.
type MemoryHit struct {
	Path    string `json:"path"`
	Snippet string `json:"snippet"`
}

type memorySearchArgs struct {
	Query string `json:"query"`
	Path  string `json:"path,omitempty"`
	Limit *int   `json:"limit,omitempty"`
}

func decodeMemorySearch(args json.RawMessage) (memorySearchArgs, error) {
	var a memorySearchArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	switch {
	case a.Query == "":
		return a, &jsonrpc.ParamsError{Field: "query", Detail: "required"}
	case a.Limit == nil:
		a.Limit = new(int)
		*a.Limit = DefaultMemorySearchLimit
	case *a.Limit < 1:
		return a, &jsonrpc.ParamsError{Field: "limit", Detail: "must be ≥ 1"}
	case *a.Limit > MaxMemorySearchLimit:
		*a.Limit = MaxMemorySearchLimit
	}
	return a, nil
}

// Spec is MemorySearch's entry of NativeSpecs.
func (MemorySearch) Spec() Spec { return memorySpec(memorySearchName) }

// Prepare canonicalises the prefix and refuses one no scope reaches; the
// returned args carry the canonical prefix and the effective limit.
func (m MemorySearch) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	switch {
	case m.scope == nil:
		return nil, fmt.Errorf("memory search: %w", ErrNoScopePolicy)
	case e != m.scope:
		// Results are filtered through m.scope: checking the call with
		// another policy would let the check and the filter disagree.
		return nil, fmt.Errorf("memory search: %w: built for another Enforcer than the call's", ErrNoScopePolicy)
	}
	a, err := decodeMemorySearch(args)
	if err != nil {
		return nil, err
	}
	if a.Path != "" {
		if a.Path, err = enforce.CanonicalMemoryPath(a.Path); err != nil {
			return nil, enforce.Deny(enforce.ReasonScopeViolation, memorySearchName, "%v", err)
		}
	}
	if _, ok := narrowPrefix(a.Path, m.roots); !ok {
		// Also the case for a skill with no allowed_memory_scopes at all.
		return nil, enforce.Deny(enforce.ReasonScopeViolation, memorySearchName, "no allowed_memory_scopes under %q", a.Path)
	}
	return json.Marshal(a)
}

// Invoke runs the search and keeps only in-scope rows of the tenant.
func (m MemorySearch) Invoke(ctx context.Context, call Call) (any, error) {
	if m.scope == nil {
		return nil, fmt.Errorf("memory search: %w", ErrNoScopePolicy)
	}
	a, err := decodeMemorySearch(call.Args)
	if err != nil {
		return nil, err
	}
	if a.Path != "" {
		if err := preparedMemoryPath(memorySearchName, a.Path); err != nil {
			return nil, err
		}
	}
	res := &MemorySearchResult{Results: []MemoryHit{}}
	prefix, ok := narrowPrefix(a.Path, m.roots)
	if !ok {
		return res, nil
	}
	limit := *a.Limit
	fetch := min(limit*memoryOverFetch, store.MaxLimit)
	for {
		rows, err := m.st.MemorySearch(ctx, m.tenant, a.Query, prefix, fetch)
		if err != nil {
			return nil, fmt.Errorf("memory search under %q: %w", prefix, err)
		}
		res.Results = m.keep(res.Results[:0], rows, a.Path, limit)
		// Done when full, when the store had no more, or at its cap.
		if len(res.Results) == limit || len(rows) < fetch || fetch == store.MaxLimit {
			return res, nil
		}
		fetch = store.MaxLimit
	}
}

// keep appends to out the rows that may be returned, up to limit.
func (m MemorySearch) keep(out []MemoryHit, rows []store.MemoryRow, within string, limit int) []MemoryHit {
	for _, r := range rows {
		if len(out) == limit {
			break
		}
		if m.visible(r, within) {
			out = append(out, MemoryHit{Path: r.Path, Snippet: r.Snippet})
		}
	}
	return out
}

// visible is the one filter every result passes.
func (m MemorySearch) visible(r store.MemoryRow, within string) bool {
	// The store filters by tenant in SQL; a second look costs nothing and
	// keeps a store bug from crossing tenants.
	if r.Tenant != m.tenant || !underDir(r.Path, within) {
		return false
	}
	// Globs must only ever see canonical paths: "a/x/../../b" matches
	// "a/x/**" as a string. A row stored under such a spelling (by
	// anything but MemoryEmit, which canonicalises) is never returned.
	if c, err := enforce.CanonicalMemoryPath(r.Path); err != nil || c != r.Path {
		return false
	}
	return m.scope.MemoryAllowed(r.Path)
}

// scopeRoot is the literal directory a scope glob starts with: its
// segments before the first one holding a glob metacharacter. Every path
// the glob matches is the root or lies under it, so searching under the
// root loses nothing the filter would keep.
func scopeRoot(glob string) string {
	end := 0
	for i := 0; i <= len(glob); i++ {
		if i < len(glob) && glob[i] != '/' {
			continue
		}
		if strings.ContainsAny(glob[end:i], `*?[]{}\!`) {
			return strings.TrimSuffix(glob[:end], "/")
		}
		end = i + 1
	}
	return glob
}

// narrowPrefix is the store prefix for a search under p: the narrowest
// directory holding every path that is under p and may match a scope
// ("" is everything). ok is false when no scope reaches under p.
//
// Narrowing only saves the filter work: rows a broader prefix would add
// are rows the filter drops.
func narrowPrefix(p string, roots []string) (prefix string, ok bool) {
	for _, r := range roots {
		var n string
		switch {
		case underDir(p, r): // p is inside this scope's root
			n = p
		case underDir(r, p): // the root is inside p
			n = r
		default:
			continue
		}
		if !ok {
			prefix, ok = n, true
			continue
		}
		prefix = commonDir(prefix, n)
	}
	return prefix, ok
}

// underDir reports whether p is dir or lies under it, segment-wise; every
// path is under "".
func underDir(p, dir string) bool {
	return dir == "" || p == dir || (strings.HasPrefix(p, dir) && p[len(dir)] == '/')
}

// commonDir is the longest directory both a and b are under.
func commonDir(a, b string) string {
	for !underDir(b, a) {
		i := strings.LastIndexByte(a, '/')
		if i < 0 {
			return ""
		}
		a = a[:i]
	}
	return a
}
