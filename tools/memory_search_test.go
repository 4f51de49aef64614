package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/tools"
)

// memLeakFixture is a store where one word, "zebra", is everywhere: in scope,
// out of scope (siblings, lookalike prefixes, a non-canonical spelling),
// and in another tenant. "okapi" is only out of scope.
func memLeakFixture(t testing.TB, st tools.MemoryStore) (inScope []string) {
	t.Helper()
	inScope = []string{
		"memories/projects/cyberos/a.md",
		"memories/projects/cyberos/notes/b.md",
		"memories/projects/cyberos/notes/deep/c.md",
	}
	for _, p := range inScope {
		memPut(t, st, "a", p, "zebra in scope")
	}
	for _, p := range []string{
		"memories/people/y.md",
		"memories/projects/cyberosity/x.md",
		"memories/projects/other/x.md",
		"memories/projects/cyberos",
		"memories/projects/cyberos/../../people/z.md",
		"memories/projects/cyberos//d.md",
		"/memories/projects/cyberos/e.md",
		"other/memories/projects/cyberos/f.md",
	} {
		memPut(t, st, "a", p, "zebra okapi out of scope")
	}
	for _, p := range inScope {
		memPut(t, st, "b", p, "zebra okapi tenant b")
	}
	return inScope
}

func memHitPaths(t *testing.T, res any) []string {
	t.Helper()
	var out []string
	for _, h := range res.(*tools.MemorySearchResult).Results {
		if !strings.Contains(h.Snippet, store.SnippetOpen) {
			t.Errorf("hit %+v has no marked snippet", h)
		}
		out = append(out, h.Path)
	}
	slices.Sort(out)
	return out
}

// MemorySearch never returns a row outside the tenant and the scopes,
// whatever the query and prefix.
func TestMemorySearchNeverLeaks(t *testing.T) {
	st := memStore(t)
	in := memLeakFixture(t, st)
	e := memPolicy(t, memCyberos)
	search := tools.NewMemorySearch(st, "a", e)
	notes := in[1:]

	tests := []struct {
		name, query string
		path        any // nil: no prefix
		want        []string
		err         error
	}{
		{"no prefix", "zebra", nil, in, nil},
		{"empty prefix", "zebra", "", in, nil},
		{"scope dir", "zebra", "memories/projects/cyberos", in, nil},
		{"inside scope", "zebra", "memories/projects/cyberos/notes", notes, nil},
		{"inside, spelt oddly", "zebra", "/memories//projects/cyberos/./notes/", notes, nil},
		{"broader", "zebra", "memories/projects", in, nil},
		{"broadest", "zebra", "memories", in, nil},
		{"string prefix of the scope", "zebra", "memories/projects/cyber", nil, enforce.ErrScopeViolation},
		{"outside", "zebra", "memories/people", nil, enforce.ErrScopeViolation},
		{"lookalike sibling", "zebra", "memories/projects/cyberosity", nil, enforce.ErrScopeViolation},
		{"traversal out", "zebra", "memories/projects/cyberos/../../people", nil, enforce.ErrScopeViolation},
		{"traversal above root", "zebra", "memories/projects/cyberos/../../../..", nil, enforce.ErrScopeViolation},
		{"encoded traversal", "zebra", "memories/projects/cyberos/%2e%2e", nil, enforce.ErrScopeViolation},
		{"backslash", "zebra", `memories\projects`, nil, enforce.ErrScopeViolation},
		{"NUL", "zebra", "memories\x00", nil, enforce.ErrScopeViolation},
		{"other tree", "zebra", "other", nil, enforce.ErrScopeViolation},
		{"word only out of scope", "okapi", nil, nil, nil},
		{"word only out of scope, broad prefix", "okapi", "memories", nil, nil},
		{"FTS syntax", `zebra OR okapi NOT "x" path:*`, nil, nil, nil},
		{"column filter", "path:people", nil, nil, nil},
		{"tenant word", "tenant b", nil, nil, nil},
		{"path words", "people", nil, nil, nil},
		{"no words", "***", nil, nil, nil},
		{"no query", "", nil, nil, jsonrpc.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := map[string]any{"query": tt.query}
			if tt.path != nil {
				a["path"] = tt.path
			}
			raw, _ := json.Marshal(a)
			res, err := memRun(t, search, e, string(raw), "")
			memWantErr(t, err, tt.err)
			if err != nil {
				return
			}
			if got := memHitPaths(t, res); !slices.Equal(got, tt.want) {
				t.Fatalf("paths = %q, want %q", got, tt.want)
			}
		})
	}
}

// With several scopes, a search covers all of them and still drops rows
// between them.
func TestMemorySearchScopes(t *testing.T) {
	st := memStore(t)
	for _, p := range []string{"memories/people/alice.md", "memories/people/bob.md", "memories/projects/cyberos/a.md", "memories/projects/x/a.md", "memories/projects/x/a.txt"} {
		memPut(t, st, "a", p, "zebra")
	}
	tests := []struct {
		name   string
		scopes []string
		path   string
		want   []string
		err    error
	}{
		{"two scopes", []string{memCyberos, "memories/people/alice.md"}, "", []string{"memories/people/alice.md", "memories/projects/cyberos/a.md"}, nil},
		{"prefix covering one", []string{memCyberos, "memories/people/alice.md"}, "memories/people", []string{"memories/people/alice.md"}, nil},
		{"prefix is a file scope", []string{memCyberos, "memories/people/alice.md"}, "memories/people/alice.md", []string{"memories/people/alice.md"}, nil},
		{"prefix beside a file scope", []string{"memories/people/alice.md"}, "memories/people/bob.md", nil, enforce.ErrScopeViolation},
		{"wildcard segment", []string{"memories/*/x/*.md"}, "", []string{"memories/projects/x/a.md"}, nil},
		{"wildcard segment, prefix", []string{"memories/*/x/*.md"}, "memories/projects/x", []string{"memories/projects/x/a.md"}, nil},
		{"everything", []string{"**"}, "", []string{"memories/people/alice.md", "memories/people/bob.md", "memories/projects/cyberos/a.md", "memories/projects/x/a.md", "memories/projects/x/a.txt"}, nil},
		{"no scopes", nil, "", nil, enforce.ErrScopeViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := memPolicy(t, tt.scopes...)
			res, err := memRun(t, tools.NewMemorySearch(st, "a", e), e, memArgs("query", "zebra", "path", tt.path), "")
			memWantErr(t, err, tt.err)
			if err != nil {
				return
			}
			if got := memHitPaths(t, res); !slices.Equal(got, tt.want) {
				t.Fatalf("paths = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemorySearchLimit(t *testing.T) {
	st := memStore(t)
	for i := range 150 {
		memPut(t, st, "a", fmt.Sprintf("memories/projects/cyberos/%03d.md", i), "zebra")
	}
	e := memPolicy(t, memCyberos)
	search := tools.NewMemorySearch(st, "a", e)
	tests := []struct {
		name  string
		limit any // nil: absent
		n     int
		err   error
	}{
		{"default", nil, tools.DefaultMemorySearchLimit, nil},
		{"one", 1, 1, nil},
		{"at the cap", tools.MaxMemorySearchLimit, tools.MaxMemorySearchLimit, nil},
		{"over the cap is clamped", 1000, tools.MaxMemorySearchLimit, nil},
		{"zero", 0, 0, jsonrpc.ErrInvalidParams},
		{"negative", -1, 0, jsonrpc.ErrInvalidParams},
		{"not a number", "5", 0, jsonrpc.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := memArgs("query", "zebra")
			if tt.limit != nil {
				a = memArgs("query", "zebra", "limit", tt.limit)
			}
			res, err := memRun(t, search, e, a, "")
			memWantErr(t, err, tt.err)
			if err == nil && len(res.(*tools.MemorySearchResult).Results) != tt.n {
				t.Fatalf("%d results, want %d", len(res.(*tools.MemorySearchResult).Results), tt.n)
			}
		})
	}
}

// memFakeStore returns its rows in order, honouring only the limit: it stands
// for a store that ranks out-of-scope rows first, or ignores the tenant and
// prefix altogether, and records what it was asked.
type memFakeStore struct {
	rows    []store.MemoryRow
	fetches []int
	err     error
}

func (f *memFakeStore) MemoryGet(_ context.Context, tenant, path string) (store.MemoryRow, error) {
	return store.MemoryRow{}, store.ErrNotFound
}

func (f *memFakeStore) MemoryPut(_ context.Context, row store.MemoryRow) error { return nil }

func (f *memFakeStore) MemorySearch(_ context.Context, _, _, _ string, limit int) ([]store.MemoryRow, error) {
	f.fetches = append(f.fetches, limit)
	return f.rows[:min(limit, len(f.rows))], f.err
}

func memRows(n int, tenant, dir string) []store.MemoryRow {
	out := make([]store.MemoryRow, n)
	for i := range out {
		out[i] = store.MemoryRow{Tenant: tenant, Path: fmt.Sprintf("%s/%04d.md", dir, i), Snippet: "[zebra]"}
	}
	return out
}

// The over-fetch: limit×4 first, one retry at store.MaxLimit when that was
// not enough and the store had more, and the documented shortfall when
// even that holds too few rows in scope.
func TestMemorySearchOverFetch(t *testing.T) {
	const limit = 5
	in := memRows(10, "a", "memories/projects/cyberos")
	out := memRows(store.MaxLimit, "a", "memories/people")
	tests := []struct {
		name    string
		rows    []store.MemoryRow
		n       int
		fetches []int
	}{
		{"enough at first", slices.Concat(out[:10], in), limit, []int{limit * 4}},
		{"few, store exhausted", slices.Concat(out[:3], in[:2]), 2, []int{limit * 4}},
		{"retry", slices.Concat(out[:50], in), limit, []int{limit * 4, store.MaxLimit}},
		{"short after the retry", slices.Concat(out[:store.MaxLimit-2], in), 2, []int{limit * 4, store.MaxLimit}},
		{"none within reach", slices.Concat(out, in), 0, []int{limit * 4, store.MaxLimit}},
		{"store ignores tenant and prefix", slices.Concat(memRows(30, "b", "memories/projects/cyberos/b"),
			[]store.MemoryRow{{Tenant: "a", Path: "memories/projects/cyberos/../../people/x.md"}, {Tenant: "a", Path: "memories/projects/cyberos//y.md"}},
			in), limit, []int{limit * 4, store.MaxLimit}},
	}
	e := memPolicy(t, memCyberos)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &memFakeStore{rows: tt.rows}
			res, err := memRun(t, tools.NewMemorySearch(f, "a", e), e, memArgs("query", "zebra", "limit", limit), "")
			if err != nil {
				t.Fatal(err)
			}
			hits := res.(*tools.MemorySearchResult).Results
			if len(hits) != tt.n || !slices.Equal(f.fetches, tt.fetches) {
				t.Fatalf("%d hits after fetches %v, want %d after %v", len(hits), f.fetches, tt.n, tt.fetches)
			}
			for _, h := range hits {
				if !strings.HasPrefix(h.Path, "memories/projects/cyberos/0") {
					t.Fatalf("hit %q outside the scope or tenant", h.Path)
				}
			}
		})
	}
	t.Run("store error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := memRun(t, tools.NewMemorySearch(&memFakeStore{err: boom}, "a", e), e, memArgs("query", "zebra"), "")
		memWantErr(t, err, boom)
	})
}

// The search is bound to one policy: it refuses to be checked with
// another, and without one it refuses everything.
func TestMemorySearchPolicyBinding(t *testing.T) {
	st := memStore(t)
	e, other := memPolicy(t, memCyberos), memPolicy(t, "**")
	_, err := memRun(t, tools.NewMemorySearch(st, "a", e), other, memArgs("query", "zebra"), "")
	memWantErr(t, err, tools.ErrNoScopePolicy)
	unbound := tools.NewMemorySearch(st, "a", nil)
	_, err = memRun(t, unbound, e, memArgs("query", "zebra"), "")
	memWantErr(t, err, tools.ErrNoScopePolicy)
	_, err = unbound.Invoke(t.Context(), tools.Call{Args: json.RawMessage(memArgs("query", "zebra"))})
	memWantErr(t, err, tools.ErrNoScopePolicy)
}

// BenchmarkMemorySearch searches 2,000 rows, half of them out of scope,
// for a word every row holds.
func BenchmarkMemorySearch(b *testing.B) {
	st := memStore(b)
	e := memPolicy(b, memCyberos)
	for i := range 1000 {
		memPut(b, st, "a", fmt.Sprintf("memories/projects/cyberos/%d.md", i), fmt.Sprintf("zebra note %d about things", i))
		memPut(b, st, "a", fmt.Sprintf("memories/people/%d.md", i), fmt.Sprintf("zebra person %d", i))
	}
	search := tools.NewMemorySearch(st, "a", e)
	for b.Loop() {
		res, err := memRun(b, search, e, memArgs("query", "zebra"), "")
		if err != nil {
			b.Fatal(err)
		}
		if n := len(res.(*tools.MemorySearchResult).Results); n != tools.DefaultMemorySearchLimit {
			b.Fatalf("%d results", n)
		}
	}
}
