package broker_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/tools"
)

func TestToolList(t *testing.T) {
	f := start(t)
	var got broker.ToolList
	if err := f.client.Call(t.Context(), jsonrpc.MethodToolList, nil, &got); err != nil {
		t.Fatal(err)
	}
	// Write is allowed but not served, Task is another host's, Bash is
	// disallowed, Grep was never allowed: only what can really run.
	read := tools.Read{}.Spec()
	want := []broker.ToolInfo{
		{Name: "Read", Description: read.Description, InputSchema: read.InputSchema},
		{Name: "Boom", Description: "panics", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	if len(got.Tools) != len(want) {
		t.Fatalf("tools = %+v, want %+v", got.Tools, want)
	}
	for i := range want {
		g, w := got.Tools[i], want[i]
		if g.Name != w.Name || g.Description != w.Description || !jsonEqual(t, g.InputSchema, w.InputSchema) {
			t.Errorf("tool %d = %+v, want %+v", i, g, w)
		}
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	ca, err1 := broker.CanonicalJSON(a)
	cb, err2 := broker.CanonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func TestToolCallRead(t *testing.T) {
	f := start(t)
	body := "line one\nline two\n"
	p := f.write(t, "notes.txt", body)
	var got tools.ReadResult
	if err := f.client.CallTool(t.Context(), "Read", map[string]string{"path": p}, "", &got); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	want := tools.ReadResult{Body: body, ContentHash: hex.EncodeToString(sum[:]), Size: int64(len(body))}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestReadTruncatedInResult reads 8 MiB of text that JSON escaping blows
// up past the 16 MiB response cap: the body is cut inside the result,
// which still parses and still carries the whole file's hash.
func TestReadTruncatedInResult(t *testing.T) {
	f := start(t)
	body := strings.Repeat("<", tools.DefaultReadMax)
	p := f.write(t, "big.html", body)
	var got tools.ReadResult
	if err := f.client.CallTool(t.Context(), "Read", map[string]string{"path": p}, "", &got); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if !got.Truncated || len(got.Body) == 0 || len(got.Body) >= len(body) || !strings.HasPrefix(body, got.Body) ||
		got.ContentHash != hex.EncodeToString(sum[:]) || got.Size != int64(len(body)) {
		t.Fatalf("got %d body bytes, truncated %v, size %d; want a truncated prefix with the whole file's hash", len(got.Body), got.Truncated, got.Size)
	}
}

// TestToolCallErrors checks what the client gets for every way a call is
// refused, on the client's side of the socket.
func TestToolCallErrors(t *testing.T) {
	f := start(t)
	f.write(t, "ok", "ok")
	if err := os.Symlink("/etc/passwd", filepath.Join(f.dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	read := func(path string) json.RawMessage { return mustJSON(t, map[string]string{"path": path}) }
	tests := []struct {
		name   string
		params any // tool.call params
		want   error
	}{
		{"file outside the grant", tc("Read", read("/etc/passwd")), enforce.ErrFileViolation},
		{"symlink out of the grant", tc("Read", read(f.dir+"/passwd")), enforce.ErrFileViolation},
		{"relative path", tc("Read", read("ok")), enforce.ErrFileViolation},
		{"tool not allowed", tc("Grep", nil), enforce.ErrToolNotAllowed},
		{"tool disallowed", tc("Bash", nil), enforce.ErrToolDisallowed},
		{"allowed but not served", tc("Write", nil), enforce.ErrUnknownTool},
		{"another host's tool", tc("Task", nil), enforce.ErrUnknownTool},
		{"no tool", map[string]any{"args": map[string]any{}}, jsonrpc.ErrInvalidParams},
		{"unknown member", map[string]any{"tool": "Read", "arg": map[string]any{}}, jsonrpc.ErrInvalidParams},
		{"params an array", []any{"Read"}, jsonrpc.ErrInvalidParams},
		{"bad Read args", tc("Read", json.RawMessage(`{"path":1}`)), jsonrpc.ErrInvalidParams},
		{"Read misspelt arg", tc("Read", json.RawMessage(`{"path":"`+f.dir+`/ok","ofset":1}`)), jsonrpc.ErrInvalidParams},
		{"Read no args", tc("Read", nil), jsonrpc.ErrInvalidParams},
		{"tool panics", tc("Boom", nil), jsonrpc.ErrInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.client.Call(t.Context(), jsonrpc.MethodToolCall, tt.params, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d, ok := enforce.AsDenial(err); ok && d.SkillID != "t" {
				t.Errorf("denial skill_id = %q, want t", d.SkillID)
			}
		})
	}
	// Each failure was answered and the connection still serves.
	if err := f.client.CallTool(t.Context(), "Read", map[string]string{"path": f.dir + "/ok"}, "", nil); err != nil {
		t.Fatalf("call after the failures: %v", err)
	}
	st := f.broker.Stats()
	if st.Calls != int64(len(tests))+1 || st.Denied != 7 || st.Errors != 7 {
		t.Fatalf("stats = %+v, want %d calls, 7 denied, 7 errors", st, len(tests)+1)
	}
}

func tc(tool string, args any) map[string]any {
	m := map[string]any{"tool": tool}
	if args != nil {
		m["args"] = args
	}
	return m
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestToolError checks failures the skill is told about in words of its
// own (not found), rather than as internal_error.
func TestToolError(t *testing.T) {
	f := start(t)
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		reason string
		is     error
	}{
		{f.dir + "/missing", broker.ReasonNotFound, fs.ErrNotExist},
		{f.dir + "/sub", broker.ReasonNotRegular, tools.ErrNotRegular},
	}
	for _, tt := range tests {
		err := f.client.CallTool(t.Context(), "Read", map[string]string{"path": tt.path}, "", nil)
		te, ok := broker.AsToolError(err)
		if !ok || te.Reason != tt.reason || te.Tool != "Read" || te.SkillID != "t" || !errors.Is(te, tt.is) {
			t.Errorf("%s: err = %v, want tool_error %s", tt.path, err, tt.reason)
		}
	}
}

func TestOtherMethods(t *testing.T) {
	f := start(t)
	tests := []struct {
		method string
		params any
		want   error
	}{
		{jsonrpc.MethodToolList, map[string]any{}, nil},
		{jsonrpc.MethodToolList, map[string]any{"filter": "x"}, jsonrpc.ErrInvalidParams},
		{jsonrpc.MethodBrokerStatus, nil, nil},
		{jsonrpc.MethodBrokerStatus, []int{1}, jsonrpc.ErrInvalidParams},
		{"tool.delete", nil, jsonrpc.ErrMethodNotFound},
	}
	for _, tt := range tests {
		if err := f.client.Call(t.Context(), tt.method, tt.params, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s %v: err = %v, want %v", tt.method, tt.params, err, tt.want)
		}
	}
}

func TestBrokerStatus(t *testing.T) {
	f := start(t)
	p := f.write(t, "a", "a")
	_ = f.client.CallTool(t.Context(), "Read", map[string]string{"path": p}, "", nil)
	_ = f.client.CallTool(t.Context(), "Bash", nil, "", nil)
	var got broker.Status
	if err := f.client.Call(t.Context(), jsonrpc.MethodBrokerStatus, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.InvocationID != "inv-1" || got.SkillID != "t" || got.ToolCalls != 2 || got.Denied != 1 || got.UptimeMS < 0 {
		t.Fatalf("status = %+v", got)
	}
}

// TestRequestTooLarge sends a 2 MB frame by hand (the client refuses to)
// and checks the answer and that the connection goes on.
func TestRequestTooLarge(t *testing.T) {
	f := start(t)
	p := f.write(t, "a", "abc")
	conn, err := net.Dial("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w, r := jsonrpc.NewWriter(conn, 4<<20), jsonrpc.NewReader(conn, 0)
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{"tool":"Read","args":{"path":%q}}}`, strings.Repeat("x", 2<<20))
	if err := w.WriteFrame([]byte(big)); err != nil {
		t.Fatal(err)
	}
	if err := readReply(r); !errors.Is(err, enforce.ErrRequestTooLarge) {
		t.Fatalf("err = %v, want request_too_large", err)
	}
	c := jsonrpc.NewClient(conn)
	var got tools.ReadResult
	if err := c.CallTool(t.Context(), "Read", map[string]string{"path": p}, "", &got); err != nil || got.Body != "abc" {
		t.Fatalf("next call: %+v, %v", got, err)
	}
}

func readReply(r *jsonrpc.Reader) error {
	frame, err := r.ReadFrame()
	if err != nil {
		return err
	}
	var resp jsonrpc.Response
	if err := json.Unmarshal(frame, &resp); err != nil {
		return err
	}
	return resp.Error.Err()
}

func TestConcurrentConnections(t *testing.T) {
	f := start(t)
	const clients, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		body := fmt.Sprintf("file %d", i)
		p := f.write(t, fmt.Sprint(i), body)
		c := dial(t, f.sock)
		wg.Go(func() {
			for range calls {
				var got tools.ReadResult
				if err := c.CallTool(t.Context(), "Read", map[string]string{"path": p}, "", &got); err != nil || got.Body != body {
					errs <- fmt.Errorf("read %s: %q, %v", p, got.Body, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := f.broker.Stats()
	if st.Connections != clients+1 || st.Calls != clients*calls || st.FirstConnect.IsZero() {
		t.Fatalf("stats = %+v, want %d connections, %d calls", st, clients+1, clients*calls)
	}
	select {
	case <-f.broker.Connected():
	default:
		t.Fatal("Connected not closed after connections")
	}
}

func TestConnectedBeforeAnyClient(t *testing.T) {
	snap, e := compile(t, frontmatter(realTempDir(t)))
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, tools.Read{}), InvocationID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, l)
	select {
	case <-b.Connected():
		t.Fatal("Connected closed before any client")
	case <-time.After(20 * time.Millisecond):
	}
	dial(t, sock)
	select {
	case <-b.Connected():
	case <-time.After(5 * time.Second):
		t.Fatal("Connected not closed after a client connected")
	}
}

// TestServeStops checks that cancelling Serve ends it, drops clients and
// removes the socket — unless the file at the path is no longer ours.
func TestServeStops(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("replaced=%v", replaced), func(t *testing.T) {
			f := start(t)
			sibling := filepath.Join(filepath.Dir(f.sock), "sibling")
			if err := os.WriteFile(sibling, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			if replaced {
				replaceWithFile(t, f.sock)
			}
			if err := f.stop(); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := f.client.Call(t.Context(), jsonrpc.MethodToolList, nil, nil); err == nil {
					t.Fatal("call after Serve stopped succeeded")
				}
			}
			if err := f.client.Call(t.Context(), jsonrpc.MethodToolList, nil, nil); !errors.Is(err, jsonrpc.ErrClosed) {
				t.Fatalf("err = %v, want ErrClosed", err)
			}
			_, err := os.Lstat(f.sock)
			if replaced {
				assertFile(t, f.sock, "someone else's")
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("socket left behind: %v", err)
			}
			assertFile(t, sibling, "keep")
			entries, _ := os.ReadDir(filepath.Dir(f.sock))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".skillrun-sock-") {
					t.Errorf("private dir %s left behind", e.Name())
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	snap, e := compile(t, frontmatter(realTempDir(t)))
	_, other := compile(t, "---\nname: other\ndescription: d\n---\n")
	good := broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, tools.Read{}), InvocationID: "abc"}
	tests := []struct {
		name string
		edit func(*broker.Config)
		want error
	}{
		{"good", func(*broker.Config) {}, nil},
		{"no snapshot", func(c *broker.Config) { c.Snapshot = nil }, broker.ErrConfig},
		{"no enforcer", func(c *broker.Config) { c.Enforcer = nil }, broker.ErrConfig},
		{"no registry", func(c *broker.Config) { c.Registry = nil }, broker.ErrConfig},
		{"another skill's enforcer", func(c *broker.Config) { c.Enforcer = other }, broker.ErrConfig},
		{"bad invocation id", func(c *broker.Config) { c.InvocationID = "../x" }, broker.ErrInvalidInvocationID},
		{"scoped tool without Prepare", func(c *broker.Config) { c.Registry = registry(t, tools.Read{}, unchecked{}) }, broker.ErrUncheckedTool},
		{"own trace id", func(c *broker.Config) { c.TraceID = "0af7651916cd43dd8448eb211c80319c" }, nil},
		{"uppercase trace id", func(c *broker.Config) { c.TraceID = "0AF7651916CD43DD8448EB211C80319C" }, broker.ErrConfig},
		{"zero trace id", func(c *broker.Config) { c.TraceID = strings.Repeat("0", 32) }, broker.ErrConfig},
		{"short trace id", func(c *broker.Config) { c.TraceID = "0af7651916cd43dd" }, broker.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			if _, err := broker.New(cfg); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestAudit checks the rows of each kind of call, and that no row holds
// the arguments themselves.
func TestAudit(t *testing.T) {
	f := start(t)
	p := f.write(t, "secret-name.txt", "x")
	okArgs := mustJSON(t, map[string]string{"path": p})
	badArgs := json.RawMessage(`{ "path" : "/etc/secret-name.txt" }`)
	_ = f.client.CallTool(t.Context(), "Read", okArgs, "", nil)
	_ = f.client.CallTool(t.Context(), "Read", badArgs, "", nil)
	_ = f.client.CallTool(t.Context(), "Grep", map[string]string{"pattern": "secret-name"}, "", nil)
	_ = f.client.CallTool(t.Context(), "Boom", nil, "", nil)

	canon, _ := broker.CanonicalJSON(badArgs)
	sum := sha256.Sum256(canon)
	want := []struct{ kind, tool, field, value string }{
		{broker.KindToolCallStarted, "Read", "args_hash", broker.ArgsHash(okArgs)},
		{broker.KindToolCallCompleted, "Read", "outcome", broker.OutcomeSuccess},
		{broker.KindToolDenied, "Read", "reason", string(enforce.ReasonFileViolation)},
		{broker.KindToolDenied, "Grep", "reason", string(enforce.ReasonToolNotAllowed)},
		{broker.KindToolCallStarted, "Boom", "args_hash", broker.ArgsHash(json.RawMessage(`{}`))},
		{broker.KindToolCallCompleted, "Boom", "outcome", broker.OutcomeError},
	}
	rows := f.audit.take()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.kind != w.kind || r.payload["tool_name"] != w.tool || r.payload[w.field] != w.value ||
			r.payload["invocation_id"] != "inv-1" || r.payload["skill_id"] != "t" || r.payload["tenant_id"] != "default" {
			t.Errorf("row %d = %s %v, want %s tool=%s %s=%s", i, r.kind, r.payload, w.kind, w.tool, w.field, w.value)
		}
		if dump := fmt.Sprint(r.payload); strings.Contains(dump, "secret-name") {
			t.Errorf("row %d holds raw arguments: %s", i, dump)
		}
	}
	if got := rows[2].payload["attempted_args_hash"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("attempted_args_hash = %v, want SHA-256 of %s", got, canon)
	}
	if !slices.ContainsFunc(rows, func(r row) bool { return r.payload["duration_ms"] != nil }) {
		t.Error("no completed row has duration_ms")
	}
}

func replaceWithFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func assertFile(t *testing.T, path, body string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != body {
		t.Fatalf("%s = %q, %v; want %q untouched", path, got, err, body)
	}
}
