package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

const editName = "Edit"

// Edit is the native Edit tool (DESIGN §6): an exact string replacement.
//
// The path is checked as Write's is. Invoke reads the file and writes the
// result through one descriptor of its parent directory, opened refusing
// symlinks, and replaces the file by rename as Write does, so the bytes
// read and the file replaced are in the same directory, the checked one.
// An old string that is absent, or present more than once without
// replace_all, is a tool failure (old_not_found, old_ambiguous) that
// leaves the file untouched: the arguments were valid, the file did not
// fit them.
//
// Edit does not lock: a write by someone else between its read and its
// rename is lost, as with any editor.
type Edit struct {
	// Max caps the file read and the file written; 0 means
	// DefaultWriteMax.
	Max int
}

// NewEdit is the Edit tool with the default cap.
func NewEdit() Edit { return Edit{} }

// EditResult is Edit's result. ContentHash is of the file as written.
type EditResult struct {
	Replacements int    `json:"replacements"`
	ContentHash  string `json:"content_hash"`
}

type editArgs struct {
	Path       string  `json:"path"`
	Old        string  `json:"old"`
	New        *string `json:"new"`
	ReplaceAll bool    `json:"replace_all,omitempty"`
}

var editSpec = sync.OnceValue(func() Spec { return fileToolSpec(editName) })

// Spec is Edit's entry of NativeSpecs.
func (Edit) Spec() Spec { return editSpec() }

// Prepare checks args before dispatch and returns them with the real path.
func (ed Edit) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := ed.decode(args)
	if err != nil {
		return nil, err
	}
	if a.Path, err = checkWritePath(e, editName, a.Path); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

func (ed Edit) decode(args json.RawMessage) (editArgs, error) {
	var a editArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	switch {
	case a.Path == "":
		return a, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	case a.Old == "":
		// An empty old string occurs everywhere and nowhere in particular.
		return a, &jsonrpc.ParamsError{Field: "old", Detail: "required, non-empty"}
	case a.New == nil:
		return a, &jsonrpc.ParamsError{Field: "new", Detail: "required"}
	case len(a.Old) > ed.max():
		return a, &jsonrpc.ParamsError{Field: "old", Detail: fmt.Sprintf("over the %d-byte cap", ed.max())}
	case len(*a.New) > ed.max():
		return a, &jsonrpc.ParamsError{Field: "new", Detail: fmt.Sprintf("over the %d-byte cap", ed.max())}
	}
	return a, nil
}

func (ed Edit) max() int {
	if ed.Max > 0 {
		return ed.Max
	}
	return DefaultWriteMax
}

// Invoke edits the prepared path.
func (ed Edit) Invoke(ctx context.Context, call Call) (any, error) {
	a, err := ed.decode(call.Args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &EditResult{}
	err = editFile(a.Path, int64(ed.max()), func(data []byte) ([]byte, error) {
		out, n, err := ed.replace(data, a)
		if err != nil {
			return nil, err
		}
		res.Replacements, res.ContentHash = n, contentHash(out)
		return out, nil
	})
	if err == nil {
		return res, nil
	}
	if _, ok := AsFailure(err); ok {
		return nil, err // the edit did not fit the file, which is untouched
	}
	if errors.Is(err, ErrFileTooLarge) {
		return nil, Fail(ReasonFileTooLarge, err)
	}
	return nil, useError(editName, "edit", a.Path, err)
}

// replace applies the edit to data, or says why it does not fit.
func (ed Edit) replace(data []byte, a editArgs) ([]byte, int, error) {
	old, repl := []byte(a.Old), []byte(*a.New)
	n := bytes.Count(data, old)
	switch {
	case n == 0:
		return nil, 0, Fail(ReasonOldNotFound, ErrOldNotFound)
	case n > 1 && !a.ReplaceAll:
		return nil, 0, Fail(ReasonOldAmbiguous, fmt.Errorf("%w: %d times", ErrOldAmbiguous, n))
	}
	if size := len(data) + n*(len(repl)-len(old)); size > ed.max() {
		return nil, 0, Fail(ReasonFileTooLarge, fmt.Errorf("%w: the result is %d bytes", ErrFileTooLarge, size))
	}
	return bytes.Replace(data, old, repl, n), n, nil
}
