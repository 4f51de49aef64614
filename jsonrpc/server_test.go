package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// reply is what a test expects of one response: result set means success;
// otherwise code (and data when not "") describe the error.
type reply struct {
	id      string
	result  string
	code    int
	message string
	data    string
}

func checkReply(t *testing.T, got jsonrpc.Response, want reply) {
	t.Helper()
	if got.JSONRPC != "2.0" || string(got.ID) != want.id {
		t.Errorf("jsonrpc, id = %q, %s; want \"2.0\", %s", got.JSONRPC, got.ID, want.id)
	}
	if want.result != "" {
		if got.Error != nil || !jsonEqual(t, got.Result, want.result) {
			t.Errorf("reply = result %s, error %+v; want result %s", got.Result, got.Error, want.result)
		}
		return
	}
	switch {
	case got.Error == nil || got.Result != nil:
		t.Errorf("reply = result %s, error %+v; want error %d", got.Result, got.Error, want.code)
	case got.Error.Code != want.code:
		t.Errorf("error code = %d (%s), want %d", got.Error.Code, got.Error.Message, want.code)
	case want.message != "" && got.Error.Message != want.message:
		t.Errorf("error message = %q, want %q", got.Error.Message, want.message)
	case want.data != "" && !jsonEqual(t, got.Error.Data, want.data):
		t.Errorf("error data = %s, want %s", got.Error.Data, want.data)
	}
}

func TestServeSingleMessages(t *testing.T) {
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}})
	tests := []struct {
		name string
		in   string
		want *reply // nil: no reply at all
	}{
		{name: "call", in: `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2]}}`, want: &reply{id: `1`, result: `{"a":[1,2]}`}},
		{name: "string id echoed", in: `{"jsonrpc":"2.0","id":"call-123","method":"echo","params":[]}`, want: &reply{id: `"call-123"`, result: `[]`}},
		{name: "null id gets a reply", in: `{"jsonrpc":"2.0","id":null,"method":"echo","params":[1]}`, want: &reply{id: `null`, result: `[1]`}},
		{name: "absent id gets none", in: `{"jsonrpc":"2.0","method":"echo","params":[1]}`},
		{name: "failing notification gets none", in: `{"jsonrpc":"2.0","method":"fail"}`},
		{name: "no params: null result", in: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, want: &reply{id: `2`, result: `null`}},
		{name: "invalid JSON", in: `{"jsonrpc":"2.0","id":1,"method"`, want: &reply{id: `null`, code: jsonrpc.ParseError, message: "parse_error"}},
		{name: "empty body", in: ``, want: &reply{id: `null`, code: jsonrpc.ParseError}},
		{name: "a bare number", in: `42`, want: &reply{id: `null`, code: jsonrpc.InvalidRequest, message: "invalid_request"}},
		{name: "no method keeps the id", in: `{"jsonrpc":"2.0","id":7}`, want: &reply{id: `7`, code: jsonrpc.InvalidRequest, data: `{"detail":"method is required"}`}},
		{name: "wrong version", in: `{"jsonrpc":"1.0","id":7,"method":"echo"}`, want: &reply{id: `7`, code: jsonrpc.InvalidRequest}},
		{name: "object id becomes null", in: `{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}`, want: &reply{id: `null`, code: jsonrpc.InvalidRequest}},
		{name: "scalar params", in: `{"jsonrpc":"2.0","id":3,"method":"echo","params":"x"}`, want: &reply{id: `3`, code: jsonrpc.InvalidRequest}},
		{name: "invalid request without id still answered", in: `{"jsonrpc":"2.0","method":1}`, want: &reply{id: `null`, code: jsonrpc.InvalidRequest}},
		{name: "unknown method", in: `{"jsonrpc":"2.0","id":4,"method":"tool.frob"}`, want: &reply{id: `4`, code: jsonrpc.MethodNotFound, message: "method_not_found"}},
		{
			name: "bad params", in: `{"jsonrpc":"2.0","id":5,"method":"args","params":{"n":"x"}}`,
			want: &reply{id: `5`, code: jsonrpc.InvalidParams, message: "invalid_params", data: `{"field":"n","detail":"wrong type, want number"}`},
		},
		{
			name: "denial", in: `{"jsonrpc":"2.0","id":6,"method":"deny","params":{"reason":"tool_not_in_allowed_tools"}}`,
			want: &reply{id: `6`, code: jsonrpc.InternalError, message: "tool_not_allowed", data: `{"reason":"tool_not_in_allowed_tools","tool":"Bash","skill_id":"memory-capture"}`},
		},
		{
			name: "other errors leak nothing", in: `{"jsonrpc":"2.0","id":8,"method":"fail"}`,
			want: &reply{id: `8`, code: jsonrpc.InternalError, message: "internal_error", data: `{"reason":"internal"}`},
		},
		{
			name: "handler panic", in: `{"jsonrpc":"2.0","id":9,"method":"panic"}`,
			want: &reply{id: `9`, code: jsonrpc.InternalError, message: "internal_error", data: `{"reason":"internal"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, path)
			c.send([]byte(tt.in))
			if tt.want != nil {
				var resp jsonrpc.Response
				if err := json.Unmarshal(c.recv(), &resp); err != nil {
					t.Fatal(err)
				}
				checkReply(t, resp, *tt.want)
			}
			c.probe()
		})
	}
}

func TestServeBatches(t *testing.T) {
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}})
	tests := []struct {
		name   string
		in     string
		single *reply  // the reply is one object, not an array
		want   []reply // nil with single nil: no reply at all
	}{
		{name: "empty batch", in: `[]`, single: &reply{id: `null`, code: jsonrpc.InvalidRequest, data: `{"detail":"empty batch"}`}},
		{name: "invalid items", in: `[1,2]`, want: []reply{{id: `null`, code: jsonrpc.InvalidRequest}, {id: `null`, code: jsonrpc.InvalidRequest}}},
		{name: "nested batch is an invalid item", in: ` [ [] ] `, want: []reply{{id: `null`, code: jsonrpc.InvalidRequest}}},
		{name: "all notifications", in: `[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"notify"}]`},
		{
			name: "mixed, in order",
			in: `[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},` +
				`{"jsonrpc":"2.0","method":"echo","params":[2]},` +
				`{"jsonrpc":"2.0","id":"b","method":"nope"},` +
				`5,` +
				`{"jsonrpc":"2.0","id":null,"method":"deny","params":{"reason":"scope_violation"}}]`,
			want: []reply{
				{id: `1`, result: `[1]`},
				{id: `"b"`, code: jsonrpc.MethodNotFound},
				{id: `null`, code: jsonrpc.InvalidRequest},
				{id: `null`, code: jsonrpc.InternalError, message: "scope_violation", data: `{"reason":"scope_violation","tool":"Bash","skill_id":"memory-capture"}`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, path)
			c.send([]byte(tt.in))
			switch {
			case tt.single != nil:
				var resp jsonrpc.Response
				if err := json.Unmarshal(c.recv(), &resp); err != nil {
					t.Fatalf("reply is not one response object: %v", err)
				}
				checkReply(t, resp, *tt.single)
			case tt.want != nil:
				var resps []jsonrpc.Response
				if err := json.Unmarshal(c.recv(), &resps); err != nil {
					t.Fatalf("reply is not an array of responses: %v", err)
				}
				if len(resps) != len(tt.want) {
					t.Fatalf("%d replies, want %d", len(resps), len(tt.want))
				}
				for i := range resps {
					checkReply(t, resps[i], tt.want[i])
				}
			}
			c.probe()
		})
	}
}

// A 2 MB request gets request_too_large with id null, and the next request
// on the same connection is served (acceptance criterion 16).
func TestServeRequestTooLargeKeepsConnection(t *testing.T) {
	var logs syncBuffer
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}, SkillID: "report", Logger: newLogger(&logs)})
	c := dialRaw(t, path)

	pad := strings.Repeat("a", 2_000_000)
	c.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"` + pad + `"}}`))
	var resp jsonrpc.Response
	if err := json.Unmarshal(c.recv(), &resp); err != nil {
		t.Fatal(err)
	}
	checkReply(t, resp, reply{id: `null`, code: jsonrpc.InternalError, message: "request_too_large"})
	var data map[string]string
	if err := json.Unmarshal(resp.Error.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["reason"] != "request_too_large" || data["skill_id"] != "report" {
		t.Errorf("data = %v, want reason request_too_large and skill_id report", data)
	}
	if err := resp.Error.Err(); !errors.Is(err, enforce.ErrRequestTooLarge) {
		t.Errorf("Err() = %v, want one matching enforce.ErrRequestTooLarge", err)
	}

	c.probe()
	if n := len(logs.records(t, slog.LevelWarn)); n != 1 {
		t.Errorf("%d WARN records, want 1", n)
	}
}

// A result over MaxResponse is shrunk inside the result, never cut, and the
// shrinking is logged at WARN.
func TestServeTruncatesLargeResults(t *testing.T) {
	var logs syncBuffer
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}, Logger: newLogger(&logs)})
	client, err := jsonrpc.Dial(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	t.Run("not truncatable", func(t *testing.T) {
		var got struct {
			Truncated bool   `json:"truncated"`
			Error     string `json:"error"`
			Size      int    `json:"size"`
		}
		if err := client.Call(t.Context(), "big", nil, &got); err != nil {
			t.Fatal(err)
		}
		want := overCap + 2 // the marshalled string's quotes
		if !got.Truncated || got.Error != "response_too_large" || got.Size != want {
			t.Errorf("result = %+v, want truncated placeholder of size %d", got, want)
		}
	})
	t.Run("truncatable", func(t *testing.T) {
		var got truncatedList
		if err := client.Call(t.Context(), "bigList", nil, &got); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		if !got.Truncated || len(got.Items) == 0 || len(b) > jsonrpc.DefaultMaxResponse || len(b) < jsonrpc.DefaultMaxResponse-2000 {
			t.Errorf("result: truncated %v, %d items, %d bytes; want truncated and just under %d bytes",
				got.Truncated, len(got.Items), len(b), jsonrpc.DefaultMaxResponse)
		}
	})

	var hows []any
	for _, rec := range logs.records(t, slog.LevelWarn) {
		hows = append(hows, rec["how"])
	}
	if fmt.Sprint(hows) != "[placeholder truncate]" {
		t.Errorf("WARN records say how = %v, want [placeholder truncate]", hows)
	}
}

// A batch whose replies together exceed the cap still fits: later results
// are shrunk to what is left.
func TestServeBatchFitsCap(t *testing.T) {
	const max = 64 << 10
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}, MaxResponse: max})
	c := dialRaw(t, path)
	item := `{"jsonrpc":"2.0","id":%d,"method":"echo","params":["` + strings.Repeat("e", 20<<10) + `"]}`
	batch := "[" + fmt.Sprintf(item, 1) + "," + fmt.Sprintf(item, 2) + "," + fmt.Sprintf(item, 3) + "," + fmt.Sprintf(item, 4) + "]"
	c.send([]byte(batch))
	body := c.recv()
	if len(body) > max {
		t.Fatalf("reply is %d bytes, over the %d cap", len(body), max)
	}
	var resps []struct {
		ID     int `json:"id"`
		Result any `json:"result"`
	}
	if err := json.Unmarshal(body, &resps); err != nil {
		t.Fatal(err)
	}
	var whole, shrunk int
	for _, r := range resps {
		if m, ok := r.Result.(map[string]any); ok && m["truncated"] == true {
			shrunk++
		} else {
			whole++
		}
	}
	if len(resps) != 4 || whole != 3 || shrunk != 1 {
		t.Errorf("%d replies, %d whole, %d shrunk; want 4, 3, 1", len(resps), whole, shrunk)
	}
}

// Cancelling Serve's ctx stops accepting, closes live connections (even one
// whose handler is still running) and leaves no goroutine behind.
func TestServeStopsOnCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "broker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&jsonrpc.Server{Handler: &testHandler{}}).Serve(ctx, ln) }()

	var conns []*rawConn
	for range 3 {
		c := dialRaw(t, ln.Addr().String())
		c.probe() // accepted and served
		conns = append(conns, c)
	}
	conns[0].send([]byte(`{"jsonrpc":"2.0","id":1,"method":"wait"}`))
	time.Sleep(20 * time.Millisecond) // let the handler start waiting

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	for i, c := range conns {
		_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := c.r.ReadFrame()
		if i == 0 && err == nil {
			// The waiting call's reply may have gone out just before the
			// close; nothing may follow it.
			_, err = c.r.ReadFrame()
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("conn %d: read after stop = %v, want io.EOF (closed by the server)", i, err)
		}
		c.conn.Close()
	}
	if _, err := net.Dial("unix", ln.Addr().String()); err == nil {
		t.Error("dial after stop succeeded; want the listener closed")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after stop, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ServeConn ends cleanly when the peer hangs up between frames, and with an
// error when the peer stops inside one.
func TestServeConnEnds(t *testing.T) {
	tests := []struct {
		name    string
		send    string
		wantErr error
	}{
		{name: "hang up between frames", send: frame(`{"jsonrpc":"2.0","method":"notify"}`)},
		{name: "hang up inside a frame", send: header(100) + `{"json`, wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "broker.sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan error, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					done <- err
					return
				}
				done <- (&jsonrpc.Server{Handler: &testHandler{}}).ServeConn(t.Context(), conn)
			}()
			conn, err := net.Dial("unix", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(conn, tt.send); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			if err := <-done; !errors.Is(err, tt.wantErr) {
				t.Errorf("ServeConn = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// Connections are served concurrently: a handler blocked on one does not
// hold up another.
func TestServeConnectionsAreConcurrent(t *testing.T) {
	path := startServer(t, &jsonrpc.Server{Handler: &testHandler{}})
	blocked := dialRaw(t, path)
	blocked.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"wait"}`))

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			client, err := jsonrpc.Dial(t.Context(), path)
			if err != nil {
				t.Error(err)
				return
			}
			defer client.Close()
			for j := range 50 {
				want := []int{i, j}
				var got []int
				if err := client.Call(t.Context(), "echo", want, &got); err != nil {
					t.Error(err)
					return
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("echo %v = %v", want, got)
				}
			}
		})
	}
	wg.Wait()
}
