package jsonrpc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/skillrun/skillrun/jsonrpc"
)

// frame is the wire form of body, built by hand so the tests do not trust
// the writer they test.
func frame(body string) string {
	return header(uint32(len(body))) + body
}

func header(n uint32) string {
	return string(binary.BigEndian.AppendUint32(nil, n))
}

var errBroken = errors.New("broken pipe in test")

func TestReadFrame(t *testing.T) {
	big := strings.Repeat("b", 200<<10) // beyond the reused buffer: the growing path
	tests := []struct {
		name    string
		stream  io.Reader
		max     int
		want    []string // bodies read before the final error
		wantErr error
		tooBig  *jsonrpc.FrameTooLargeError // when wantErr is ErrFrameTooLarge
	}{
		{name: "empty stream", stream: strings.NewReader(""), wantErr: io.EOF},
		{name: "two frames", stream: strings.NewReader(frame(`{"a":1}`) + frame(`[]`)), want: []string{`{"a":1}`, `[]`}, wantErr: io.EOF},
		{name: "empty body", stream: strings.NewReader(frame("")), want: []string{""}, wantErr: io.EOF},
		{name: "half a header", stream: strings.NewReader("\x00\x00"), wantErr: io.ErrUnexpectedEOF},
		{name: "half a body", stream: strings.NewReader(header(10) + "12345"), wantErr: io.ErrUnexpectedEOF},
		{name: "exactly the cap", stream: strings.NewReader(frame("1234")), max: 4, want: []string{"1234"}, wantErr: io.EOF},
		{
			name: "one over the cap", stream: strings.NewReader(frame("12345")), max: 4,
			wantErr: jsonrpc.ErrFrameTooLarge, tooBig: &jsonrpc.FrameTooLargeError{Size: 5, Max: 4},
		},
		{
			name: "over the cap, stream ends inside", stream: strings.NewReader(header(100) + "12345"), max: 4,
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name: "4 GiB prefix, stream ends early", stream: strings.NewReader(header(0xFFFFFFFF) + "tiny"),
			wantErr: io.ErrUnexpectedEOF,
		},
		{name: "large body in pieces", stream: iotest.HalfReader(strings.NewReader(frame(big))), want: []string{big}, wantErr: io.EOF},
		{name: "large body cut short", stream: strings.NewReader(frame(big)[:100<<10]), wantErr: io.ErrUnexpectedEOF},
		{name: "read error", stream: io.MultiReader(strings.NewReader(header(3)+"a"), iotest.ErrReader(errBroken)), wantErr: errBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := jsonrpc.NewReader(tt.stream, tt.max)
			var got []string
			var err error
			for {
				var body []byte
				if body, err = r.ReadFrame(); err != nil {
					break
				}
				got = append(got, string(body))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadFrame error = %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("read %d frames, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("frame %d = %.40q…, want %.40q…", i, got[i], tt.want[i])
				}
			}
			if tt.tooBig != nil {
				var fe *jsonrpc.FrameTooLargeError
				if !errors.As(err, &fe) || *fe != *tt.tooBig {
					t.Errorf("error = %#v, want %#v", err, tt.tooBig)
				}
			}
		})
	}
}

// An oversized frame is drained and the next frame reads normally: the
// connection stays usable.
func TestReadFrameTooLargeThenNext(t *testing.T) {
	r := jsonrpc.NewReader(strings.NewReader(frame(strings.Repeat("x", 1000))+frame(`"next"`)), 16)
	if _, err := r.ReadFrame(); !errors.Is(err, jsonrpc.ErrFrameTooLarge) {
		t.Fatalf("first ReadFrame error = %v, want ErrFrameTooLarge", err)
	}
	body, err := r.ReadFrame()
	if err != nil || string(body) != `"next"` {
		t.Fatalf("second ReadFrame = %q, %v; want \"next\"", body, err)
	}
}

// zeros is an endless stream whose bytes nobody looks at: it costs nothing
// per byte, so draining 4 GiB takes a fraction of a second.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { return len(p), nil }

// A 4 GiB prefix is drained in full without allocating anything near its
// size, and the frame after it reads normally.
func TestReadFrame4GiBDrainDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("drains 4 GiB through the reader")
	}
	const size = 0xFFFFFFFF
	stream := io.MultiReader(
		strings.NewReader(header(size)),
		io.LimitReader(zeros{}, size),
		strings.NewReader(frame(`{"ok":true}`)),
	)
	r := jsonrpc.NewReader(stream, jsonrpc.DefaultMaxRequest)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadFrame()
	runtime.ReadMemStats(&after)

	var fe *jsonrpc.FrameTooLargeError
	if !errors.As(err, &fe) || fe.Size != size {
		t.Fatalf("ReadFrame error = %v, want FrameTooLargeError of %d bytes", err, int64(size))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("draining allocated %d bytes, want < 1 MiB", n)
	}
	body, err := r.ReadFrame()
	if err != nil || string(body) != `{"ok":true}` {
		t.Fatalf("frame after the drain = %q, %v", body, err)
	}
}

// Small frames reuse the reader's buffer: no allocation per frame.
func TestReadFrameReusesBuffer(t *testing.T) {
	one := []byte(frame(`{"jsonrpc":"2.0","id":1,"method":"tool.list"}`))
	src := bytes.NewReader(one)
	r := jsonrpc.NewReader(src, 0)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(one)
		if _, err := r.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadFrame allocates %v times per small frame, want 0", allocs)
	}
}

// writeCounter records each Write call separately.
type writeCounter struct {
	writes [][]byte
	err    error
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func TestWriteFrame(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		body    string
		failed  error // what the underlying writer returns
		want    []string
		wantErr error
	}{
		{name: "one write with prefix and body", body: `{"a":1}`, want: []string{frame(`{"a":1}`)}},
		{name: "empty body", body: "", want: []string{frame("")}},
		{name: "exactly the cap", max: 3, body: "abc", want: []string{frame("abc")}},
		{name: "over the cap writes nothing", max: 3, body: "abcd", wantErr: jsonrpc.ErrFrameTooLarge},
		{name: "write error", body: "x", failed: errBroken, want: []string{frame("x")}, wantErr: errBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writeCounter{err: tt.failed}
			err := jsonrpc.NewWriter(w, tt.max).WriteFrame([]byte(tt.body))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WriteFrame error = %v, want %v", err, tt.wantErr)
			}
			if len(w.writes) != len(tt.want) {
				t.Fatalf("%d Write calls, want %d", len(w.writes), len(tt.want))
			}
			for i := range w.writes {
				if string(w.writes[i]) != tt.want[i] {
					t.Errorf("write %d = %q, want %q", i, w.writes[i], tt.want[i])
				}
			}
		})
	}
}

func TestWriteFramePackageFunc(t *testing.T) {
	w := &writeCounter{}
	if err := jsonrpc.WriteFrame(w, []byte(`[1]`)); err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 1 || string(w.writes[0]) != frame(`[1]`) {
		t.Fatalf("writes = %q, want one %q", w.writes, frame(`[1]`))
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := jsonrpc.NewWriter(&buf, 1<<20)
	bodies := []string{`{}`, "", strings.Repeat("z", 300<<10), `[1,2,3]`}
	for _, b := range bodies {
		if err := w.WriteFrame([]byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	r := jsonrpc.NewReader(&buf, 1<<20)
	for i, want := range bodies {
		got, err := r.ReadFrame()
		if err != nil || string(got) != want {
			t.Fatalf("frame %d = %.20q…, %v; want %.20q…", i, got, err, want)
		}
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func BenchmarkReadFrame(b *testing.B) {
	one := []byte(frame(`{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{"tool":"Read","args":{"path":"/data/a.csv"}}}`))
	src := bytes.NewReader(one)
	r := jsonrpc.NewReader(src, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(one)))
	for b.Loop() {
		src.Reset(one)
		if _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteFrame(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"body":"hello","content_hash":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","size":5}}`)
	w := jsonrpc.NewWriter(io.Discard, jsonrpc.DefaultMaxResponse)
	b.ReportAllocs()
	b.SetBytes(int64(len(body) + 4))
	for b.Loop() {
		if err := w.WriteFrame(body); err != nil {
			b.Fatal(err)
		}
	}
}
