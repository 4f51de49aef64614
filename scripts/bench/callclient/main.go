//go:build benchtool

// Command callclient measures broker round trips from the client's side:
// one connection, one call in flight, N calls of one method, each timed
// with the monotonic clock. It is the skill entrypoint of the tool-call
// benchmarks (integration/broker_bench_test.go), run inside the real
// sandbox against the real broker, and the client of the raw ping-pong
// baseline, run on the host against an echo server (-serve).
//
// The client does the least a client can: the request frame is encoded
// once, the reply is read into a reused buffer, and only the first reply
// is decoded (to fail on a JSON-RPC error). The broker and the raw echo
// server get the same client, so the difference between them is the
// broker, the sandbox and the audit, not client code.
//
// Build it static (CGO_ENABLED=0 go build -tags benchtool) so it runs in
// the sandbox without the host's libraries. It prints one JSON line.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

type report struct {
	Method    string  `json:"method"`
	Calls     int     `json:"calls"`
	ReqBytes  int     `json:"req_bytes"`
	RespBytes int     `json:"resp_bytes"`
	P50NS     int64   `json:"p50_ns"`
	P90NS     int64   `json:"p90_ns"`
	P99NS     int64   `json:"p99_ns"`
	MeanNS    int64   `json:"mean_ns"`
	CallsPerS float64 `json:"calls_per_s"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "callclient:", err)
		os.Exit(1)
	}
}

func run() error {
	sock := flag.String("sock", os.Getenv("CYBEROS_BROKER_SOCKET"), "socket to call")
	n := flag.Int("n", 10000, "timed calls")
	warmup := flag.Int("warmup", 1000, "untimed calls first")
	method := flag.String("method", "tool.list", "tool.list, broker.status, read (tool.call of Read), or raw")
	path := flag.String("path", "", "file for -method read")
	reqBytes := flag.Int("req-bytes", 0, "-method raw: request frame size")
	serve := flag.String("serve", "", "serve a raw echo on this socket instead: each request frame is answered with -resp-bytes bytes")
	respBytes := flag.Int("resp-bytes", 0, "-serve: reply frame size")
	cpu := flag.Int("cpu", -1, "pin every thread to this CPU first (-1: leave placement to the scheduler)")
	flag.Parse()
	if *cpu >= 0 {
		if err := pin(*cpu); err != nil {
			return err
		}
	}
	if *serve != "" {
		return serveEcho(*serve, *respBytes)
	}
	req, err := request(*method, *path, *reqBytes)
	if err != nil {
		return err
	}
	conn, err := net.Dial("unix", *sock)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := &client{conn: conn, frame: frame(req)}
	first, err := c.call()
	if err != nil {
		return err
	}
	if *method != "raw" {
		var resp struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(first, &resp); err != nil {
			return fmt.Errorf("first reply: %w", err)
		}
		if len(resp.Error) > 0 && string(resp.Error) != "null" {
			return fmt.Errorf("first reply is an error: %s", resp.Error)
		}
	}
	r := report{Method: *method, Calls: *n, ReqBytes: len(req), RespBytes: len(first)}
	for range *warmup {
		if _, err := c.call(); err != nil {
			return err
		}
	}
	lat := make([]int64, *n)
	start := time.Now()
	for i := range lat {
		t := time.Now()
		if _, err := c.call(); err != nil {
			return err
		}
		lat[i] = int64(time.Since(t))
	}
	total := time.Since(start)
	slices.Sort(lat)
	r.P50NS, r.P90NS, r.P99NS = pct(lat, 50), pct(lat, 90), pct(lat, 99)
	r.MeanNS = int64(total) / int64(max(*n, 1))
	r.CallsPerS = float64(*n) / total.Seconds()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// request is the JSON-RPC request body of one call of method.
func request(method, path string, rawSize int) ([]byte, error) {
	var params any = map[string]any{}
	switch method {
	case "tool.list", "broker.status":
	case "read":
		if path == "" {
			return nil, errors.New("-method read needs -path")
		}
		method = "tool.call"
		params = map[string]any{"tool": "Read", "args": map[string]string{"path": path}}
	case "raw":
		if rawSize < 2 {
			return nil, errors.New("-method raw needs -req-bytes")
		}
		return padded(rawSize), nil
	default:
		return nil, fmt.Errorf("unknown -method %q", method)
	}
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

// padded is a JSON string of exactly size bytes, so a raw frame is the
// same size as the real one it stands in for.
func padded(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'x'
	}
	b[0], b[size-1] = '"', '"'
	return b
}

func frame(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(out, body...)
}

type client struct {
	conn  net.Conn
	frame []byte
	hdr   [4]byte
	buf   []byte
}

// call writes the request frame and reads one reply frame.
func (c *client) call() ([]byte, error) {
	if _, err := c.conn.Write(c.frame); err != nil {
		return nil, err
	}
	return readFrame(c.conn, c.hdr[:], &c.buf)
}

func readFrame(r io.Reader, hdr []byte, buf *[]byte) ([]byte, error) {
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(hdr))
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	b := (*buf)[:size]
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// serveEcho answers every request frame with one reply frame of respSize
// bytes, on every connection, until killed: the raw baseline.
func serveEcho(path string, respSize int) error {
	if respSize < 2 {
		return errors.New("-serve needs -resp-bytes")
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	reply := frame(padded(respSize))
	fmt.Println("ready")
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer conn.Close()
			var hdr [4]byte
			var buf []byte
			for {
				if _, err := readFrame(conn, hdr[:], &buf); err != nil {
					return
				}
				if _, err := conn.Write(reply); err != nil {
					return
				}
			}
		}()
	}
}

// pin moves every thread of the process to one CPU; threads made later
// inherit the mask. In the sandbox the cpuset cgroup resets what taskset
// gave the supervisor, so the client pins itself.
func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin thread %d to cpu %d: %w", tid, cpu, err)
		}
	}
	return nil
}

func pct(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
