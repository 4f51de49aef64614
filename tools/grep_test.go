//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// ftGrepTree is a grant holding text, binary, big and linked files, next
// to a secret the links point at. It returns the grant and the secret.
func ftGrepTree(t testing.TB) (dir, secret string) {
	t.Helper()
	root := ftTempDir(t)
	dir, secret = root+"/allowed", root+"/secret"
	ftTree(t, root, "allowed/sub/", "secret/")
	files := map[string]string{
		dir + "/a.txt":         "hello world\nnothing here\nsay hello again\n",
		dir + "/b.go":          "package b // hello from go",
		dir + "/crlf.txt":      "hello\r\nbye\r\n",
		dir + "/sub/c.txt":     "deep hello",
		dir + "/bin":           "hello\x00binary",
		dir + "/big":           "hello " + strings.Repeat("x", 3000),
		dir + "/long.txt":      strings.Repeat("é", 1000) + "hello",
		secret + "/shadow":     "hello root:$6$SECRET",
		secret + "/sub/hidden": "hello SECRET too",
	}
	for p, body := range files {
		ftMkdirs(t, "/", p)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ftTree(t, dir, "link -> "+secret+"/shadow", "linkdir -> "+secret+"/sub", "alias -> a.txt", "fifo|")
	return dir, secret
}

func ftGrep(t *testing.T, g *Grep, e *enforce.Enforcer, args map[string]any) (*GrepResult, error) {
	t.Helper()
	res, err := ftCall(t.Context(), g, e, args)
	if err != nil {
		return nil, err
	}
	return res.(*GrepResult), nil
}

// ftMatches renders matches as "path:line:text", the path relative to dir.
func ftMatches(dir string, ms []GrepMatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s:%d:%s", strings.TrimPrefix(m.Path, dir+"/"), m.Line, m.Text))
	}
	return out
}

func TestGrep(t *testing.T) {
	dir, _ := ftGrepTree(t)
	e := ftPolicy(t, "Grep", dir+"/**")
	g := &Grep{e: e, FileMax: 2100} // big is over, long.txt under
	long := strings.Repeat("é", grepLineMax/2)

	tests := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"directory", map[string]any{"pattern": "hello", "path": dir},
			[]string{"a.txt:1:hello world", "a.txt:3:say hello again", "b.go:1:package b // hello from go", "crlf.txt:1:hello", "long.txt:1:" + long, "sub/c.txt:1:deep hello"}},
		{"one file", map[string]any{"pattern": "hello", "path": dir + "/a.txt"},
			[]string{"a.txt:1:hello world", "a.txt:3:say hello again"}},
		{"through an allowed link", map[string]any{"pattern": "again", "path": dir + "/alias"},
			[]string{"a.txt:3:say hello again"}},
		{"subdirectory", map[string]any{"pattern": "hello", "path": dir + "/sub"},
			[]string{"sub/c.txt:1:deep hello"}},
		{"anchors are per line", map[string]any{"pattern": "^say", "path": dir},
			[]string{"a.txt:3:say hello again"}},
		{"$ before CRLF", map[string]any{"pattern": "bye$", "path": dir},
			[]string{"crlf.txt:2:bye"}},
		{"case-insensitive", map[string]any{"pattern": "(?i)HELLO W", "path": dir},
			[]string{"a.txt:1:hello world"}},
		{"glob by name", map[string]any{"pattern": "hello", "path": dir, "glob": "*.go"},
			[]string{"b.go:1:package b // hello from go"}},
		{"glob by path", map[string]any{"pattern": "hello", "path": dir, "glob": dir + "/sub/**"},
			[]string{"sub/c.txt:1:deep hello"}},
		{"max_results", map[string]any{"pattern": "hello", "path": dir, "max_results": 2},
			[]string{"a.txt:1:hello world", "a.txt:3:say hello again"}},
		{"no match", map[string]any{"pattern": "zebra", "path": dir}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ftGrep(t, g, e, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			got := ftMatches(dir, res.Matches)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("matches\n%q\nwant\n%q", got, tt.want)
			}
			if res.Truncated != (tt.args["max_results"] != nil) {
				t.Fatalf("truncated = %v", res.Truncated)
			}
		})
	}
	t.Run("long line is cut at a rune", func(t *testing.T) {
		res, err := ftGrep(t, g, e, map[string]any{"pattern": "é", "path": dir + "/long.txt"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || res.Matches[0].Text != long {
			t.Fatalf("got %d bytes, want %d", len(res.Matches[0].Text), len(long))
		}
	})
}

func TestGrepLineNumbers(t *testing.T) {
	dir := ftTempDir(t)
	e := ftPolicy(t, "Grep", dir+"/**")
	tests := []struct {
		name, body, pattern string
		want                []int
	}{
		{"prefix skips lines", "hello\nxx hello no\n\nhello again\nhello a", "hello a", []int{4, 5}},
		{"prefix in a non-matching line", "say hello\nhello", "hello$", []int{1, 2}},
		{"no prefix", "a\nb\nab\n", "a|b", []int{1, 2, 3}},
		{"empty lines", "\n\nx\n\n", "^$", []int{1, 2, 4}},
		{"no trailing newline", "x\ny", "y", []int{2}},
		{"prefix spanning lines", "ab\ncd", "b\nc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(dir+"/f", []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := ftGrep(t, NewGrep(e), e, map[string]any{"pattern": tt.pattern, "path": dir + "/f"})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range res.Matches {
				got = append(got, m.Line)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("lines %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGrepNeverLeaks searches every way into the secret from inside the
// grant: nothing of it may come back.
func TestGrepNeverLeaks(t *testing.T) {
	dir, _ := ftGrepTree(t)
	e := ftPolicy(t, "Grep", dir+"/**")
	narrow := ftPolicy(t, "Grep", dir+"/*.txt")
	for _, tt := range []struct {
		e    *enforce.Enforcer
		path string
	}{{e, dir}, {e, dir + "/sub"}, {narrow, dir}} {
		for _, pattern := range []string{"SECRET", "hello", ""} {
			res, err := ftGrep(t, NewGrep(tt.e), tt.e, map[string]any{"pattern": pattern, "path": tt.path, "max_results": MaxGrepResults})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Matches {
				if strings.Contains(m.Text, "SECRET") || strings.Contains(m.Path, "secret") || strings.Contains(m.Path, "link") {
					t.Fatalf("%s under %s: leaked %+v", pattern, tt.path, m)
				}
				if tt.e == narrow && !strings.HasSuffix(m.Path, ".txt") {
					t.Fatalf("%s: %s is outside the narrow grant", pattern, m.Path)
				}
			}
		}
	}
}

func TestGrepErrors(t *testing.T) {
	dir, secret := ftGrepTree(t)
	e := ftPolicy(t, "Grep", dir+"/**")
	tests := []struct {
		name string
		args string
		want error
	}{
		{"path outside", `{"pattern":"x","path":"` + secret + `"}`, enforce.ErrFileViolation},
		{"file outside", `{"pattern":"x","path":"` + secret + `/shadow"}`, enforce.ErrFileViolation},
		{"parent of the grant", `{"pattern":"x","path":"` + filepath.Dir(dir) + `"}`, enforce.ErrFileViolation},
		{"root", `{"pattern":"x","path":"/"}`, enforce.ErrFileViolation},
		{"link to a secret file", `{"pattern":"x","path":"` + dir + `/link"}`, enforce.ErrFileViolation},
		{"link to a secret dir", `{"pattern":"x","path":"` + dir + `/linkdir"}`, enforce.ErrFileViolation},
		{"dotdot out", `{"pattern":"x","path":"` + dir + `/../secret"}`, enforce.ErrFileViolation},
		{"relative", `{"pattern":"x","path":"allowed"}`, enforce.ErrFileViolation},
		{"bad RE2", `{"pattern":"(","path":"` + dir + `"}`, jsonrpc.ErrInvalidParams},
		{"backreference is not RE2", `{"pattern":"(a)\\1","path":"` + dir + `"}`, jsonrpc.ErrInvalidParams},
		{"bad glob", `{"pattern":"x","path":"` + dir + `","glob":"[a"}`, jsonrpc.ErrInvalidParams},
		{"relative glob with a slash", `{"pattern":"x","path":"` + dir + `","glob":"sub/*.txt"}`, jsonrpc.ErrInvalidParams},
		{"max_results zero", `{"pattern":"x","path":"` + dir + `","max_results":0}`, jsonrpc.ErrInvalidParams},
		{"missing path", `{"pattern":"x"}`, jsonrpc.ErrInvalidParams},
		{"not found", `{"pattern":"x","path":"` + dir + `/nope"}`, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ftCall(t.Context(), NewGrep(e), e, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d, ok := enforce.AsDenial(err); ok && d.Tool != "Grep" {
				t.Fatalf("denial names tool %q", d.Tool)
			}
		})
	}
}

// TestGrepInvokeRefusesSymlink: a searched directory swapped for a link to
// the secret after the check is a denial, not a search of the secret.
func TestGrepInvokeRefusesSymlink(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			useWalk(t, o.walk)
			dir, secret := ftGrepTree(t)
			e := ftPolicy(t, "Grep", dir+"/**")
			g := NewGrep(e)
			checked, err := g.Prepare(json.RawMessage(`{"pattern":"hello","path":"`+dir+`/sub"}`), e)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir + "/sub"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret+"/sub", dir+"/sub"); err != nil {
				t.Fatal(err)
			}
			_, err = g.Invoke(t.Context(), Call{Args: checked})
			d, ok := enforce.AsDenial(err)
			if !ok || d.Reason != enforce.ReasonFileViolation || d.Tool != "Grep" {
				t.Fatalf("err = %v, want a Grep file_violation", err)
			}
		})
	}
}

func TestGrepMaxResultsCapped(t *testing.T) {
	dir := ftTempDir(t)
	if err := os.WriteFile(dir+"/f", []byte(strings.Repeat("x\n", MaxGrepResults+10)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := ftPolicy(t, "Grep", dir+"/**")
	res, err := ftGrep(t, NewGrep(e), e, map[string]any{"pattern": "x", "path": dir, "max_results": 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != MaxGrepResults || !res.Truncated {
		t.Fatalf("%d matches, truncated %v; want %d, truncated", len(res.Matches), res.Truncated, MaxGrepResults)
	}
	small := res.Truncate(4096).(*GrepResult)
	if b, _ := json.Marshal(small); len(b) > 4096 || !small.Truncated || len(small.Matches) == 0 {
		t.Fatalf("Truncate(4096): %d bytes, %d matches", len(b), len(small.Matches))
	}
}

// BenchmarkGrep searches a small tree: 20 directories of 10 files of 100
// lines, one line in ten matching.
func BenchmarkGrep(b *testing.B) {
	dir := ftTempDir(b)
	var body strings.Builder
	for i := range 100 {
		if i%10 == 0 {
			fmt.Fprintf(&body, "func handler%d() error { return nil } // TODO\n", i)
		} else {
			fmt.Fprintf(&body, "\tx := compute(%d, y, z) // some ordinary code line\n", i)
		}
	}
	for d := range 20 {
		for f := range 10 {
			p := fmt.Sprintf("%s/d%02d/f%02d.go", dir, d, f)
			ftMkdirs(b, "/", p)
			if err := os.WriteFile(p, []byte(body.String()), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	e := ftPolicy(b, "Grep", dir+"/**")
	g := NewGrep(e)
	for _, bc := range []struct{ name, pattern string }{
		{"literal", "TODO"}, {"regexp", `handler\d+\(\)`}, {"none", "zebra"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args, _ := json.Marshal(map[string]any{"pattern": bc.pattern, "path": dir, "max_results": MaxGrepResults})
			checked, err := g.Prepare(args, e)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Invoke(b.Context(), Call{Args: checked}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
