package tools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// The opener's sentinels. They live here rather than in a tools/errors.go
// only because this change may not add one; move them when it exists.
var (
	// ErrSymlink means a symlink was found on the way to a path that was
	// checked as symlink-free: someone swapped one in after the check.
	ErrSymlink = errors.New("symlink on the path")
	// ErrNotRegular means the path names something other than a regular
	// file (a directory, a FIFO, a device).
	ErrNotRegular = errors.New("not a regular file")
)

// checkOpenPath is OpenNoFollow's first step on every platform: it
// refuses paths the enforcer would never have produced. A
// ".." is refused because RESOLVE_NO_SYMLINKS does not stop it: a directory
// renamed between check and use could take ".." somewhere else.
func checkOpenPath(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.IndexByte(path, 0) >= 0 {
		return &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	if path == "/" {
		return &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return nil
}

// DefaultReadMax caps the bytes one Read returns. Base64 of 8 MiB is
// about 11 MiB, which stays under the 16 MiB response cap.
const DefaultReadMax = 8 << 20

const readName = "Read"

// Read is the native Read tool (DESIGN §6).
//
// Its arguments reach Invoke only through Prepare: Prepare resolves path,
// checks it against x-allowed-files and puts the real path in its place;
// Invoke then opens exactly that path refusing symlinks anywhere on it, so
// a link swapped in between check and use fails instead of being followed.
//
// content_hash is the SHA-256 of the whole file, not of the window that
// offset and limit select: a skill reading in pieces gets the same hash
// every time and can tell the file changed between pieces. The whole file
// is read once, in one pass, so the hash, size and body all describe the
// same bytes even while someone else writes the file.
type Read struct {
	// Max caps the body; 0 means DefaultReadMax.
	Max int64
}

// NewRead is the Read tool with the default cap.
func NewRead() Read { return Read{} }

// ReadResult is Read's result.
type ReadResult struct {
	// Body is the bytes read: the text itself when valid UTF-8, else base64.
	Body string `json:"body"`
	// Encoding is "base64" when Body is; absent for text.
	Encoding string `json:"encoding,omitempty"`
	// ContentHash is the hex SHA-256 of the whole file.
	ContentHash string `json:"content_hash"`
	// Size is the whole file's size in bytes.
	Size int64 `json:"size"`
	// Truncated says the body stops short of what was asked for: the
	// window exceeded the cap, or the response cap cut it further.
	Truncated bool `json:"truncated,omitempty"`
}

type readArgs struct {
	Path   string `json:"path"`
	Offset *int64 `json:"offset,omitempty"`
	Limit  *int64 `json:"limit,omitempty"`
}

var readSpec = sync.OnceValue(func() Spec {
	for _, s := range NativeSpecs() {
		if s.Name == readName {
			return s
		}
	}
	panic("tools: NativeSpecs has no Read")
})

// Spec is Read's entry of NativeSpecs, so the schema lives in one place.
func (Read) Spec() Spec { return readSpec() }

// Prepare checks args against the policy before dispatch: path is
// resolved and matched against x-allowed-files, and the returned args
// carry the real path instead. Bad arguments wrap jsonrpc.ErrInvalidParams;
// a path outside the grant is the enforcer's file_violation denial.
func (Read) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := decodeReadArgs(args)
	if err != nil {
		return nil, err
	}
	resolved, err := checkFile(e, readName, a.Path)
	if err != nil {
		return nil, err
	}
	a.Path = resolved
	return json.Marshal(a)
}

// checkFile is e.CheckFile, made quicker for a path with no symlink on
// it: the enforcer resolves a path with filepath.EvalSymlinks (an lstat
// and some garbage per component), and such a path resolves to itself,
// cleaned. One O_PATH open tells; any other path, or any doubt, goes the
// enforcer's way. A symlink swapped in after either check is refused at
// Invoke all the same.
func checkFile(e *enforce.Enforcer, tool, p string) (string, error) {
	if filepath.IsAbs(p) && strings.IndexByte(p, 0) < 0 {
		if clean := filepath.Clean(p); symlinkFree(clean) {
			if err := e.CheckFilePath(tool, clean); err != nil {
				return "", err
			}
			return clean, nil
		}
	}
	return e.CheckFile(tool, p)
}

func decodeReadArgs(args json.RawMessage) (readArgs, error) {
	var a readArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	switch {
	case a.Path == "":
		return a, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	case a.Offset != nil && *a.Offset < 0:
		return a, &jsonrpc.ParamsError{Field: "offset", Detail: "must be ≥ 0"}
	case a.Limit != nil && *a.Limit < 0:
		return a, &jsonrpc.ParamsError{Field: "limit", Detail: "must be ≥ 0"}
	}
	return a, nil
}

// Invoke reads the prepared path. A symlink met on the way is a
// file_violation denial: the path was symlink-free when checked, so one
// appearing now is a swap, not an accident.
func (r Read) Invoke(ctx context.Context, call Call) (any, error) {
	a, err := decodeReadArgs(call.Args)
	if err != nil {
		return nil, err
	}
	f, size, err := openForRead(a.Path)
	if errors.Is(err, ErrSymlink) {
		return nil, enforce.Deny(enforce.ReasonFileViolation, readName, "symlink on the way to %s", a.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	defer f.Close()

	limit := r.max()
	truncated := false
	if a.Limit != nil && *a.Limit <= limit {
		limit = *a.Limit
	} else {
		// No limit, or one over the cap: anything past the cap is cut.
		truncated = true
	}
	var offset int64
	if a.Offset != nil {
		offset = *a.Offset
	}
	w := &window{h: sha256.New(), start: offset, end: satAdd(offset, limit)}
	if size >= 0 {
		// The size is a hint only: the file may change while it is read.
		w.buf = make([]byte, 0, max(min(size, w.end)-offset, 0))
	}
	buf := copyBuffers.Get().(*[copyBufferSize]byte)
	defer copyBuffers.Put(buf)
	if _, err := io.CopyBuffer(w, ctxReader{ctx, f}, buf[:]); err != nil {
		return nil, fmt.Errorf("read %s: %w", a.Path, err)
	}
	// Cut by the cap only if the file really went on past the window.
	truncated = truncated && w.n > w.end
	return newReadResult(w.buf, hex.EncodeToString(w.h.Sum(nil)), w.n, truncated), nil
}

// copyBuffers saves each Read a fresh buffer: most reads are small, and
// the buffer would be most of what they allocate.
const copyBufferSize = 64 << 10

var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (r Read) max() int64 {
	if r.Max > 0 {
		return r.Max
	}
	return DefaultReadMax
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

func newReadResult(body []byte, hash string, size int64, truncated bool) *ReadResult {
	res := &ReadResult{ContentHash: hash, Size: size, Truncated: truncated}
	if utf8.Valid(body) {
		res.Body = string(body)
	} else {
		res.Body, res.Encoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return res
}

// window hashes every byte written to it and keeps those in [start, end).
type window struct {
	h          hash.Hash
	start, end int64
	n          int64 // bytes seen so far
	buf        []byte
}

func (w *window) Write(p []byte) (int, error) {
	w.h.Write(p) // a hash never fails
	lo, hi := max(w.start-w.n, 0), min(w.end-w.n, int64(len(p)))
	if lo < hi {
		w.buf = append(w.buf, p[lo:hi]...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// ctxReader stops a long read (hashing a big file) when the call is
// cancelled: the server waits for handlers when it stops.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Truncate implements jsonrpc.Truncatable: escaped text can grow up to six
// times in JSON, so an 8 MiB body may still not fit the response cap. The
// body is cut to fit max bytes; hash and size still describe the file.
func (r *ReadResult) Truncate(max int) any {
	out := *r
	out.Truncated = true
	out.Body = ""
	overhead, _ := json.Marshal(&out)
	room := max - len(overhead)
	if room <= 0 {
		return &out
	}
	if r.Encoding == "base64" {
		// Keep whole quanta: 4 characters encode 3 bytes.
		out.Body = r.Body[:min(len(r.Body), room/4*4)]
		return &out
	}
	out.Body = r.Body[:escapedPrefix(r.Body, room)]
	return &out
}

// escapedPrefix is the length of the longest prefix of s, cut at a rune
// boundary, whose JSON string encoding (as encoding/json writes it) takes at
// most room bytes.
func escapedPrefix(s string, room int) int {
	used := 0
	for i, c := range s {
		n := escapedLen(c)
		if used+n > room {
			return i
		}
		used += n
	}
	return len(s)
}

func escapedLen(c rune) int {
	switch {
	case c == '"', c == '\\', c == '\n', c == '\r', c == '\t', c == '\b', c == '\f':
		return 2
	case c < 0x20, c == '<', c == '>', c == '&', c == '\u2028', c == '\u2029':
		return 6
	}
	return utf8.RuneLen(c)
}
