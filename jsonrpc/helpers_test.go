package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// overCap is a result size over the 16 MiB response cap.
const overCap = 17 << 20

// testHandler serves the methods the tests call.
type testHandler struct {
	notified atomic.Int64
}

func (h *testHandler) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "echo", jsonrpc.MethodToolCall:
		return params, nil
	case "deny":
		var p struct {
			Reason enforce.Reason `json:"reason"`
		}
		if err := jsonrpc.DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return nil, &enforce.Denial{Reason: p.Reason, Tool: "Bash", SkillID: "memory-capture"}
	case "args":
		var p struct {
			N int `json:"n"`
		}
		if err := jsonrpc.DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return p, nil
	case "fail":
		return nil, fmt.Errorf("open /var/lib/skillrun/state.db: %w", fs.ErrPermission)
	case "panic":
		panic("handler bug")
	case "big":
		return strings.Repeat("x", overCap), nil
	case "bigList":
		return newBigList(overCap), nil
	case "wait":
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return "late", nil
		}
	case "notify":
		h.notified.Add(1)
		return nil, nil
	case "notified":
		return h.notified.Load(), nil
	}
	return nil, fmt.Errorf("%s: %w", method, jsonrpc.ErrMethodNotFound)
}

// bigList is a Truncatable result: it drops items until it fits.
type bigList struct {
	Items []string `json:"items"`
}

type truncatedList struct {
	Items     []string `json:"items"`
	Truncated bool     `json:"truncated"`
}

func newBigList(size int) bigList {
	item := strings.Repeat("i", 1000)
	var l bigList
	for n := 0; n < size; n += len(item) + 3 {
		l.Items = append(l.Items, item)
	}
	return l
}

func (l bigList) Truncate(max int) any {
	out := truncatedList{Items: []string{}, Truncated: true}
	size := len(`{"items":[],"truncated":true}`)
	for _, it := range l.Items {
		size += len(it) + 3 // quotes and a comma
		if size > max {
			break
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// startServer serves srv on a fresh Unix socket until the test ends, and
// fails the test if Serve does not end cleanly.
func startServer(t *testing.T, srv *jsonrpc.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return path
}

// rawConn speaks frames directly, to send what no well-behaved client would.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *jsonrpc.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, r: jsonrpc.NewReader(conn, jsonrpc.DefaultMaxResponse)}
}

func (c *rawConn) send(body []byte) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := jsonrpc.WriteFrame(c.conn, body); err != nil {
		c.t.Fatalf("write frame: %v", err)
	}
}

func (c *rawConn) recv() []byte {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := c.r.ReadFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return bytes.Clone(body)
}

// probe proves the connection still works and that nothing was queued
// before it: the very next reply must be the probe's.
func (c *rawConn) probe() {
	c.t.Helper()
	c.send([]byte(`{"jsonrpc":"2.0","id":"probe","method":"echo","params":["probe"]}`))
	var resp jsonrpc.Response
	if err := json.Unmarshal(c.recv(), &resp); err != nil {
		c.t.Fatal(err)
	}
	if string(resp.ID) != `"probe"` || string(resp.Result) != `["probe"]` {
		c.t.Fatalf("next reply is %+v, want the probe's", resp)
	}
}

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the JSON log records at level.
func (s *syncBuffer) records(t *testing.T, level slog.Level) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(s.b.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec[slog.LevelKey] == level.String() {
			out = append(out, rec)
		}
	}
	return out
}

func newLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
