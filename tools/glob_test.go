//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// ftGlobTree is a grant ("allowed") next to a secret, with links from the
// one into the other. It returns the root holding both.
func ftGlobTree(t testing.TB) string {
	t.Helper()
	root := ftTempDir(t)
	ftTree(t, root,
		"allowed/a.txt", "allowed/b.go", "allowed/sub/c.txt", "allowed/sub/deep/d.txt", "allowed/empty/",
		"allowed/fifo|",
		"allowed/link-dir -> "+root+"/secret",
		"allowed/link-file -> "+root+"/secret/s.txt",
		"allowed/link-ok -> a.txt",
		"allowed/link-subdir -> sub",
		"allowed/dangling -> nope",
		"secret/s.txt", "secret/x/y.txt",
		"allowed-sibling/z.txt",
	)
	return root
}

func ftGlob(t *testing.T, g *Glob, e *enforce.Enforcer, pattern string) (*GlobResult, error) {
	t.Helper()
	res, err := ftCall(t.Context(), g, e, map[string]string{"pattern": pattern})
	if err != nil {
		return nil, err
	}
	return res.(*GlobResult), nil
}

func TestGlob(t *testing.T) {
	root := ftGlobTree(t)
	a := root + "/allowed"
	e := ftPolicy(t, "Glob", a+"/**")
	narrow := ftPolicy(t, "Glob", a+"/*.txt", a+"/sub/*.txt")
	all := []string{a + "/a.txt", a + "/b.go", a + "/link-ok", a + "/sub/c.txt", a + "/sub/deep/d.txt"}

	tests := []struct {
		name    string
		e       *enforce.Enforcer
		pattern string
		want    []string
	}{
		{"everything allowed", e, a + "/**", all},
		{"one level", e, a + "/*", []string{a + "/a.txt", a + "/b.go", a + "/link-ok"}},
		{"extension anywhere", e, a + "/**/*.txt", []string{a + "/a.txt", a + "/sub/c.txt", a + "/sub/deep/d.txt"}},
		{"literal file", e, a + "/sub/c.txt", []string{a + "/sub/c.txt"}},
		{"alternatives", e, a + "/{a,b}.*", []string{a + "/a.txt", a + "/b.go"}},
		{"the whole disk", e, "/**", all},
		{"the whole disk, by name", e, "/**/*.txt", []string{a + "/a.txt", a + "/sub/c.txt", a + "/sub/deep/d.txt"}},
		{"the secret", e, root + "/secret/**", nil},
		{"/etc", e, "/etc/**", nil},
		{"dotdot to the secret", e, a + "/../secret/*", nil},
		{"dotdot to the secret, deep", e, a + "/sub/../../secret/**", nil},
		{"through the link to the secret", e, a + "/link-dir/*", nil},
		{"through a link inside", e, a + "/link-subdir/*", nil},
		{"sibling sharing a prefix", e, root + "/allowed*/*", []string{a + "/a.txt", a + "/b.go", a + "/link-ok"}},
		{"no match", e, a + "/*.rs", nil},
		{"narrow grant", narrow, a + "/**", []string{a + "/a.txt", a + "/link-ok", a + "/sub/c.txt"}},
		{"narrow grant, the whole disk", narrow, "/**", []string{a + "/a.txt", a + "/link-ok", a + "/sub/c.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ftGlob(t, NewGlob(tt.e), tt.e, tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Paths, tt.want) || res.Truncated {
				t.Fatalf("paths %q (truncated %v), want %q", res.Paths, res.Truncated, tt.want)
			}
			for _, p := range res.Paths {
				if strings.Contains(p, "secret") {
					t.Fatalf("a secret path came back: %s", p)
				}
			}
		})
	}
}

func TestGlobTruncated(t *testing.T) {
	root := ftGlobTree(t)
	a := root + "/allowed"
	e := ftPolicy(t, "Glob", a+"/**")
	all := []string{a + "/a.txt", a + "/b.go", a + "/link-ok", a + "/sub/c.txt", a + "/sub/deep/d.txt"}
	tests := []struct {
		name string
		g    *Glob
		n    int // paths returned; -1: fewer than all
	}{
		{"results", &Glob{e: e, MaxResults: 2}, 2},
		{"visits", &Glob{e: e, MaxVisits: 4}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ftGlob(t, tt.g, e, a+"/**")
			if err != nil {
				t.Fatal(err)
			}
			n := len(res.Paths)
			if !res.Truncated || tt.n >= 0 && n != tt.n || n >= len(all) {
				t.Fatalf("got %+v, want %d paths, truncated", res, tt.n)
			}
			for _, p := range res.Paths {
				if !slices.Contains(all, p) {
					t.Fatalf("unexpected path %s", p)
				}
			}
		})
	}
}

func TestGlobErrors(t *testing.T) {
	dir := ftTempDir(t)
	e := ftPolicy(t, "Glob", dir+"/**")
	other := ftPolicy(t, "Glob", dir+"/**")
	tests := []struct {
		name string
		g    *Glob
		args string
		want error
	}{
		{"bad glob", NewGlob(e), `{"pattern":"` + dir + `/[a"}`, jsonrpc.ErrInvalidParams},
		{"unclosed brace", NewGlob(e), `{"pattern":"` + dir + `/{a,b"}`, jsonrpc.ErrInvalidParams},
		{"relative", NewGlob(e), `{"pattern":"*.go"}`, jsonrpc.ErrInvalidParams},
		{"empty", NewGlob(e), `{"pattern":""}`, jsonrpc.ErrInvalidParams},
		{"missing", NewGlob(e), `{}`, jsonrpc.ErrInvalidParams},
		{"unknown field", NewGlob(e), `{"pattern":"/x","path":"/"}`, jsonrpc.ErrInvalidParams},
		{"another enforcer", NewGlob(other), `{"pattern":"/x"}`, ErrEnforcerMismatch},
		{"no enforcer", NewGlob(nil), `{"pattern":"/x"}`, ErrEnforcerMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ftCall(t.Context(), tt.g, e, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestGlobResultTruncate(t *testing.T) {
	res := &GlobResult{}
	for i := range 1000 {
		res.Paths = append(res.Paths, "/data/"+strings.Repeat("x", i%50))
	}
	for _, room := range []int{10, 100, 4096, 1 << 20} {
		small := res.Truncate(room).(*GlobResult)
		b, _ := json.Marshal(small)
		if room >= 100 && len(b) > room || !small.Truncated || !slices.Equal(small.Paths, res.Paths[:len(small.Paths)]) {
			t.Fatalf("Truncate(%d): %d bytes, %d paths", room, len(b), len(small.Paths))
		}
		if room == 4096 && len(b) < room-60 {
			t.Fatalf("Truncate(%d) uses only %d bytes", room, len(b))
		}
	}
}

func TestNarrowRoots(t *testing.T) {
	tests := []struct {
		root    string
		allowed []string
		want    []string
	}{
		{"/", []string{"/b", "/a", "/a/c", "/ab"}, []string{"/a", "/ab", "/b"}},
		{"/a/c/d", []string{"/a", "/b"}, []string{"/a/c/d"}},
		{"/a", []string{"/a/x", "/a/y", "/b"}, []string{"/a/x", "/a/y"}},
		{"/etc", []string{"/a", "/b"}, nil},
	}
	for _, tt := range tests {
		if got := narrowRoots(tt.root, tt.allowed); !slices.Equal(got, tt.want) {
			t.Errorf("narrowRoots(%q, %q) = %q, want %q", tt.root, tt.allowed, got, tt.want)
		}
	}
}
