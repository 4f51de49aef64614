package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// Seeds live in testdata/fuzz/<FuzzName>/, where go test reads them on
// every run, fuzzing or not.

// FuzzReadFrame feeds arbitrary streams to a Reader with a small cap. It
// must only ever return frames within the cap, a drained too-large frame,
// io.EOF or io.ErrUnexpectedEOF; and a stream it reads to a clean end must
// be exactly the frames it returned. However the stream comes in pieces,
// the Reader (which reads ahead) returns the same.
func FuzzReadFrame(f *testing.F) {
	const max = 64
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := readAll(t, bytes.NewReader(data), max, data)
		for _, r := range []io.Reader{iotest.OneByteReader(bytes.NewReader(data)), iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(data)))} {
			if got := readAll(t, r, max, data); got != whole {
				t.Fatalf("read in pieces: %s; at once: %s", got, whole)
			}
		}
	})
}

// readAll reads frames from src to the end and describes what it got.
func readAll(t *testing.T, src io.Reader, max int, data []byte) string {
	t.Helper()
	var got strings.Builder
	r := NewReader(src, max)
	var rebuilt []byte
	clean := true
read:
	for {
		body, err := r.ReadFrame()
		switch {
		case err == nil:
			if len(body) > max {
				t.Fatalf("frame of %d bytes over the %d cap", len(body), max)
			}
			rebuilt = appendFrame(rebuilt, body)
			fmt.Fprintf(&got, "frame %q; ", body)
		case isFrameTooLarge(err):
			clean = false
			fmt.Fprintf(&got, "%v; ", err)
		case err == io.EOF:
			got.WriteString("EOF")
			break read
		case errors.Is(err, io.ErrUnexpectedEOF):
			clean = false
			got.WriteString("unexpected EOF")
			break read
		default:
			t.Fatalf("ReadFrame: unexpected error %v", err)
		}
	}
	if clean && !bytes.Equal(rebuilt, data) {
		t.Fatalf("frames read re-encode to %q, stream was %q", rebuilt, data)
	}
	return got.String()
}

// FuzzDecodeMessage feeds arbitrary frame bodies to DecodeRequest and to
// the server's frame handler. A request DecodeRequest accepts must survive
// a marshal round trip; the server must answer with nothing or with
// well-formed responses within its cap, echoing the request's id.
func FuzzDecodeMessage(f *testing.F) {
	echo := HandlerFunc(func(_ context.Context, method string, params json.RawMessage) (any, error) {
		if method == "fail" {
			return nil, ErrInvalidParams
		}
		return params, nil
	})
	const maxResponse = minResponse
	ss := (&Server{Handler: echo, MaxResponse: maxResponse}).session()

	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		switch {
		case err == nil:
			checkRequestRoundTrip(t, req)
		case !errors.Is(err, ErrParse) && !errors.Is(err, ErrInvalidRequest):
			t.Fatalf("DecodeRequest: unexpected error %v", err)
		}

		reply := ss.handleFrame(t.Context(), data)
		if len(reply) > maxResponse {
			t.Fatalf("reply of %d bytes over the %d cap", len(reply), maxResponse)
		}
		if reply == nil {
			if err == nil && !req.IsNotification() {
				t.Fatalf("no reply to request %s", data)
			}
			return
		}
		var resps []Response
		if firstByte(reply) == '[' {
			if err := json.Unmarshal(reply, &resps); err != nil {
				t.Fatalf("batch reply %s: %v", reply, err)
			}
		} else {
			resp, err := decodeResponse(reply)
			if err != nil {
				t.Fatalf("reply %s: %v", reply, err)
			}
			resps = []Response{*resp}
			// A huge id cannot fit the cap: the reply is then an error
			// with id null, which is right.
			if req != nil && len(req.ID) < maxResponse/2 && !jsonSame(resp.ID, req.ID) {
				t.Fatalf("reply id %s, request id %s", resp.ID, req.ID)
			}
		}
		for _, r := range resps {
			if r.JSONRPC != Version || (r.Result == nil) == (r.Error == nil) {
				t.Fatalf("malformed response %+v in %s", r, reply)
			}
		}
	})
}

func checkRequestRoundTrip(t *testing.T, req *Request) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("marshal accepted request %+v: %v", req, err)
	}
	again, err := DecodeRequest(b)
	if err != nil {
		t.Fatalf("re-decode %s: %v", b, err)
	}
	if again.Method != req.Method || again.IsNotification() != req.IsNotification() ||
		!jsonSame(again.ID, req.ID) || !jsonSame(again.Params, req.Params) {
		t.Fatalf("round trip changed %+v into %+v", req, again)
	}
}

// jsonSame compares two JSON texts as values; empty stands for absent.
func jsonSame(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	va, erra := decodeAny(a)
	vb, errb := decodeAny(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

// decodeAny keeps numbers as text: 1e400 is a valid id, not a float.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
