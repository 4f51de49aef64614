package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

func dialClient(t *testing.T, path string) *jsonrpc.Client {
	t.Helper()
	c, err := jsonrpc.Dial(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientCall(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	tests := []struct {
		name   string
		method string
		params any
		want   string
	}{
		{name: "object params", method: "echo", params: map[string]int{"a": 1}, want: `{"a":1}`},
		{name: "array params", method: "echo", params: []string{"x"}, want: `["x"]`},
		{name: "no params", method: "echo", params: nil, want: `null`},
		{name: "nil map is no params", method: "echo", params: map[string]int(nil), want: `null`},
		{name: "raw params", method: "echo", params: json.RawMessage(`{"k":[true]}`), want: `{"k":[true]}`},
		{name: "struct result", method: "args", params: map[string]int{"n": 3}, want: `{"n":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got json.RawMessage
			if err := c.Call(t.Context(), tt.method, tt.params, &got); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("result = %s, want %s", got, tt.want)
			}
		})
	}
	if err := c.Call(t.Context(), "echo", []int{1}, nil); err != nil {
		t.Errorf("Call with a nil result: %v", err)
	}
}

func TestClientCallTool(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tests := []struct {
		name        string
		args        any
		traceparent string
		want        string
	}{
		{name: "with traceparent", args: map[string]string{"path": "memories/a.md"}, traceparent: tp, want: `{"tool":"MemoryRead","args":{"path":"memories/a.md"},"traceparent":"` + tp + `"}`},
		{name: "without traceparent", args: map[string]string{"path": "memories/a.md"}, want: `{"tool":"MemoryRead","args":{"path":"memories/a.md"}}`},
		{name: "nil args", want: `{"tool":"MemoryRead","args":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got json.RawMessage // the handler echoes the params it got
			if err := c.CallTool(t.Context(), "MemoryRead", tt.args, tt.traceparent, &got); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("params = %s, want %s", got, tt.want)
			}
			var p jsonrpc.ToolCallParams
			if err := jsonrpc.DecodeParams(got, &p); err != nil || p.Tool != "MemoryRead" || p.Traceparent != tt.traceparent {
				t.Errorf("DecodeParams into ToolCallParams = %+v, %v", p, err)
			}
		})
	}
}

// Error responses come back as Go errors matched with errors.Is and As,
// across a real socket.
func TestClientErrors(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	type test struct {
		name    string
		method  string
		params  any
		want    error
		code    int
		message string
	}
	tests := []test{
		{name: "method not found", method: "tool.frob", want: jsonrpc.ErrMethodNotFound, code: jsonrpc.MethodNotFound, message: "method_not_found"},
		{name: "invalid params", method: "args", params: map[string]string{"n": "x"}, want: jsonrpc.ErrInvalidParams, code: jsonrpc.InvalidParams, message: "invalid_params"},
		{name: "internal", method: "fail", want: jsonrpc.ErrInternal, code: jsonrpc.InternalError, message: "internal_error"},
	}
	for _, r := range enforce.Reasons() {
		tests = append(tests, test{
			name: string(r), method: "deny", params: map[string]enforce.Reason{"reason": r},
			want: r.Sentinel(), code: jsonrpc.InternalError, message: r.Class(),
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Call(t.Context(), tt.method, tt.params, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Call error = %v, want %v", err, tt.want)
			}
			var re *jsonrpc.RemoteError
			if !errors.As(err, &re) || re.Code != tt.code || re.Message != tt.message {
				t.Errorf("RemoteError = %+v, want code %d message %q", re, tt.code, tt.message)
			}
		})
	}

	var pe *jsonrpc.ParamsError
	if err := c.Call(t.Context(), "args", map[string]bool{"n": true}, nil); !errors.As(err, &pe) || pe.Field != "n" {
		t.Errorf("bad params: %v, want a ParamsError on field n", err)
	}
}

// A request over the cap is refused as the server would refuse it, and the
// client stays usable.
func TestClientRequestTooLarge(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	err := c.Call(t.Context(), "echo", []string{strings.Repeat("a", 2_000_000)}, nil)
	if !errors.Is(err, enforce.ErrRequestTooLarge) || !errors.Is(err, jsonrpc.ErrFrameTooLarge) {
		t.Fatalf("Call error = %v, want request_too_large", err)
	}
	err = c.Notify(t.Context(), "notify", []string{strings.Repeat("a", 2_000_000)})
	if !errors.Is(err, enforce.ErrRequestTooLarge) {
		t.Fatalf("Notify error = %v, want request_too_large", err)
	}
	var got []int
	if err := c.Call(t.Context(), "echo", []int{1}, &got); err != nil || len(got) != 1 {
		t.Fatalf("call after the refusal = %v, %v", got, err)
	}
}

func TestClientParamsMustBeStructured(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	if err := c.Call(t.Context(), "echo", 5, nil); !errors.Is(err, jsonrpc.ErrInvalidParams) {
		t.Errorf("Call with a number as params = %v, want ErrInvalidParams", err)
	}
}

// Notifications are handled, in order, before the call that follows them.
func TestClientNotify(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	for range 3 {
		if err := c.Notify(t.Context(), "notify", nil); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := c.Call(t.Context(), "notified", nil, &n); err != nil || n != 3 {
		t.Fatalf("notified = %d, %v; want 3", n, err)
	}
}

// A deadline interrupts a call; the stream is then at an unknown point, so
// the client refuses further calls.
func TestClientDeadline(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Call(ctx, "wait", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call error = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Call took %v after a 50ms deadline", d)
	}
	if err := c.Call(t.Context(), "echo", nil, nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Call after the interrupted one = %v, want ErrClosed", err)
	}
}

// A caller waiting for its turn gives up at its own deadline without
// disturbing the call in flight, which a cancel then interrupts.
func TestClientCancel(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	first, cancelFirst := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() { firstErr <- c.Call(first, "wait", nil, nil) }()
	time.Sleep(20 * time.Millisecond) // let it take the turn

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "echo", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting Call = %v, want context.DeadlineExceeded", err)
	}
	select {
	case err := <-firstErr:
		t.Fatalf("the call in flight ended early: %v", err)
	default:
	}
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Call = %v, want context.Canceled", err)
	}
}

func TestClientClose(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	inFlight := make(chan error, 1)
	go func() { inFlight <- c.Call(t.Context(), "wait", nil, nil) }()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-inFlight; !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("call interrupted by Close = %v, want ErrClosed", err)
	}
	if err := c.Call(t.Context(), "echo", nil, nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// One client shared by several goroutines: each gets its own reply.
func TestClientConcurrentUse(t *testing.T) {
	c := dialClient(t, startServer(t, &jsonrpc.Server{Handler: &testHandler{}}))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				want := fmt.Sprintf("g%d-%d", i, j)
				var got []string
				if err := c.Call(t.Context(), "echo", []string{want}, &got); err != nil {
					t.Error(err)
					return
				}
				if len(got) != 1 || got[0] != want {
					t.Errorf("echo %q = %q", want, got)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkRoundTrip(b *testing.B) {
	srv := &jsonrpc.Server{Handler: jsonrpc.HandlerFunc(func(context.Context, string, json.RawMessage) (any, error) {
		return nil, nil
	})}
	// startServer wants a *testing.T; the benchmark sets up by hand.
	path := filepath.Join(b.TempDir(), "b.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	c, err := jsonrpc.Dial(b.Context(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Call(b.Context(), "noop", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
