package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillrun/skillrun/enforce"
)

// The error codes of the JSON-RPC 2.0 specification.
const (
	ParseError     = -32700
	InvalidRequest = -32600
	MethodNotFound = -32601
	InvalidParams  = -32602
	InternalError  = -32603
)

// Sentinels. Test with errors.Is; the same sentinel matches on both sides of
// the socket because ErrorToGo maps each code back onto it.
var (
	// ErrParse marks a frame whose body is not JSON (-32700).
	ErrParse = errors.New("parse error")
	// ErrInvalidRequest marks JSON that is not a valid request object (-32600).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrMethodNotFound is what a Handler returns for a method it does not
	// serve (-32601).
	ErrMethodNotFound = errors.New("method not found")
	// ErrInvalidParams is what a Handler wraps for params it cannot use
	// (-32602); *ParamsError carries the offending field.
	ErrInvalidParams = errors.New("invalid params")
	// ErrInternal is any failure the peer is not told the cause of (-32603
	// with data.reason "internal").
	ErrInternal = errors.New("internal error")
	// ErrFrameTooLarge marks a frame over the reader's or writer's cap.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrInvalidResponse marks a reply the client cannot trust: bad JSON, a
	// wrong version or an id that is not the one it sent.
	ErrInvalidResponse = errors.New("invalid response")
	// ErrClosed marks a client that was closed, or that closed itself after
	// an I/O error left the stream in an unknown state.
	ErrClosed = errors.New("client closed")
)

// reasonInternal is data.reason for errors whose cause stays on the host.
const reasonInternal = "internal"

// FrameTooLargeError is a frame whose length prefix exceeds the cap. A
// reader has already drained the body when it returns this error, so the
// stream is still aligned on a frame boundary; a writer has written nothing.
type FrameTooLargeError struct {
	Size int64 // the length the frame declared, or the body to be written
	Max  int64 // the cap in force
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", e.Size, e.Max)
}

// Is makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// Denial is the enforcement denial a too-large request is reported as
// (DESIGN §5: request_too_large).
func (e *FrameTooLargeError) Denial() *enforce.Denial {
	return &enforce.Denial{Reason: enforce.ReasonRequestTooLarge, Detail: e.Error()}
}

// RequestError is JSON that is not a valid request object (-32600).
type RequestError struct {
	// ID is the request's id when it could be read, so the reply can carry
	// it; nil means the reply's id is null.
	ID json.RawMessage
	// Detail says what is wrong in a fixed phrase; it never quotes input.
	Detail string
}

func (e *RequestError) Error() string { return "invalid request: " + e.Detail }

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *RequestError) Is(target error) bool { return target == ErrInvalidRequest }

// ParamsError is params a handler cannot use (-32602). Field and Detail go
// on the wire, so neither may hold host state.
type ParamsError struct {
	Field  string `json:"field,omitempty"`  // the offending member, "" for params as a whole
	Detail string `json:"detail,omitempty"` // a short reason
}

func (e *ParamsError) Error() string {
	if e.Field == "" {
		return "invalid params: " + e.Detail
	}
	return "invalid params: " + e.Field + ": " + e.Detail
}

// Is makes errors.Is(err, ErrInvalidParams) true.
func (e *ParamsError) Is(target error) bool { return target == ErrInvalidParams }

// RemoteError is an error response as a Go client sees it. It keeps the
// wire fields and unwraps to the Go error the code stands for: an
// *enforce.Denial for an enforcement denial, *ParamsError, *RequestError or
// one of this package's sentinels; nil for codes this package does not know.
//
// A handler may return a *RemoteError to send a code of its own, or to pass
// through an error it got from another JSON-RPC peer unchanged.
type RemoteError struct {
	Code    int
	Message string
	Data    json.RawMessage
	err     error
}

func (e *RemoteError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("remote error %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("remote error %d %s: %v", e.Code, e.Message, e.err)
}

// Unwrap returns the mapped Go error, so errors.Is(err,
// enforce.ErrScopeViolation) and enforce.AsDenial see through it.
func (e *RemoteError) Unwrap() error { return e.err }

// denialData is data of an enforcement denial. tool and skill_id are always
// present (DESIGN §5); detail only when there is one.
type denialData struct {
	Reason  string `json:"reason"`
	Tool    string `json:"tool"`
	SkillID string `json:"skill_id"`
	Detail  string `json:"detail,omitempty"`
}

type detailData struct {
	Detail string `json:"detail,omitempty"`
}

type internalData struct {
	Reason string `json:"reason"`
}

// mapping is one row of the error table: encode recognises a Go error and
// says what to send; decode recognises a wire error of the row's code and
// says which Go error it stands for (nil: not this row).
type mapping struct {
	code   int
	encode func(err error) (message string, data any, ok bool)
	decode func(e *Error) error
}

// errorTable is the one place JSON-RPC errors and Go errors meet, in both
// directions. Rows are tried in order; the last row catches every error.
var errorTable = []mapping{
	{InternalError, encodeDenial, decodeDenial},
	{ParseError, encodeSentinel(ErrParse, "parse_error"), constant(ErrParse)},
	{InvalidRequest, encodeRequestError, decodeRequestError},
	{MethodNotFound, encodeSentinel(ErrMethodNotFound, "method_not_found"), constant(ErrMethodNotFound)},
	{InvalidParams, encodeParamsError, decodeParamsError},
	{InternalError, encodeInternal, constant(ErrInternal)},
}

// ErrorFromGo is the error object sent for err: enforcement denials (and a
// too-large frame, which is one) as -32603 with the reason's class as
// message; this package's errors as their codes; a *RemoteError as it is;
// anything else as -32603 "internal_error", whose text never leaves the host
// because it may name host paths.
func ErrorFromGo(err error) *Error {
	if err == nil {
		return nil
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return &Error{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	for _, m := range errorTable {
		msg, data, ok := m.encode(err)
		if !ok {
			continue
		}
		e := &Error{Code: m.code, Message: msg}
		if data != nil {
			// The data types above cannot fail to marshal.
			e.Data, _ = json.Marshal(data)
		}
		return e
	}
	panic("jsonrpc: error table has no catch-all row")
}

// ErrorToGo is the Go error for a wire error, as (*Error).Err.
func ErrorToGo(e *Error) error { return e.Err() }

// Err is the Go error e stands for: a *RemoteError that unwraps to the
// error ErrorFromGo was given (a denial, a sentinel, a typed error). Nil for
// a nil e.
func (e *Error) Err() error {
	if e == nil {
		return nil
	}
	re := &RemoteError{Code: e.Code, Message: e.Message, Data: e.Data}
	for _, m := range errorTable {
		if m.code != e.Code {
			continue
		}
		if err := m.decode(e); err != nil {
			re.err = err
			break
		}
	}
	return re
}

func encodeDenial(err error) (string, any, bool) {
	d, ok := enforce.AsDenial(err)
	if !ok {
		var fe *FrameTooLargeError
		switch {
		case errors.As(err, &fe):
			d = fe.Denial()
		case errors.Is(err, ErrFrameTooLarge):
			d = &enforce.Denial{Reason: enforce.ReasonRequestTooLarge}
		default:
			return "", nil, false
		}
	}
	return d.Reason.Class(), denialData{
		Reason:  string(d.Reason),
		Tool:    d.Tool,
		SkillID: d.SkillID,
		Detail:  d.Detail,
	}, true
}

// decodeDenial keeps a reason it does not know: the denial then matches no
// sentinel, as enforce documents.
func decodeDenial(e *Error) error {
	var d denialData
	if json.Unmarshal(e.Data, &d) != nil || d.Reason == "" || d.Reason == reasonInternal {
		return nil
	}
	return &enforce.Denial{
		Reason:  enforce.Reason(d.Reason),
		Tool:    d.Tool,
		SkillID: d.SkillID,
		Detail:  d.Detail,
	}
}

func encodeSentinel(target error, message string) func(error) (string, any, bool) {
	return func(err error) (string, any, bool) {
		return message, nil, errors.Is(err, target)
	}
}

func constant(err error) func(*Error) error {
	return func(*Error) error { return err }
}

func encodeRequestError(err error) (string, any, bool) {
	var re *RequestError
	if errors.As(err, &re) {
		return "invalid_request", detailData{Detail: re.Detail}, true
	}
	return "invalid_request", nil, errors.Is(err, ErrInvalidRequest)
}

func decodeRequestError(e *Error) error {
	var d detailData
	_ = json.Unmarshal(e.Data, &d) // absent or odd data: no detail
	return &RequestError{Detail: d.Detail}
}

func encodeParamsError(err error) (string, any, bool) {
	var pe *ParamsError
	if errors.As(err, &pe) {
		return "invalid_params", pe, true
	}
	return "invalid_params", nil, errors.Is(err, ErrInvalidParams)
}

func decodeParamsError(e *Error) error {
	var pe ParamsError
	_ = json.Unmarshal(e.Data, &pe) // absent or odd data: no field
	return &pe
}

func encodeInternal(error) (string, any, bool) {
	return "internal_error", internalData{Reason: reasonInternal}, true
}
