package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Version is the only jsonrpc member value this package speaks.
const Version = "2.0"

// The broker's methods (DESIGN §5).
const (
	MethodToolCall     = "tool.call"
	MethodToolList     = "tool.list"
	MethodBrokerStatus = "broker.status"
)

// Request is a JSON-RPC 2.0 request or notification.
//
// ID keeps its raw JSON so the reply echoes it byte for byte. A nil ID is an
// absent member: a notification, which gets no reply. The JSON null is
// json.RawMessage("null"): a request like any other, answered with id null.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// IsNotification reports whether r has no id member.
func (r *Request) IsNotification() bool { return len(r.ID) == 0 }

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error is
// set. A null result is json.RawMessage("null").
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is the error object of a response. Use ErrorFromGo to build one and
// Err to turn one back into a Go error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ToolCallParams are the params of tool.call (DESIGN §5).
type ToolCallParams struct {
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Traceparent string          `json:"traceparent,omitempty"`
}

// Members of a request, as bits, to catch duplicates and missing ones.
const (
	hasVersion = 1 << iota
	hasID
	hasMethod
	hasParams
)

// DecodeRequest parses one request object. Invalid JSON, or text that is
// not UTF-8, wraps ErrParse; JSON that is not a valid request is a
// *RequestError (which matches ErrInvalidRequest) carrying the id when that
// much could be read.
//
// It is stricter than encoding/json: member names match exactly, not
// case-insensitively, and a repeated member is refused rather than
// last-one-wins, so no two readers of a frame can disagree on its method.
// Members the specification does not name are ignored.
func DecodeRequest(data []byte) (*Request, error) {
	if !validJSON(data) {
		return nil, fmt.Errorf("decode request: %w", ErrParse)
	}
	return decodeRequest(data)
}

// validJSON also requires UTF-8 (RFC 8259 §8.1), which json.Valid does not:
// an id is echoed byte for byte, and a reply must parse in strict peers.
func validJSON(data []byte) bool {
	return utf8.Valid(data) && json.Valid(data)
}

// decodeRequest is DecodeRequest for data already known to be valid JSON.
func decodeRequest(data []byte) (*Request, error) {
	req := new(Request)
	if err := req.decode(data); err != nil {
		return nil, err
	}
	return req, nil
}

// decode fills r from data, a request object already known to be valid
// JSON, as DecodeRequest documents. It walks the object with the scanner
// of scan.go: the members are only sliced, and ID and Params are copied out
// of data together in one allocation, so they outlive a reused frame
// buffer.
func (r *Request) decode(data []byte) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return &RequestError{Detail: "request is not a JSON object"}
	}
	var (
		seen       int
		detail     string
		id, params []byte
	)
	for i = skipSpace(data, i+1); i < len(data) && data[i] != '}'; {
		m, next, ok := nextMember(data, i)
		if !ok {
			return fmt.Errorf("decode request: %w", ErrParse)
		}
		if d := r.setMember(m, &seen, &id, &params); d != "" && detail == "" {
			detail = d
		}
		i = next
	}
	if len(id)+len(params) > 0 {
		buf := make([]byte, 0, len(id)+len(params))
		buf = append(append(buf, id...), params...)
		if len(id) > 0 {
			r.ID = buf[:len(id):len(id)]
		}
		if len(params) > 0 {
			r.Params = buf[len(id):]
		}
	}
	switch {
	case detail != "":
	case seen&hasVersion == 0:
		detail = `jsonrpc must be "2.0"`
	case seen&hasMethod == 0:
		detail = "method is required"
	default:
		return nil
	}
	return &RequestError{ID: r.ID, Detail: detail}
}

// setMember takes in one member of a request object and returns what is
// wrong with it, or "". The id and params it keeps still point into the
// frame: decode copies them. The phrases are fixed: they go on the wire.
func (r *Request) setMember(m member, seen *int, id, params *[]byte) string {
	bit := memberBitOf(m)
	if bit == 0 {
		return ""
	}
	if *seen&bit != 0 {
		return "duplicate member " + strconv.Quote(memberName(bit))
	}
	*seen |= bit
	raw := m.value
	switch bit {
	case hasVersion:
		if !isString(raw, Version) {
			return `jsonrpc must be "2.0"`
		}
		r.JSONRPC = Version
	case hasID:
		switch c := raw[0]; {
		case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
			*id = raw
		default:
			return "id must be a string, a number or null"
		}
	case hasMethod:
		// As encoding/json decodes into a string: null leaves it empty.
		switch {
		case raw[0] == '"':
			r.Method = stringValue(raw)
		case string(raw) != "null":
			return "method must be a string"
		}
	case hasParams:
		if c := raw[0]; c != '{' && c != '[' {
			return "params must be an object or an array"
		}
		*params = raw
	}
	return ""
}

// memberBitOf is memberBit of a member's key, decoded only if it holds an
// escape: "jsonr\u0070c" is the jsonrpc member too.
func memberBitOf(m member) int {
	if !m.escaped {
		return memberBit(string(m.key[1 : len(m.key)-1]))
	}
	var key string
	if json.Unmarshal(m.key, &key) != nil {
		return 0
	}
	return memberBit(key)
}

// isString reports whether raw, a JSON string, decodes to want.
func isString(raw []byte, want string) bool {
	if len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want {
		return true
	}
	if raw[0] != '"' || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// stringValue decodes raw, a JSON string; the broker's own method names
// cost no allocation.
func stringValue(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		switch string(body) {
		case MethodToolCall:
			return MethodToolCall
		case MethodToolList:
			return MethodToolList
		case MethodBrokerStatus:
			return MethodBrokerStatus
		}
		return string(body)
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid JSON: a string decodes
	return s
}

func memberName(bit int) string {
	switch bit {
	case hasVersion:
		return "jsonrpc"
	case hasID:
		return "id"
	case hasMethod:
		return "method"
	}
	return "params"
}

func memberBit(key string) int {
	switch key {
	case "jsonrpc":
		return hasVersion
	case "id":
		return hasID
	case "method":
		return hasMethod
	case "params":
		return hasParams
	}
	return 0
}

// firstByte is the first byte of data that is not JSON whitespace, or 0.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// DecodeParams decodes params into v for a handler, strictly: a member v
// does not have is refused, since a misspelt optional argument must not be
// silently dropped. Failures are *ParamsError, so returning the error as it
// is answers -32602 with the offending field. Absent params leave v as it is.
func DecodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		return nil
	}
	pd := paramsDecoders.Get().(*paramsDecoder)
	pd.src.Reset(params)
	if err := pd.dec.Decode(v); err != nil {
		return paramsError(err) // a decoder that failed stays failed: drop it
	}
	if pd.dec.InputOffset() == pd.done+int64(len(params)) && len(params) <= keepBuffer {
		// Read to the end, nothing buffered, and the buffer it grew for
		// these params is not one worth pinning: fit for the next.
		pd.done += int64(len(params))
		paramsDecoders.Put(pd)
	}
	return nil
}

// paramsDecoder is a json.Decoder kept for the next DecodeParams: making
// one costs more than decoding a tool call's params with it. It reads
// whatever src is reset to; done is its InputOffset after the last params.
type paramsDecoder struct {
	src  bytes.Reader
	dec  *json.Decoder
	done int64
}

var paramsDecoders = sync.Pool{New: func() any {
	pd := new(paramsDecoder)
	pd.dec = json.NewDecoder(&pd.src)
	pd.dec.DisallowUnknownFields()
	return pd
}}

// paramsError turns a decoding failure into words fit for the wire: JSON
// type names rather than Go ones, and never the text of a custom decoder.
func paramsError(err error) *ParamsError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ParamsError{Field: te.Field, Detail: "wrong type, want " + jsonKind(te.Type)}
	}
	// encoding/json has no typed error for an unknown field; its message
	// is the only place the name is.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, err := strconv.Unquote(rest); err == nil {
			return &ParamsError{Field: name, Detail: "unknown field"}
		}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &ParamsError{Detail: "not valid JSON"}
	}
	return &ParamsError{Detail: "params do not match the method's arguments"}
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another type"
}

// responsePrefix and the members after it are written by hand: the id and
// result are already compact JSON, and re-encoding a 16 MiB result through
// encoding/json would validate and copy it once more.
const (
	responsePrefix = `{"jsonrpc":"2.0","id":`
	resultMember   = `,"result":`
	errorMember    = `,"error":`
)

// envelopeSize is the bytes of a success response besides its result.
func envelopeSize(id json.RawMessage) int {
	return len(responsePrefix) + max(len(id), len("null")) + len(resultMember) + len("}")
}

// appendResponse appends a response with result or, if e is not nil, e.
func appendResponse(dst []byte, id, result json.RawMessage, e *Error) []byte {
	dst = append(dst, responsePrefix...)
	if len(id) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	if e == nil {
		dst = append(dst, resultMember...)
		return append(append(dst, result...), '}')
	}
	b, err := json.Marshal(e)
	if err != nil {
		// Only Data can fail (a handler's RemoteError with bad JSON in it):
		// the code and message still tell the peer what happened.
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	dst = append(dst, errorMember...)
	return append(append(dst, b...), '}')
}

// decodeResponse parses and checks a response frame.
func decodeResponse(data []byte) (*Response, error) {
	var resp Response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResponse, err)
	}
	switch {
	case resp.JSONRPC != Version:
		return nil, fmt.Errorf("%w: jsonrpc is %q", ErrInvalidResponse, resp.JSONRPC)
	case (resp.Result == nil) == (resp.Error == nil):
		return nil, fmt.Errorf("%w: want exactly one of result and error", ErrInvalidResponse)
	}
	return &resp, nil
}
