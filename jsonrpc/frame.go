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

// Reader reads frames from a stream. It reads ahead: one read takes in a
// frame's prefix and body, and whatever follows them, up to its buffer, so
// a frame costs one read(2), not two. Nothing else may read the stream. It
// is not safe for concurrent use.
type Reader struct {
	r   io.Reader
	max int64
	// buf[start:end] is read and not yet returned; err is the error the
	// stream gave with the last bytes it returned, held until they are
	// used up.
	buf        []byte
	start, end int
	err        error
}

// readBuffer is the buffer a Reader starts with: a few small frames.
const readBuffer = 4 << 10

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
	if err := fr.fill(headerSize); err != nil {
		if err == io.EOF && fr.end == fr.start {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read frame header: %w", eofIsUnexpected(err))
	}
	size := int64(binary.BigEndian.Uint32(fr.buf[fr.start:]))
	fr.start += headerSize
	if size > fr.max {
		return nil, fr.drain(size)
	}
	body, err := fr.readBody(int(size))
	if err != nil {
		return nil, fmt.Errorf("read %d-byte frame body: %w", size, err)
	}
	return body, nil
}

// fill reads until n bytes are buffered (n <= keepBuffer), reading as much
// as the stream has ready each time.
func (fr *Reader) fill(n int) error {
	if fr.end-fr.start >= n {
		return nil
	}
	if fr.start+n > cap(fr.buf) {
		buf := fr.buf
		if n > cap(buf) {
			buf = make([]byte, max(n, readBuffer))
		}
		fr.end = copy(buf[:cap(buf)], fr.buf[fr.start:fr.end])
		fr.buf, fr.start = buf[:cap(buf)], 0
	}
	for fr.end-fr.start < n {
		if err := fr.takeErr(); err != nil {
			return err
		}
		k, err := fr.r.Read(fr.buf[fr.end:cap(fr.buf)])
		fr.end += k
		fr.err = err
	}
	return nil
}

// takeErr returns the error held back with the last bytes read, once, as
// an unbuffered read would have returned it once.
func (fr *Reader) takeErr() error {
	err := fr.err
	fr.err = nil
	return err
}

// take returns up to n buffered bytes and consumes them.
func (fr *Reader) take(n int) []byte {
	n = min(n, fr.end-fr.start)
	b := fr.buf[fr.start : fr.start+n]
	fr.start += n
	if fr.start == fr.end {
		fr.start, fr.end = 0, 0
	}
	return b
}

// drain discards the body of an oversized frame. io.Discard reads through
// a small pooled buffer: draining a 4 GiB prefix costs time on the wire,
// never 4 GiB of memory.
func (fr *Reader) drain(size int64) error {
	buffered := int64(len(fr.take(int(min(size, int64(fr.end-fr.start))))))
	var err error
	n := buffered
	if n < size {
		if err = fr.takeErr(); err == nil {
			var k int64
			k, err = io.CopyN(io.Discard, fr.r, size-n)
			n += k
		}
	}
	if err != nil {
		return fmt.Errorf("drain %d-byte frame after %d bytes: %w", size, n, eofIsUnexpected(err))
	}
	return &FrameTooLargeError{Size: size, Max: fr.max}
}

// readBody reads size bytes. A large body is grown as its bytes arrive, so
// a peer that announces a large frame and sends little costs little.
func (fr *Reader) readBody(size int) ([]byte, error) {
	if size <= keepBuffer-headerSize {
		if err := fr.fill(size); err != nil {
			return nil, eofIsUnexpected(err)
		}
		return fr.take(size), nil
	}
	body := make([]byte, 0, keepBuffer)
	body = append(body, fr.take(size)...)
	if err := fr.takeErr(); err != nil && len(body) < size {
		return nil, eofIsUnexpected(err)
	}
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
