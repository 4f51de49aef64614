package tools_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/tools"
)

// memBroker is a broker serving the memory tools of one invocation on a
// real Unix socket, backed by a real store, with a client connected.
type memBroker struct {
	st     *store.Store
	client *jsonrpc.Client
}

const memInvocation = "inv-mem-1"

func memServe(t *testing.T, frontmatter, tenant string) *memBroker {
	t.Helper()
	snap, e := memCompile(t, frontmatter)
	st := memStore(t)
	reg, err := tools.NewRegistry(tools.MemoryTools(st, tenant, memInvocation, e)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: reg, InvocationID: memInvocation, TenantID: tenant})
	if err != nil {
		t.Fatal(err)
	}
	l, err := broker.Listen(filepath.Join(t.TempDir(), "m.sock"), broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	c, err := jsonrpc.Dial(t.Context(), l.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &memBroker{st: st, client: c}
}

// wantDenied checks a denial as the skill gets it across the socket.
func wantDenied(t *testing.T, err error, reason enforce.Reason, tool string) {
	t.Helper()
	d, ok := enforce.AsDenial(err)
	if !ok || d.Reason != reason || d.Tool != tool || d.SkillID != "mem" || !errors.Is(err, reason.Sentinel()) {
		t.Fatalf("err = %v (%+v), want %s denial of %s for skill mem", err, d, reason, tool)
	}
}

// Seed criteria 1, 4 and 5 end to end: a skill allowed only MemoryRead on
// memories/projects/cyberos/**.
func TestMemoryBrokerSeed(t *testing.T) {
	f := memServe(t, "---\nname: mem\ndescription: d\nallowed-tools: MemoryRead\nallowed_memory_scopes: [\"memories/projects/cyberos/**\"]\n---\n", "default")
	for _, p := range []string{"memories/projects/cyberos/notes/x.md", "memories/projects/cyberos/x.md", "memories/people/y.md", "memories/projects/people/y.md"} {
		memPut(t, f.st, "default", p, "body of "+p)
	}
	tests := []struct {
		name, path string
		read       string // the row read on success
		deny       enforce.Reason
	}{
		{"1 allowed tool", "memories/projects/cyberos/notes/x.md", "memories/projects/cyberos/notes/x.md", ""},
		{"4 in scope", "memories/projects/cyberos/x.md", "memories/projects/cyberos/x.md", ""},
		{"4 out of scope", "memories/people/y.md", "", enforce.ReasonScopeViolation},
		{"5 traversal", "memories/projects/cyberos/../people/y.md", "", enforce.ReasonScopeViolation},
		{"5 deeper traversal", "memories/projects/cyberos/../../people/y.md", "", enforce.ReasonScopeViolation},
		{"absolute and doubled", "//memories/projects//cyberos/./x.md", "memories/projects/cyberos/x.md", ""},
		{"encoded", "memories/projects/cyberos/%2e%2e/%2e%2e/people/y.md", "", enforce.ReasonScopeViolation},
		{"backslash", `memories\people\y.md`, "", enforce.ReasonScopeViolation},
		{"NUL", "memories/projects/cyberos/x.md\x00../../people/y.md", "", enforce.ReasonScopeViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got tools.MemoryReadResult
			err := f.client.CallTool(t.Context(), "MemoryRead", map[string]string{"path": tt.path}, "", &got)
			if tt.deny != "" {
				wantDenied(t, err, tt.deny, "MemoryRead")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body := "body of " + tt.read
			if got.Body != body || got.ContentHash != memSHA(body) {
				t.Fatalf("got %+v, want the row at %s", got, tt.read)
			}
		})
	}
	t.Run("missing row is not_found", func(t *testing.T) {
		err := f.client.CallTool(t.Context(), "MemoryRead", map[string]string{"path": "memories/projects/cyberos/none.md"}, "", nil)
		te, ok := broker.AsToolError(err)
		// The client's jsonrpc table does not know tool errors yet:
		// AsToolError is the way back to one.
		if !ok || te.Reason != broker.ReasonNotFound || te.Tool != "MemoryRead" || !errors.Is(te, fs.ErrNotExist) {
			t.Fatalf("err = %v, want a not_found tool error", err)
		}
	})
	t.Run("2 other memory tools not allowed", func(t *testing.T) {
		for _, tool := range []string{"MemoryEmit", "MemorySearch"} {
			err := f.client.CallTool(t.Context(), tool, map[string]string{"path": "memories/projects/cyberos/x.md", "body": "x", "query": "x"}, "", nil)
			wantDenied(t, err, enforce.ReasonToolNotAllowed, tool)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		err := f.client.CallTool(t.Context(), "MemoryRead", map[string]any{"path": "memories/projects/cyberos/x.md", "offset": 1}, "", nil)
		if !errors.Is(err, jsonrpc.ErrInvalidParams) {
			t.Fatalf("err = %v, want invalid params", err)
		}
	})
}

// Seed criterion 19 end to end: the row MemoryEmit writes carries the
// trace id of the traceparent the call sent, and the invocation.
func TestMemoryBrokerEmitTrace(t *testing.T) {
	f := memServe(t, memSkillMD(memCyberos), "acme")
	const (
		traceID     = "0af7651916cd43dd8448eb211c80319c"
		traceparent = "00-" + traceID + "-b7ad6b7169203331-01"
	)
	tests := []struct {
		name, traceparent string
		want              string // "": any valid trace id the broker chose
	}{
		{"continues the skill's trace", traceparent, traceID},
		{"no traceparent", "", ""},
		{"invalid traceparent", "00-xyz", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "memories/projects/cyberos/emit/" + string(rune('a'+i)) + ".md"
			var got tools.MemoryEmitResult
			if err := f.client.CallTool(t.Context(), "MemoryEmit", map[string]string{"path": "/" + path, "body": tt.name}, tt.traceparent, &got); err != nil {
				t.Fatal(err)
			}
			row, err := f.st.MemoryGet(t.Context(), "acme", path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && row.TraceID != tt.want {
				t.Fatalf("row trace_id = %q, want %q", row.TraceID, tt.want)
			}
			if !broker.ValidTraceID(row.TraceID) || row.TraceID == traceID && tt.want == "" {
				t.Fatalf("row trace_id = %q, want a trace of the broker's", row.TraceID)
			}
			want := tools.MemoryEmitResult{Path: path, ContentHash: memSHA(tt.name), TraceID: row.TraceID}
			if got != want || row.InvocationID != memInvocation || row.Body != tt.name {
				t.Fatalf("result %+v, row %+v; want %+v from invocation %s", got, row, want, memInvocation)
			}
			var read tools.MemoryReadResult
			if err := f.client.CallTool(t.Context(), "MemoryRead", map[string]string{"path": path}, "", &read); err != nil {
				t.Fatal(err)
			}
			if read.TraceID != row.TraceID || read.InvocationID != memInvocation {
				t.Fatalf("read back %+v", read)
			}
		})
	}
	t.Run("out of scope", func(t *testing.T) {
		err := f.client.CallTool(t.Context(), "MemoryEmit", map[string]string{"path": "memories/projects/cyberos/../people/y.md", "body": "x"}, traceparent, nil)
		wantDenied(t, err, enforce.ReasonScopeViolation, "MemoryEmit")
		if _, err := f.st.MemoryGet(t.Context(), "acme", "memories/projects/people/y.md"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("denied emit wrote a row: %v", err)
		}
	})
}

// MemorySearch end to end: only the tenant's in-scope rows come back.
func TestMemoryBrokerSearch(t *testing.T) {
	f := memServe(t, memSkillMD(memCyberos), "a")
	in := memLeakFixture(t, f.st)
	tests := []struct {
		name string
		args map[string]any
		want []string
		deny enforce.Reason
	}{
		{"no prefix", map[string]any{"query": "zebra"}, in, ""},
		{"broad prefix", map[string]any{"query": "zebra", "path": "memories"}, in, ""},
		{"only out of scope", map[string]any{"query": "okapi"}, nil, ""},
		{"prefix outside", map[string]any{"query": "zebra", "path": "memories/people"}, nil, enforce.ReasonScopeViolation},
		{"traversal prefix", map[string]any{"query": "zebra", "path": "memories/projects/cyberos/../../people"}, nil, enforce.ReasonScopeViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got tools.MemorySearchResult
			err := f.client.CallTool(t.Context(), "MemorySearch", tt.args, "", &got)
			if tt.deny != "" {
				wantDenied(t, err, tt.deny, "MemorySearch")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Results == nil {
				t.Fatal("results is null, want an array")
			}
			paths := memHitPaths(t, &got)
			if !slices.Equal(paths, tt.want) {
				t.Fatalf("paths = %q, want %q", paths, tt.want)
			}
		})
	}
}
