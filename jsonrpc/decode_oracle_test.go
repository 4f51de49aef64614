package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
)

// FuzzDecodeOracle checks DecodeRequest against the encoding/json token
// walk it replaced (tokenDecode below): the same request, or the same
// error with the same id and detail, for any input.
func FuzzDecodeOracle(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{"tool":"Read","args":{"path":"/a"}}}`,
		` { "params" : [1,{"a":"}"}], "method":"m", "id":"call-123", "jsonrpc":"2.0" } `,
		`{"jsonr\u0070c":"2.0","id":null,"m\u0065thod":"tool.\u006cist"}`,
		`{"jsonrpc":"2\u002e0","id":-1.5e3,"method":null}`,
		`{"id":true,"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":{},"method":1,"params":"x","x":[{"y":"\"]"}]}`,
		`{"jsonrpc":"2.0","Method":"m","params":null}`,
		`[{"jsonrpc":"2.0","method":"m"}]`, `42`, `"x"`, `{}`, `{"a":"\\"}`, `{"jsonrpc":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeRequest(data)
		want, werr := tokenDecode(data)
		if (err == nil) != (werr == nil) || errors.Is(err, ErrParse) != errors.Is(werr, ErrParse) {
			t.Fatalf("%q: error %v, oracle %v", data, err, werr)
		}
		var re, wre *RequestError
		if errors.As(err, &re) != errors.As(werr, &wre) {
			t.Fatalf("%q: error %v, oracle %v", data, err, werr)
		}
		if re != nil && (re.Detail != wre.Detail || !bytes.Equal(re.ID, wre.ID)) {
			t.Fatalf("%q: %+v, oracle %+v", data, re, wre)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, oracle %+v", data, got, want)
		}
	})
}

// tokenDecode is the decoder the scanner replaced, kept as the oracle.
func tokenDecode(data []byte) (*Request, error) {
	if !validJSON(data) {
		return nil, fmt.Errorf("decode request: %w", ErrParse)
	}
	if firstByte(data) != '{' {
		return nil, &RequestError{Detail: "request is not a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("decode request: %w: %w", ErrParse, err)
	}
	var (
		req    Request
		seen   int
		detail string
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decode request: %w: %w", ErrParse, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("decode request: %w: %w", ErrParse, err)
		}
		key, _ := tok.(string)
		if d := tokenSetMember(&req, key, raw, &seen); d != "" && detail == "" {
			detail = d
		}
	}
	switch {
	case detail != "":
	case seen&hasVersion == 0:
		detail = `jsonrpc must be "2.0"`
	case seen&hasMethod == 0:
		detail = "method is required"
	default:
		return &req, nil
	}
	return nil, &RequestError{ID: req.ID, Detail: detail}
}

func tokenSetMember(r *Request, key string, raw json.RawMessage, seen *int) string {
	bit := memberBit(key)
	if bit == 0 {
		return ""
	}
	if *seen&bit != 0 {
		return "duplicate member " + strconv.Quote(key)
	}
	*seen |= bit
	switch bit {
	case hasVersion:
		if json.Unmarshal(raw, &r.JSONRPC) != nil || r.JSONRPC != Version {
			return `jsonrpc must be "2.0"`
		}
	case hasID:
		switch c := raw[0]; {
		case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
			r.ID = raw
		default:
			return "id must be a string, a number or null"
		}
	case hasMethod:
		if json.Unmarshal(raw, &r.Method) != nil {
			return "method must be a string"
		}
	case hasParams:
		if c := raw[0]; c != '{' && c != '[' {
			return "params must be an object or an array"
		}
		r.Params = raw
	}
	return ""
}
