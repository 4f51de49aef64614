package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

const writeName = "Write"

// Write is the native Write tool (DESIGN §6).
//
// Prepare resolves path (a new file through its parent), checks the real
// path against x-allowed-files and puts it in place of the one asked for.
// Invoke opens the parent directory of exactly that path refusing symlinks
// on the way, writes a temporary file in it and renames it over the name.
// The rename is what makes the write safe and whole: it replaces the name
// instead of writing through it, so a symlink or hard link found there is
// replaced, never followed, and a reader sees the old file or the new one.
// What already stood at the name must be a regular file (ErrNotRegular).
type Write struct {
	// Max caps the body; 0 means DefaultWriteMax.
	Max int
}

// NewWrite is the Write tool with the default cap.
func NewWrite() Write { return Write{} }

// WriteResult is Write's result.
type WriteResult struct {
	BytesWritten int    `json:"bytes_written"`
	ContentHash  string `json:"content_hash"`
}

type writeArgs struct {
	Path string  `json:"path"`
	Body *string `json:"body"`
}

var writeSpec = sync.OnceValue(func() Spec { return fileToolSpec(writeName) })

// Spec is Write's entry of NativeSpecs.
func (Write) Spec() Spec { return writeSpec() }

// Prepare checks args before dispatch and returns them with the real path.
func (w Write) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := w.decode(args)
	if err != nil {
		return nil, err
	}
	if a.Path, err = checkWritePath(e, writeName, a.Path); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

func (w Write) decode(args json.RawMessage) (writeArgs, error) {
	var a writeArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	switch {
	case a.Path == "":
		return a, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	case a.Body == nil:
		return a, &jsonrpc.ParamsError{Field: "body", Detail: "required"}
	case len(*a.Body) > w.max():
		return a, &jsonrpc.ParamsError{Field: "body", Detail: fmt.Sprintf("over the %d-byte cap", w.max())}
	}
	return a, nil
}

func (w Write) max() int {
	if w.Max > 0 {
		return w.Max
	}
	return DefaultWriteMax
}

// Invoke writes the prepared path.
func (w Write) Invoke(ctx context.Context, call Call) (any, error) {
	a, err := w.decode(call.Args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body := []byte(*a.Body)
	if err := replaceFile(a.Path, body); err != nil {
		return nil, useError(writeName, "write", a.Path, err)
	}
	return &WriteResult{BytesWritten: len(body), ContentHash: contentHash(body)}, nil
}
