package tools_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/tools"
)

const memCyberos = "memories/projects/cyberos/**"

// memTool is a memory tool as the broker drives it.
type memTool interface {
	tools.Tool
	broker.Preparer
}

func memStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// memSkillMD is a SKILL.md granting the three memory tools on scopes.
func memSkillMD(scopes ...string) string {
	fm := "---\nname: mem\ndescription: d\nallowed-tools: MemoryRead, MemorySearch, MemoryEmit\n"
	if len(scopes) > 0 {
		s, _ := json.Marshal(scopes)
		fm += "allowed_memory_scopes: " + string(s) + "\n"
	}
	return fm + "---\n"
}

// memCompile parses frontmatter and compiles its policy against every
// native tool, as the invocation does.
func memCompile(t testing.TB, frontmatter string) (*skill.Snapshot, *enforce.Enforcer) {
	t.Helper()
	m, diags := skill.Parse("SKILL.md", []byte(frontmatter))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	snap := skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil)
	cat, err := tools.Catalog(tools.NativeSpecs())
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(snap, cat)
	if err != nil {
		t.Fatal(err)
	}
	return snap, e
}

func memPolicy(t testing.TB, scopes ...string) *enforce.Enforcer {
	t.Helper()
	_, e := memCompile(t, memSkillMD(scopes...))
	return e
}

// memRun is one call the way the broker makes it: Prepare, then Invoke.
func memRun(t testing.TB, tool memTool, e *enforce.Enforcer, raw, traceID string) (any, error) {
	t.Helper()
	checked, err := tool.Prepare(json.RawMessage(raw), e)
	if err != nil {
		return nil, err
	}
	return tool.Invoke(t.Context(), tools.Call{Args: checked, TraceID: traceID})
}

func memPut(t testing.TB, st tools.MemoryStore, tenant, path, body string) {
	t.Helper()
	if err := st.MemoryPut(t.Context(), store.MemoryRow{Tenant: tenant, Path: path, Body: body, TraceID: "trace-" + tenant, InvocationID: "inv-" + tenant}); err != nil {
		t.Fatal(err)
	}
}

func memSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func memArgs(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// memWantErr checks err against want: nil, a denial's sentinel, or any other
// sentinel. A denial must also carry the tool's name.
func memWantErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("err = %v, want success", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if errors.Is(err, enforce.ErrScopeViolation) {
		if d, ok := enforce.AsDenial(err); !ok || d.Reason != enforce.ReasonScopeViolation || d.Tool == "" {
			t.Fatalf("denial = %+v, want reason scope_violation with the tool", d)
		}
	}
}

// Seed criteria 1, 4 and 5 at the tool level, and every spelling of a path
// a skill might try: each either canonicalises inside the scope and reads
// the in-scope row, or is denied; none returns another row.
func TestMemoryRead(t *testing.T) {
	st := memStore(t)
	e := memPolicy(t, memCyberos)
	const in = "memories/projects/cyberos/notes/x.md"
	memPut(t, st, "a", in, "in scope")
	memPut(t, st, "b", in, "tenant b's row")
	memPut(t, st, "a", "memories/people/y.md", "secret")
	memPut(t, st, "a", "memories/projects/people/y.md", "secret")
	read := tools.NewMemoryRead(st, "a")

	tests := []struct {
		name string
		path any
		want error // nil: reads the in-scope row
	}{
		{"canonical", in, nil},
		{"doubled slashes", "memories//projects///cyberos/notes//x.md", nil},
		{"dot segments", "./memories/./projects/cyberos/./notes/x.md", nil},
		{"absolute", "/" + in, nil},
		{"trailing slash", in + "/", nil},
		{"dotdot staying inside", "memories/projects/cyberos/tmp/../notes/x.md", nil},
		{"out of scope", "memories/people/y.md", enforce.ErrScopeViolation},
		{"seed 5 traversal", "memories/projects/cyberos/../people/y.md", enforce.ErrScopeViolation},
		{"traversal to root", "memories/projects/cyberos/../../../memories/people/y.md", enforce.ErrScopeViolation},
		{"escape above root", "memories/../../etc/passwd", enforce.ErrScopeViolation},
		{"encoded dots", "memories/projects/cyberos/%2e%2e/%2E%2E/people/y.md", enforce.ErrScopeViolation},
		{"encoded slash", "memories/projects/cyberos/..%2f..%2fpeople/y.md", enforce.ErrScopeViolation},
		{"backslashes", `memories/projects/cyberos/..\..\people\y.md`, enforce.ErrScopeViolation},
		{"NUL", "memories/projects/cyberos/notes/x.md\x00/../../../people/y.md", enforce.ErrScopeViolation},
		{"newline", "memories/projects/cyberos/notes/x.md\n", enforce.ErrScopeViolation},
		{"scope dir itself", "memories/projects/cyberos", enforce.ErrScopeViolation},
		{"sibling with scope's prefix", "memories/projects/cyberosity/x.md", enforce.ErrScopeViolation},
		{"glob in path", "memories/projects/cyberos/**", fs.ErrNotExist},
		{"missing row", "memories/projects/cyberos/none.md", fs.ErrNotExist},
		{"empty", "", jsonrpc.ErrInvalidParams},
		{"root only", "/", enforce.ErrScopeViolation},
		{"wrong type", 7, jsonrpc.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := memRun(t, read, e, memArgs("path", tt.path), "")
			memWantErr(t, err, tt.want)
			if tt.want != nil {
				return
			}
			got := res.(*tools.MemoryReadResult)
			if got.Body != "in scope" || got.ContentHash != memSHA("in scope") || got.TraceID != "trace-a" ||
				got.InvocationID != "inv-a" || got.UpdatedAt.IsZero() {
				t.Fatalf("got %+v, want tenant a's in-scope row", got)
			}
		})
	}
	t.Run("missing row is also store.ErrNotFound", func(t *testing.T) {
		_, err := memRun(t, read, e, memArgs("path", "memories/projects/cyberos/none.md"), "")
		memWantErr(t, err, store.ErrNotFound)
	})
	t.Run("unknown argument", func(t *testing.T) {
		_, err := memRun(t, read, e, `{"path":"`+in+`","pth":"x"}`, "")
		memWantErr(t, err, jsonrpc.ErrInvalidParams)
	})
	t.Run("another tenant's row is not found", func(t *testing.T) {
		memPut(t, st, "b", "memories/projects/cyberos/only-b.md", "b")
		_, err := memRun(t, read, e, memArgs("path", "memories/projects/cyberos/only-b.md"), "")
		memWantErr(t, err, fs.ErrNotExist)
	})
	t.Run("no scopes at all", func(t *testing.T) {
		_, err := memRun(t, read, memPolicy(t), memArgs("path", in), "")
		memWantErr(t, err, enforce.ErrScopeViolation)
	})
}

// Invoke reached without Prepare (a wiring bug) still refuses a path that
// is not canonical rather than hand it to the store.
func TestMemoryInvokeUnprepared(t *testing.T) {
	st := memStore(t)
	const bad = "memories/projects/cyberos/../../people/y.md"
	memPut(t, st, "a", bad, "secret")
	e := memPolicy(t, memCyberos)
	tests := []struct {
		tool memTool
		args string
	}{
		{tools.NewMemoryRead(st, "a"), memArgs("path", bad)},
		{tools.NewMemoryEmit(st, "a", "inv"), memArgs("path", bad, "body", "x")},
		{tools.NewMemorySearch(st, "a", e), memArgs("path", bad, "query", "secret")},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Spec().Name, func(t *testing.T) {
			_, err := tt.tool.Invoke(t.Context(), tools.Call{Args: json.RawMessage(tt.args)})
			memWantErr(t, err, enforce.ErrScopeViolation)
		})
	}
}

// Seed criterion 19 at the tool level: the row carries Call.TraceID, the
// invocation, the canonical path and the hash of the body.
func TestMemoryEmit(t *testing.T) {
	st := memStore(t)
	e := memPolicy(t, memCyberos)
	emit := tools.NewMemoryEmit(st, "a", "inv-7")
	const trace = "0af7651916cd43dd8448eb211c80319c"
	big := strings.Repeat("x", tools.MaxMemoryBody)

	tests := []struct {
		name, args string
		stored     string // canonical path the row lands at
		want       error
	}{
		{"canonical", memArgs("path", "memories/projects/cyberos/a.md", "body", "hello"), "memories/projects/cyberos/a.md", nil},
		{"canonicalised", memArgs("path", "/memories//projects/cyberos/./tmp/../b.md", "body", "hi"), "memories/projects/cyberos/b.md", nil},
		{"empty body", memArgs("path", "memories/projects/cyberos/empty.md", "body", ""), "memories/projects/cyberos/empty.md", nil},
		{"body at the cap", memArgs("path", "memories/projects/cyberos/big.md", "body", big), "memories/projects/cyberos/big.md", nil},
		{"body over the cap", memArgs("path", "memories/projects/cyberos/big2.md", "body", big+"x"), "", jsonrpc.ErrInvalidParams},
		{"no body", memArgs("path", "memories/projects/cyberos/c.md"), "", jsonrpc.ErrInvalidParams},
		{"no path", memArgs("body", "x"), "", jsonrpc.ErrInvalidParams},
		{"trace_id argument", memArgs("path", "memories/projects/cyberos/c.md", "body", "x", "trace_id", "forged"), "", jsonrpc.ErrInvalidParams},
		{"out of scope", memArgs("path", "memories/people/y.md", "body", "x"), "", enforce.ErrScopeViolation},
		{"traversal", memArgs("path", "memories/projects/cyberos/../people/y.md", "body", "x"), "", enforce.ErrScopeViolation},
		{"encoded traversal", memArgs("path", "memories/projects/cyberos/%2E%2E/x", "body", "x"), "", enforce.ErrScopeViolation},
		{"NUL", memArgs("path", "memories/projects/cyberos/x\x00", "body", "x"), "", enforce.ErrScopeViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := memRun(t, emit, e, tt.args, trace)
			memWantErr(t, err, tt.want)
			if tt.want != nil {
				return
			}
			row, err := st.MemoryGet(t.Context(), "a", tt.stored)
			if err != nil {
				t.Fatal(err)
			}
			got := res.(*tools.MemoryEmitResult)
			want := tools.MemoryEmitResult{Path: tt.stored, ContentHash: memSHA(row.Body), TraceID: trace}
			if *got != want {
				t.Fatalf("result %+v, want %+v", got, want)
			}
			if row.TraceID != trace || row.InvocationID != "inv-7" || row.ContentHash != want.ContentHash || row.Tenant != "a" {
				t.Fatalf("row %+v, want trace %s, invocation inv-7, hash %s", row, trace, want.ContentHash)
			}
		})
	}
	t.Run("read back", func(t *testing.T) {
		res, err := memRun(t, tools.NewMemoryRead(st, "a"), e, memArgs("path", "memories/projects/cyberos/a.md"), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := res.(*tools.MemoryReadResult); got.Body != "hello" || got.TraceID != trace || got.InvocationID != "inv-7" {
			t.Fatalf("read back %+v", got)
		}
	})
	t.Run("tenant is the invocation's", func(t *testing.T) {
		if _, err := st.MemoryGet(t.Context(), "b", "memories/projects/cyberos/a.md"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tenant b sees tenant a's emit: %v", err)
		}
	})
}

func TestMemorySpecs(t *testing.T) {
	st := memStore(t)
	got := map[string]bool{}
	for _, tool := range tools.MemoryTools(st, "a", "inv", memPolicy(t, memCyberos)) {
		s := tool.Spec()
		if _, ok := tool.(broker.Preparer); !ok || len(s.Capabilities) == 0 || len(s.InputSchema) == 0 {
			t.Errorf("%s: spec %+v, Preparer %v", s.Name, s, ok)
		}
		got[s.Name] = true
	}
	if !got["MemoryRead"] || !got["MemorySearch"] || !got["MemoryEmit"] || len(got) != 3 {
		t.Fatalf("MemoryTools = %v", got)
	}
}

// updated_at goes over the wire as RFC 3339.
func TestMemoryReadResultJSON(t *testing.T) {
	at := time.Date(2026, 5, 16, 12, 0, 0, 5, time.UTC)
	b, err := json.Marshal(&tools.MemoryReadResult{Body: "b", ContentHash: "h", TraceID: "t", InvocationID: "i", UpdatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"body":"b","content_hash":"h","trace_id":"t","invocation_id":"i","updated_at":"2026-05-16T12:00:00.000000005Z"}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func BenchmarkMemoryEmit(b *testing.B) {
	st := memStore(b)
	e := memPolicy(b, memCyberos)
	emit := tools.NewMemoryEmit(st, "a", "inv")
	body := strings.Repeat("a memory worth keeping ", 40)
	i := 0
	for b.Loop() {
		a := memArgs("path", fmt.Sprintf("memories/projects/cyberos/n/%d.md", i%1000), "body", body)
		i++
		if _, err := memRun(b, emit, e, a, "0af7651916cd43dd8448eb211c80319c"); err != nil {
			b.Fatal(err)
		}
	}
}
