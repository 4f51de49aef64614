package jsonrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

const (
	// DefaultMaxRequest caps a request frame (DESIGN §5).
	DefaultMaxRequest = 1 << 20
	// DefaultMaxResponse caps a response frame (DESIGN §5).
	DefaultMaxResponse = 16 << 20
	// MaxFrameSize is the largest body the 4-byte prefix can describe.
	MaxFrameSize int64 = math.MaxUint32

	headerSize = 4
	// keepBuffer is the largest buffer a Reader or Writer keeps between
	// frames: small frames reuse memory, one big frame does not pin its
	// size for the life of the connection.
	keepBuffer = 64 << 10
)

// Reader reads frames from a stream. It is not safe for concurrent use.
type Reader struct {
	r   io.Reader
	max int64
	hdr [headerSize]byte
	buf []byte
}

// NewReader returns a Reader that refuses bodies over max bytes; max <= 0
// means DefaultMaxRequest.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: r, max: capOf(max)}
}

// ReadFrame returns the next frame's body, valid until the next call.
//
// At a clean end of stream (no byte of a new frame) it returns io.EOF; a
// stream that ends inside a frame gives an error wrapping
// io.ErrUnexpectedEOF. A body over the cap is read and discarded, never
// buffered, and reported as *FrameTooLargeError, so the caller can answer
// and go on reading the next frame.
func (fr *Reader) ReadFrame() ([]byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	size := int64(binary.BigEndian.Uint32(fr.hdr[:]))
	if size > fr.max {
		// io.Discard reads through a small pooled buffer: draining a 4 GiB
		// prefix costs time on the wire, never 4 GiB of memory.
		n, err := io.CopyN(io.Discard, fr.r, size)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("drain %d-byte frame after %d bytes: %w", size, n, err)
		}
		return nil, &FrameTooLargeError{Size: size, Max: fr.max}
	}
	body, err := fr.readBody(int(size))
	if err != nil {
		return nil, fmt.Errorf("read %d-byte frame body: %w", size, err)
	}
	return body, nil
}

// readBody reads size bytes. A large body is grown as its bytes arrive, so
// a peer that announces a large frame and sends little costs little.
func (fr *Reader) readBody(size int) ([]byte, error) {
	if size <= keepBuffer {
		if cap(fr.buf) < size {
			fr.buf = make([]byte, max(size, 4<<10))
		}
		body := fr.buf[:size]
		if _, err := io.ReadFull(fr.r, body); err != nil {
			return nil, eofIsUnexpected(err)
		}
		return body, nil
	}
	body := make([]byte, 0, keepBuffer)
	for len(body) < size {
		if len(body) == cap(body) {
			body = growTo(body, min(2*cap(body), size))
		}
		n, err := fr.r.Read(body[len(body):min(cap(body), size)])
		body = body[:len(body)+n]
		if err != nil && len(body) < size {
			return nil, eofIsUnexpected(err)
		}
	}
	return body, nil
}

func growTo(b []byte, n int) []byte {
	nb := make([]byte, len(b), n)
	copy(nb, b)
	return nb
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Writer writes frames to a stream. Each frame goes out in a single Write
// call (prefix and body in one buffer), so frames from concurrent writers on
// one net.Conn never interleave. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	max int64
	buf []byte
}

// NewWriter returns a Writer that refuses bodies over max bytes; max <= 0
// means DefaultMaxRequest.
func NewWriter(w io.Writer, max int) *Writer {
	return &Writer{w: w, max: capOf(max)}
}

// WriteFrame writes body as one frame. A body over the cap is refused with
// *FrameTooLargeError before anything is written.
func (fw *Writer) WriteFrame(body []byte) error {
	if int64(len(body)) > fw.max {
		return &FrameTooLargeError{Size: int64(len(body)), Max: fw.max}
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	frame := appendFrame(fw.buf[:0], body)
	_, err := fw.w.Write(frame)
	if cap(frame) <= keepBuffer {
		fw.buf = frame
	}
	if err != nil {
		return fmt.Errorf("write %d-byte frame: %w", len(body), err)
	}
	return nil
}

// WriteFrame writes body to w as one frame in a single Write call, with no
// cap but the wire format's.
func WriteFrame(w io.Writer, body []byte) error {
	if int64(len(body)) > MaxFrameSize {
		return &FrameTooLargeError{Size: int64(len(body)), Max: MaxFrameSize}
	}
	if _, err := w.Write(appendFrame(nil, body)); err != nil {
		return fmt.Errorf("write %d-byte frame: %w", len(body), err)
	}
	return nil
}

func appendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

func capOf(max int) int64 {
	switch {
	case max <= 0:
		return DefaultMaxRequest
	case int64(max) > MaxFrameSize:
		return MaxFrameSize
	}
	return int64(max)
}

// isFrameTooLarge reports a drained oversized frame: the one read error
// after which the stream is still usable.
func isFrameTooLarge(err error) bool {
	var fe *FrameTooLargeError
	return errors.As(err, &fe)
}
