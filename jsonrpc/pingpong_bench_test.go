package jsonrpc_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/jsonrpc"
)

// frameSizes are the request and reply sizes of the broker calls the
// integration benchmarks time (BenchmarkToolCall): tool.list of a skill
// allowed Read, and a tool.call of Read on a 28-byte file.
var frameSizes = []struct {
	name      string
	req, resp int
}{{"toollist", 57, 317}, {"read", 135, 166}}

// BenchmarkPingPong is one call in flight on one Unix socket, in one
// process: "raw" writes a length-prefixed frame and reads one back from an
// echo loop (the floor), "jsonrpc" is the package's Client calling its
// Server with a handler that returns a ready result, so the frames have the
// same sizes and the difference is the JSON-RPC layer (decode, dispatch,
// encode, id matching). Metrics: p50-ns, p99-ns and calls/s.
func BenchmarkPingPong(b *testing.B) {
	for _, fs := range frameSizes {
		b.Run(fs.name+"/raw", func(b *testing.B) { benchRaw(b, fs.req, fs.resp) })
		b.Run(fs.name+"/jsonrpc", func(b *testing.B) { benchJSONRPC(b, fs.req, fs.resp) })
	}
}

func benchRaw(b *testing.B, reqSize, respSize int) {
	path := filepath.Join(b.TempDir(), "raw.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	reply := frameOf(respSize)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var hdr [4]byte
		buf := make([]byte, 64<<10)
		for {
			if _, err := io.ReadFull(conn, hdr[:]); err != nil {
				return
			}
			if _, err := io.ReadFull(conn, buf[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
				return
			}
			if _, err := conn.Write(reply); err != nil {
				return
			}
		}
	}()
	conn, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := frameOf(reqSize)
	var hdr [4]byte
	buf := make([]byte, 64<<10)
	call := func() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
			b.Fatal(err)
		}
	}
	timeCalls(b, call)
}

func benchJSONRPC(b *testing.B, reqSize, respSize int) {
	// The result is sized so the whole reply frame is respSize bytes:
	// {"jsonrpc":"2.0","id":N,"result":"xx…"} around it.
	const envelope = len(`{"jsonrpc":"2.0","id":1,"result":}`)
	result := json.RawMessage(`"` + strings.Repeat("x", respSize-envelope-2) + `"`)
	srv := &jsonrpc.Server{Handler: jsonrpc.HandlerFunc(func(context.Context, string, json.RawMessage) (any, error) {
		return result, nil
	})}
	path := filepath.Join(b.TempDir(), "b.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	c, err := jsonrpc.Dial(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// The request is sized the same way: {"jsonrpc":"2.0","id":N,"method":"m","params":["xx…"]}.
	const reqEnvelope = len(`{"jsonrpc":"2.0","id":1,"method":"m","params":[]}`)
	params := []string{strings.Repeat("x", reqSize-reqEnvelope-2)}
	var got json.RawMessage
	call := func() {
		if err := c.Call(ctx, "m", params, &got); err != nil {
			b.Fatal(err)
		}
	}
	timeCalls(b, call)
}

// timeCalls runs call in the benchmark loop, timing each, and reports the
// median, the 99th percentile and the rate.
func timeCalls(b *testing.B, call func()) {
	for range 200 {
		call() // warm the connection and both goroutines
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		t := time.Now()
		call()
		lat = append(lat, time.Since(t))
	}
	total := time.Since(start)
	slices.Sort(lat)
	at := func(p int) float64 { return float64(lat[min(len(lat)*p/100, len(lat)-1)].Nanoseconds()) }
	b.ReportMetric(at(50), "p50-ns")
	b.ReportMetric(at(99), "p99-ns")
	b.ReportMetric(float64(len(lat))/total.Seconds(), "calls/s")
}

func frameOf(size int) []byte {
	body := []byte(`"` + strings.Repeat("x", size-2) + `"`)
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}
