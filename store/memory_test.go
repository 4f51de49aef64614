package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// seedMemory writes the same paths for tenants "a" and "b", with bodies
// that differ by tenant, so any leak across tenants shows.
func seedMemory(t testing.TB, s *Store) {
	t.Helper()
	rows := []MemoryRow{
		{Path: "notes/alpha", Body: "the quick brown fox"},
		{Path: "notes/beta", Body: "lazy dog sleeps; quick nap"},
		{Path: "notes/100%_done", Body: "percent underscore literal quick"},
		{Path: "notesX/gamma", Body: "quick outside the prefix"},
		{Path: "path/star", Body: `foo " OR path:* NEAR(a b) ' % _ quick`},
	}
	for _, tenant := range []string{"a", "b"} {
		for _, r := range rows {
			r.Tenant = tenant
			r.Body += " tenant" + tenant
			if err := s.MemoryPut(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestMemoryPutGet(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	m := MemoryRow{Tenant: "a", Path: "p", Body: "one", TraceID: "t", InvocationID: "i", UpdatedAt: at}
	if err := s.MemoryPut(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.MemoryGet(ctx, "a", "p")
	if err != nil {
		t.Fatal(err)
	}
	// sha256("one")
	m.ContentHash = "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed"
	if got != m {
		t.Errorf("MemoryGet = %+v, want %+v", got, m)
	}
	// Upsert replaces the body, and the index follows.
	m.Body, m.ContentHash = "two", ""
	if err := s.MemoryPut(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.MemoryGet(ctx, "a", "p"); got.Body != "two" {
		t.Errorf("after upsert body = %q", got.Body)
	}
	assertSearch(t, s, "a", "one", "", nil)
	assertSearch(t, s, "a", "two", "", []string{"p"})

	if err := s.MemoryDelete(ctx, "a", "p"); err != nil {
		t.Fatal(err)
	}
	assertSearch(t, s, "a", "two", "", nil)

	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"get deleted", func() error { _, err := s.MemoryGet(ctx, "a", "p"); return err }, ErrNotFound},
		{"get other tenant", func() error { _, err := s.MemoryGet(ctx, "b", "p"); return err }, ErrNotFound},
		{"delete unknown", func() error { return s.MemoryDelete(ctx, "a", "p") }, ErrNotFound},
		{"put without tenant", func() error { return s.MemoryPut(ctx, MemoryRow{Path: "p"}) }, ErrInvalid},
		{"put without path", func() error { return s.MemoryPut(ctx, MemoryRow{Tenant: "a"}) }, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMemorySearch(t *testing.T) {
	s := openTest(t)
	seedMemory(t, s)
	tests := []struct {
		name          string
		query, prefix string
		want          []string // paths of tenant a, any order
	}{
		{"word", "fox", "", []string{"notes/alpha"}},
		{"all words required", "quick fox", "", []string{"notes/alpha"}},
		{"path is searched", "gamma", "", []string{"notesX/gamma"}},
		{"prefix", "quick", "notes/", []string{"notes/alpha", "notes/beta", "notes/100%_done"}},
		{"prefix without slash", "quick", "notes", []string{"notes/alpha", "notes/beta", "notes/100%_done", "notesX/gamma"}},
		{"prefix with percent is literal", "quick", "notes/100%", []string{"notes/100%_done"}},
		{"percent alone matches no path", "quick", "%", nil},
		{"underscore is literal", "quick", "notes_", nil},
		{"underscore in the middle", "quick", "notes/100%_", []string{"notes/100%_done"}},
		{"other tenant's word", "tenantb", "", nil},
		{"no terms", "", "", nil},
		{"spaces only", "   ", "", nil},

		// Injection attempts: FTS5 syntax is read as plain words.
		{"quote and column filter", `foo" OR path:*`, "", []string{"path/star"}},
		{"bare star", "*", "", nil},
		{"NEAR group", "NEAR(a b)", "", []string{"path/star"}},
		{"single quote", "'", "", nil},
		{"sql quote", "' OR 1=1 --", "", nil},
		{"OR does not widen", "fox OR dog", "", nil},
		{"NOT does not narrow", "quick NOT fox", "", nil},
		{"column filter", "body:fox", "", nil},
		{"column filter on path", "path:alpha", "", nil},
		{"caret", "^quick", "", []string{"notes/alpha", "notes/beta", "notes/100%_done", "notesX/gamma", "path/star"}},
		{"prefix star", "qui*", "", nil},
		{"unbalanced quote", `"fox`, "", []string{"notes/alpha"}},
		{"braces", "{path body}: fox", "", nil},
		{"tenant in query", "tenantb fox", "", nil},
		{"nul byte", "fox\x00", "", []string{"notes/alpha"}},
		{"percent query", "%", "", nil},
		{"long hyphenated word", strings.Repeat("fox-", 50000), "", []string{"notes/alpha"}},
		{"underscore query", "_", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertSearch(t, s, "a", tt.query, tt.prefix, tt.want)
		})
	}
}

func TestFTSQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"quick fox", `"quick" "fox"`},
		{`foo" OR path:*`, `"foo" "OR" "path"`},
		{"NEAR(a b)", `"NEAR" "a" "b"`},
		{"{path body}: x ^y -z +w", `"path" "body" "x" "y" "z" "w"`},
		{"e-mail", `"e" "mail"`},
		{"café naïve", `"café" "naïve"`},
		{"cafe\u0301", "\"cafe\u0301\""},
		{"\u0301 * ' % _", ""},
		{"", ""},
		{strings.Repeat("a ", 100), strings.TrimSpace(strings.Repeat(`"a" `, maxSearchTerms))},
	}
	for _, tt := range tests {
		if got := ftsQuery(tt.in); got != tt.want {
			t.Errorf("ftsQuery(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// assertSearch runs MemorySearch for tenant and checks the set of paths;
// every row must be of tenant.
func assertSearch(t *testing.T, s *Store, tenant, query, prefix string, want []string) {
	t.Helper()
	rows, err := s.MemorySearch(t.Context(), tenant, query, prefix, 0)
	if err != nil {
		t.Fatalf("MemorySearch(%q, %q): %v", query, prefix, err)
	}
	var got []string
	for _, r := range rows {
		if r.Tenant != tenant || strings.Contains(r.Body, "tenant") && !strings.Contains(r.Body, "tenant"+tenant) {
			t.Errorf("MemorySearch(%q) for tenant %s returned %+v", query, tenant, r)
		}
		got = append(got, r.Path)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("MemorySearch(%q, %q) = %q, want %q", query, prefix, got, want)
	}
}

func TestMemorySearchSnippetAndRank(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	for _, m := range []MemoryRow{
		{Tenant: "a", Path: "once", Body: "a report on apples and pears"},
		{Tenant: "a", Path: "thrice", Body: "apples apples apples"},
	} {
		if err := s.MemoryPut(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.MemorySearch(ctx, "a", "apples", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Path != "thrice" {
		t.Fatalf("rank order = %+v", rows)
	}
	if want := "[apples] [apples] [apples]"; rows[0].Snippet != want {
		t.Errorf("snippet = %q, want %q", rows[0].Snippet, want)
	}
	if rows, err := s.MemorySearch(ctx, "a", "apples", "", 1); err != nil || len(rows) != 1 {
		t.Errorf("limit 1: %d rows, %v", len(rows), err)
	}
}

// Whatever the query and prefix, tenant a never sees tenant b's rows.
func TestMemoryTenantIsolation(t *testing.T) {
	s := openTest(t)
	seedMemory(t, s)
	queries := []string{"quick", "tenantb", "tenanta", `" OR tenant:b`, "*", "notes", "path", "b"}
	prefixes := []string{"", "notes/", "%", "_", "path/"}
	for _, q := range queries {
		for _, p := range prefixes {
			rows, err := s.MemorySearch(t.Context(), "a", q, p, MaxLimit)
			if err != nil {
				t.Fatalf("MemorySearch(%q, %q): %v", q, p, err)
			}
			for _, r := range rows {
				if r.Tenant != "a" || strings.Contains(r.Body, "tenantb") {
					t.Errorf("MemorySearch(%q, %q) leaked %+v", q, p, r)
				}
			}
		}
		list, err := s.MemoryList(t.Context(), "a", "", MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			if r.Tenant != "a" {
				t.Errorf("MemoryList leaked %+v", r)
			}
		}
	}
}

func TestMemoryList(t *testing.T) {
	s := openTest(t)
	seedMemory(t, s)
	tests := []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"notes/", 0, []string{"notes/100%_done", "notes/alpha", "notes/beta"}},
		{"notes/", 2, []string{"notes/100%_done", "notes/alpha"}},
		{"%", 0, nil},
		{"", 0, []string{"notes/100%_done", "notes/alpha", "notes/beta", "notesX/gamma", "path/star"}},
	}
	for _, tt := range tests {
		rows, err := s.MemoryList(t.Context(), "b", tt.prefix, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Path)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("MemoryList(b, %q, %d) = %q, want %q", tt.prefix, tt.limit, got, tt.want)
		}
	}
}

// FuzzMemorySearch: no query or prefix makes the search fail (an FTS5
// syntax error would) or return another tenant's rows.
func FuzzMemorySearch(f *testing.F) {
	for _, seed := range []string{`foo" OR path:*`, "*", "NEAR(a b)", "'", "%", "_", `"`, `""`, "a:b", "-x", "+", "^", "(", ")", "\x00", "AND", "fox\"\"*"} {
		f.Add(seed, "")
		f.Add("quick", seed)
	}
	s := openTest(f)
	seedMemory(f, s)
	f.Fuzz(func(t *testing.T, query, prefix string) {
		rows, err := s.MemorySearch(t.Context(), "a", query, prefix, 10)
		if err != nil {
			t.Fatalf("MemorySearch(%q, %q): %v", query, prefix, err)
		}
		for _, r := range rows {
			if r.Tenant != "a" || strings.Contains(r.Body, "tenantb") || !strings.HasPrefix(r.Path, prefix) {
				t.Fatalf("MemorySearch(%q, %q) returned %+v", query, prefix, r)
			}
		}
	})
}
