package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// Client calls a JSON-RPC server over one connection.
//
// It is safe for concurrent use: calls take turns, each writing its request
// and reading its reply before the next starts, which is how the server
// answers anyway (in order, one at a time). One call in flight also means a
// reply with id null (the server's answer to a frame it could not read) can
// only be the answer to that call.
//
// An I/O failure, including a ctx deadline or cancellation that interrupts
// one, leaves the stream at an unknown point: the client then closes itself
// and later calls fail with ErrClosed. Dial again to go on.
type Client struct {
	conn net.Conn
	r    *Reader
	w    *Writer

	turn   chan struct{} // holds a token while a call is in flight
	nextID uint64        // guarded by turn
	broken error         // guarded by turn; why the client closed itself
	closed atomic.Bool
}

// Dial connects to the broker socket at socketPath.
func Dial(ctx context.Context, socketPath string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: dial: %w", err)
	}
	return NewClient(conn), nil
}

// NewClient returns a client that owns conn. Requests are capped at
// DefaultMaxRequest, replies at DefaultMaxResponse, the server's defaults.
func NewClient(conn net.Conn) *Client {
	return &Client{
		conn: conn,
		r:    NewReader(conn, DefaultMaxResponse),
		w:    NewWriter(conn, DefaultMaxRequest),
		turn: make(chan struct{}, 1),
	}
}

// Close closes the connection, interrupting a call in flight.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("jsonrpc: close: %w", err)
	}
	return nil
}

// Call calls method with params (nil for none; otherwise something that
// marshals to a JSON object or array) and decodes the result into result
// unless it is nil. An error response comes back as the Go error it
// stands for (see ErrorToGo): errors.Is(err, enforce.ErrScopeViolation),
// errors.Is(err, ErrMethodNotFound) and so on.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if err := c.call(ctx, method, params, result); err != nil {
		return fmt.Errorf("jsonrpc: call %s: %w", method, err)
	}
	return nil
}

// Notify sends a notification: no reply, so no error from the server either.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	body, err := encodeRequest(nil, method, params)
	if err != nil {
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	if err := c.acquire(ctx); err != nil {
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	defer c.release()
	defer c.watch(ctx)()
	if err := c.send(ctx, body); err != nil {
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	return nil
}

// CallTool calls tool.call for tool with args (nil sends {}) and the W3C
// traceparent to continue (empty: the broker starts the trace).
func (c *Client) CallTool(ctx context.Context, tool string, args any, traceparent string, result any) error {
	raw := json.RawMessage(`{}`)
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("jsonrpc: call tool %s: marshal args: %w", tool, err)
		}
		raw = b
	}
	return c.Call(ctx, MethodToolCall, ToolCallParams{Tool: tool, Args: raw, Traceparent: traceparent}, result)
}

func (c *Client) call(ctx context.Context, method string, params, result any) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	c.nextID++
	id := strconv.AppendUint(nil, c.nextID, 10)
	body, err := encodeRequest(id, method, params)
	if err != nil {
		return err
	}
	resp, err := c.roundTrip(ctx, body, id)
	if err != nil {
		return err
	}
	if resp.Error != nil {
		return resp.Error.Err()
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// acquire waits for the client's turn, or for ctx.
func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case c.broken != nil:
		c.release()
		return c.broken
	case c.closed.Load():
		c.release()
		return ErrClosed
	}
	return nil
}

func (c *Client) release() { <-c.turn }

// send writes one request frame. A request over the cap is refused before
// anything is written, as the server would refuse it: with a
// request_too_large denial, and the client stays usable.
func (c *Client) send(ctx context.Context, body []byte) error {
	err := c.w.WriteFrame(body)
	var fe *FrameTooLargeError
	if errors.As(err, &fe) {
		return fmt.Errorf("%w: %w", fe.Denial(), fe)
	}
	if err != nil {
		return c.fail(ctx, err)
	}
	return nil
}

// roundTrip sends body and reads the reply to id.
func (c *Client) roundTrip(ctx context.Context, body, id []byte) (*Response, error) {
	defer c.watch(ctx)()
	if err := c.send(ctx, body); err != nil {
		return nil, err
	}
	frame, err := c.r.ReadFrame()
	if isFrameTooLarge(err) {
		// Drained: the stream is still aligned, only this reply is lost.
		return nil, fmt.Errorf("read response: %w", err)
	}
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	resp, err := decodeResponse(frame)
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	if string(resp.ID) == string(id) || (string(resp.ID) == "null" && resp.Error != nil) {
		return resp, nil
	}
	return nil, c.fail(ctx, fmt.Errorf("%w: id %s, want %s", ErrInvalidResponse, resp.ID, id))
}

// watch makes the connection's I/O respect ctx: its deadline, and its
// cancellation through an immediate deadline. The returned func undoes the
// watch and waits for a cancellation in progress, so it cannot land on the
// next call's I/O.
func (c *Client) watch(ctx context.Context) func() {
	deadline, _ := ctx.Deadline()
	_ = c.conn.SetDeadline(deadline) // zero: no deadline
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = c.conn.SetDeadline(time.Unix(1, 0))
	})
	return func() {
		if !stop() {
			<-done
		}
	}
}

// fail closes the client after an I/O error and returns the error, as a
// context error when ctx is what interrupted the I/O.
func (c *Client) fail(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		err = fmt.Errorf("%w: %w", cerr, err)
	} else if d, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
		// The connection's deadline can fire a moment before ctx's timer.
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	if c.closed.Load() {
		err = fmt.Errorf("%w: %w", ErrClosed, err) // Close interrupted this call
	}
	c.broken = fmt.Errorf("%w after: %w", ErrClosed, err)
	c.closed.Store(true)
	_ = c.conn.Close()
	return err
}

// encodeRequest marshals a request; a nil id makes a notification.
func encodeRequest(id json.RawMessage, method string, params any) ([]byte, error) {
	req := Request{JSONRPC: Version, ID: id, Method: method}
	if params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("marshal params: %w", err)
		}
		switch firstByte(raw) {
		case '{', '[':
			req.Params = raw
		case 'n': // a nil map, slice or pointer: no params
		default:
			return nil, &ParamsError{Detail: "params must marshal to a JSON object or array"}
		}
	}
	body, err := json.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("marshal request: %w", err)
	}
	return body, nil
}
