package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// Handler serves requests. A method it does not serve returns
// ErrMethodNotFound; params it cannot use return an error matching
// ErrInvalidParams (DecodeParams produces one); an enforcement refusal
// returns an *enforce.Denial. Any other error is answered as internal_error
// and its text stays in the server's log. The result is marshalled with
// encoding/json, unless it is Encoded already; see Truncatable for results
// that may be large.
//
// Handlers must honour ctx: it is cancelled when the server stops, and the
// server waits for the handler to return.
type Handler interface {
	Handle(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return f(ctx, method, params)
}

// Truncatable is a result that knows how to shrink itself. When a result
// marshals to more than the response cap allows, the server calls
// Truncate with the byte budget for the marshalled result and sends what it
// returns, which should say "truncated": true (DESIGN §5: truncate inside
// the result, never cut JSON). A result that is not Truncatable, or whose
// Truncate still does not fit, is replaced by
// {"truncated": true, "error": "response_too_large", "size": N, "max": M}.
type Truncatable interface {
	Truncate(max int) any
}

// Encoded is a result a handler has already encoded with json.Marshal,
// so compact and HTML-escaped: the server sends EncodedJSON as it is,
// where it would marshal any other result again (which re-validates and
// copies it). An Encoded result may be Truncatable too.
type Encoded interface {
	EncodedJSON() []byte
}

// minResponse is the least MaxResponse honoured, so that an error response
// or the too-large placeholder always fits.
const minResponse = 4 << 10

// Server serves JSON-RPC over stream connections. Requests on one connection
// are handled one at a time, in order: a skill's calls stay simple to reason
// about, and concurrency comes from several connections. The zero value
// serves with default caps and answers every method with method_not_found.
type Server struct {
	Handler Handler
	// MaxRequest caps a request frame; 0 means DefaultMaxRequest.
	MaxRequest int
	// MaxResponse caps a response frame; 0 means DefaultMaxResponse, and
	// values below 4 KiB are raised to 4 KiB.
	MaxResponse int
	// SkillID goes into denials the server raises itself
	// (request_too_large), as handlers put it into theirs.
	SkillID string
	// Logger receives truncations, handler failures and panics; nil
	// discards them.
	Logger *slog.Logger
}

// tooLargeResult replaces a result that cannot be made to fit.
type tooLargeResult struct {
	Truncated bool   `json:"truncated"`
	Error     string `json:"error"`
	Size      int    `json:"size"`
	Max       int    `json:"max"`
}

// session is one connection's view of the server's settings.
type session struct {
	s           *Server
	log         *slog.Logger
	maxResponse int
	// out is the buffer of success replies, reused from one frame to the
	// next while it stays under keepBuffer.
	out []byte
}

func (s *Server) session() *session {
	ss := &session{s: s, log: s.Logger, maxResponse: s.MaxResponse}
	if ss.log == nil {
		ss.log = slog.New(slog.DiscardHandler)
	}
	if ss.maxResponse <= 0 {
		ss.maxResponse = DefaultMaxResponse
	}
	ss.maxResponse = max(ss.maxResponse, minResponse)
	return ss
}

// ServeConn serves conn until the peer hangs up or ctx is cancelled, then
// closes it. Both are a normal end and return nil; a broken stream (a
// frame cut short, a failed write) returns the error.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	defer conn.Close()
	// Closing the connection is the only way to unblock a pending Read.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	ss := s.session()
	r := NewReader(conn, s.MaxRequest)
	w := NewWriter(conn, ss.maxResponse)
	for {
		body, err := r.ReadFrame()
		var reply []byte
		switch {
		case err == nil:
			reply = ss.handleFrame(ctx, body)
		case isFrameTooLarge(err):
			reply = ss.tooLarge(err)
		case ctx.Err() != nil, hungUp(err):
			return nil
		default:
			return fmt.Errorf("jsonrpc: serve: %w", err)
		}
		if ctx.Err() != nil {
			return nil // stopping: the reply would race the close
		}
		if reply == nil {
			continue
		}
		err = w.WriteFrame(reply)
		if cap(ss.out) > keepBuffer {
			ss.out = nil // a big reply does not pin its size for the connection's life
		}
		if err != nil {
			if ctx.Err() != nil || hungUp(err) {
				return nil
			}
			return fmt.Errorf("jsonrpc: serve: %w", err)
		}
	}
}

// Serve accepts connections on ln and serves each in its own goroutine
// until ctx is cancelled or Accept fails for good. On return it has closed
// ln and every connection it accepted, and their goroutines have ended. A
// cancelled ctx returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer func() {
		stop()
		ln.Close()
		cancel() // closes every live connection through ServeConn
		wg.Wait()
	}()

	log := s.session().log
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if parent.Err() != nil {
				return nil
			}
			if !retryable(err) {
				return fmt.Errorf("jsonrpc: accept: %w", err)
			}
			// Out of descriptors and the like: back off rather than spin or
			// give up, as the condition passes when connections close.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			log.Warn("jsonrpc: accept failed; retrying", "error", err, "delay", delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			continue
		}
		delay = 0
		wg.Go(func() {
			if err := s.ServeConn(ctx, conn); err != nil {
				log.Warn("jsonrpc: connection ended", "error", err)
			}
		})
	}
}

// hungUp reports the peer closing its end between frames: a skill that
// exits is the normal end of a connection, not a failure to log.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// tooLarge answers a drained oversized frame. Its id is unknown, so the
// reply's id is null.
func (ss *session) tooLarge(err error) []byte {
	var fe *FrameTooLargeError
	errors.As(err, &fe)
	ss.log.Warn("jsonrpc: request too large", "size", fe.Size, "max", fe.Max)
	d := fe.Denial()
	d.SkillID = ss.s.SkillID
	return appendResponse(nil, nil, nil, ErrorFromGo(d))
}

// handleFrame answers one frame body: nil when nothing is to be sent back.
func (ss *session) handleFrame(ctx context.Context, body []byte) []byte {
	if !validJSON(body) {
		return appendResponse(nil, nil, nil, ErrorFromGo(ErrParse))
	}
	var reply []byte
	if firstByte(body) == '[' {
		reply = ss.handleBatch(ctx, body)
	} else {
		reply = ss.handleOne(ctx, body, ss.maxResponse)
	}
	if len(reply) > ss.maxResponse {
		// Only a huge id or a batch of many replies gets here: results
		// were already shrunk to fit.
		ss.log.Warn("jsonrpc: response over the cap after truncation; sending an error", "size", len(reply), "max", ss.maxResponse)
		return appendResponse(nil, nil, nil, ErrorFromGo(ErrInternal))
	}
	return reply
}

// handleBatch answers a batch with the array of its non-notification
// replies; nothing when all are notifications; one invalid_request error
// (not an array) when the batch is empty.
func (ss *session) handleBatch(ctx context.Context, body []byte) []byte {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return appendResponse(nil, nil, nil, ErrorFromGo(fmt.Errorf("%w: %w", ErrParse, err)))
	}
	if len(items) == 0 {
		return appendResponse(nil, nil, nil, ErrorFromGo(&RequestError{Detail: "empty batch"}))
	}
	out := append(make([]byte, 0, 512), '[')
	for _, item := range items {
		if ctx.Err() != nil {
			return nil // the connection is closing; no one will read a reply
		}
		// Room for this reply besides the comma and the closing bracket.
		reply := ss.handleOne(ctx, item, ss.maxResponse-len(out)-2)
		if reply == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, reply...)
	}
	if len(out) == 1 {
		return nil
	}
	return append(out, ']')
}

// handleOne answers one request object within room bytes; nil for a
// notification.
func (ss *session) handleOne(ctx context.Context, raw []byte, room int) []byte {
	var req Request
	if err := req.decode(raw); err != nil {
		var qe *RequestError
		var id json.RawMessage
		if errors.As(err, &qe) {
			id = qe.ID
		}
		return ss.errorResponse(id, ErrorFromGo(err), room)
	}
	result, err := ss.call(ctx, &req, room-envelopeSize(req.ID))
	if req.IsNotification() {
		if err != nil {
			ss.log.Debug("jsonrpc: notification failed", "method", req.Method, "error", err)
		}
		return nil
	}
	if err != nil {
		return ss.errorResponse(req.ID, ss.wireError(req.Method, err), room)
	}
	// The reply is written before the next frame is read: one buffer
	// serves every reply of the connection.
	ss.out = appendResponse(ss.out[:0], req.ID, result, nil)
	return ss.out
}

// call runs the handler and marshals its result to fit room bytes. A panic
// is an internal error, not the end of the broker.
func (ss *session) call(ctx context.Context, req *Request, room int) (result json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			ss.log.Error("jsonrpc: handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("%s: handler panicked: %w", req.Method, ErrInternal)
		}
	}()
	if ss.s.Handler == nil {
		return nil, ErrMethodNotFound
	}
	v, err := ss.s.Handler.Handle(ctx, req.Method, req.Params)
	if err != nil || req.IsNotification() {
		return nil, err
	}
	return ss.fit(req.Method, v, max(room, 0))
}

// fit marshals v, shrinking it when it exceeds room bytes (see Truncatable).
func (ss *session) fit(method string, v any, room int) (json.RawMessage, error) {
	var raw []byte
	if e, ok := v.(Encoded); ok {
		raw = e.EncodedJSON()
	} else {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%s: marshal result: %w", method, err)
		}
	}
	if len(raw) <= room {
		return raw, nil
	}
	size, how := len(raw), "placeholder"
	if t, ok := v.(Truncatable); ok {
		if small, err := json.Marshal(t.Truncate(room)); err == nil && len(small) <= room {
			raw, how = small, "truncate"
		}
	}
	if how == "placeholder" {
		raw, _ = json.Marshal(tooLargeResult{Truncated: true, Error: "response_too_large", Size: size, Max: ss.maxResponse})
	}
	ss.log.Warn("jsonrpc: response truncated", "method", method, "size", size, "max", ss.maxResponse, "how", how)
	return raw, nil
}

// wireError maps a handler's error, logging the ones whose text the peer
// does not get.
func (ss *session) wireError(method string, err error) *Error {
	e := ErrorFromGo(err)
	if errors.Is(e.Err(), ErrInternal) {
		ss.log.Warn("jsonrpc: handler failed", "method", method, "error", err)
	}
	return e
}

// errorResponse encodes an error reply, dropping data that would not fit.
func (ss *session) errorResponse(id json.RawMessage, e *Error, room int) []byte {
	b := appendResponse(nil, id, nil, e)
	if len(b) > room && e.Data != nil {
		b = appendResponse(b[:0], id, nil, &Error{Code: e.Code, Message: e.Message})
	}
	return b
}
