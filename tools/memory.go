package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/store"
)

// MemoryStore is what the memory tools need of the state store; *store.Store
// has it. The rows are store.MemoryRow rather than a type of this package:
// the store depends on nothing of ours, and a second row type would only
// need an adapter kept in step with the first.
//
// Every method takes the tenant; the tools always pass their invocation's,
// never one from the skill's arguments.
type MemoryStore interface {
	MemoryGet(ctx context.Context, tenant, path string) (store.MemoryRow, error)
	MemoryPut(ctx context.Context, row store.MemoryRow) error
	MemorySearch(ctx context.Context, tenant, query, prefix string, limit int) ([]store.MemoryRow, error)
}

var _ MemoryStore = (*store.Store)(nil)

// MaxMemoryBody caps the body one MemoryEmit stores. The 1 MiB request cap
// already stops bigger bodies on the socket; this bounds direct callers
// too, and keeps a MemoryRead of any emitted row well under the response
// cap even when every byte needs escaping.
const MaxMemoryBody = 1 << 20

const (
	memoryReadName   = "MemoryRead"
	memorySearchName = "MemorySearch"
	memoryEmitName   = "MemoryEmit"
)

var memorySpecs = sync.OnceValue(func() map[string]Spec {
	out := map[string]Spec{}
	for _, s := range NativeSpecs() {
		switch s.Name {
		case memoryReadName, memorySearchName, memoryEmitName:
			out[s.Name] = s
		}
	}
	return out
})

// memorySpec is a memory tool's NativeSpecs entry, so each schema is
// written once.
func memorySpec(name string) Spec {
	s, ok := memorySpecs()[name]
	if !ok {
		panic("tools: NativeSpecs has no " + name)
	}
	return s
}

// MemoryTools are the three memory tools of one invocation, for the
// registry. scope must be the Enforcer the broker checks calls with:
// MemorySearch filters its results through it.
func MemoryTools(st MemoryStore, tenant, invocationID string, scope *enforce.Enforcer) []Tool {
	return []Tool{NewMemoryRead(st, tenant), NewMemorySearch(st, tenant, scope), NewMemoryEmit(st, tenant, invocationID)}
}

// preparedMemoryPath re-checks, at use, that a path came out of
// CanonicalMemoryPath. Prepare put it there; a path that is not canonical
// means Invoke was reached some other way, and it must not reach the store,
// where a glob-shaped spelling could name a row the check never saw.
func preparedMemoryPath(tool, p string) error {
	if c, err := enforce.CanonicalMemoryPath(p); err != nil || c != p {
		return enforce.Deny(enforce.ReasonScopeViolation, tool, "path was not prepared: %q", p)
	}
	return nil
}

// MemoryRead is the native MemoryRead tool (DESIGN §6): one row of the
// invocation's tenant, at a path Prepare canonicalised and checked.
type MemoryRead struct {
	st     MemoryStore
	tenant string
}

// NewMemoryRead reads rows of tenant from st. An empty tenant finds
// nothing: the store refuses to write one, and the tool never guesses.
func NewMemoryRead(st MemoryStore, tenant string) MemoryRead {
	return MemoryRead{st: st, tenant: tenant}
}

// MemoryReadResult is MemoryRead's result. TraceID and InvocationID are
// those of the call that last wrote the row.
type MemoryReadResult struct {
	Body         string    `json:"body"`
	ContentHash  string    `json:"content_hash"`
	TraceID      string    `json:"trace_id"`
	InvocationID string    `json:"invocation_id"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type memoryPathArgs struct {
	Path string `json:"path"`
}

func decodeMemoryPath(args json.RawMessage) (memoryPathArgs, error) {
	var a memoryPathArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	if a.Path == "" {
		return a, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	}
	return a, nil
}

// Spec is MemoryRead's entry of NativeSpecs.
func (MemoryRead) Spec() Spec { return memorySpec(memoryReadName) }

// Prepare canonicalises path and checks it against allowed_memory_scopes;
// the returned args carry the canonical path, the only one Invoke uses.
func (MemoryRead) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := decodeMemoryPath(args)
	if err != nil {
		return nil, err
	}
	if a.Path, err = e.CheckMemoryPath(memoryReadName, a.Path); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// Invoke reads the prepared path. A missing row wraps fs.ErrNotExist, which
// the broker reports as a not_found tool error, as it does for Read.
func (m MemoryRead) Invoke(ctx context.Context, call Call) (any, error) {
	a, err := decodeMemoryPath(call.Args)
	if err != nil {
		return nil, err
	}
	if err := preparedMemoryPath(memoryReadName, a.Path); err != nil {
		return nil, err
	}
	row, err := m.st.MemoryGet(ctx, m.tenant, a.Path)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("memory read %s: %w: %w", a.Path, fs.ErrNotExist, err)
	}
	if err != nil {
		return nil, fmt.Errorf("memory read %s: %w", a.Path, err)
	}
	if row.Tenant != m.tenant || row.Path != a.Path {
		// The store filters in SQL; a row that is not the one asked for
		// is a store bug that must not cross tenants.
		return nil, fmt.Errorf("memory read %s: store returned %s/%s", a.Path, row.Tenant, row.Path)
	}
	return &MemoryReadResult{Body: row.Body, ContentHash: row.ContentHash, TraceID: row.TraceID,
		InvocationID: row.InvocationID, UpdatedAt: row.UpdatedAt}, nil
}

// MemoryEmit is the native MemoryEmit tool (DESIGN §6): it writes one row
// of the invocation's tenant, stamped with the call's trace and the
// invocation, so a row can be traced back to the call that wrote it
// (seed criterion 19).
type MemoryEmit struct {
	st           MemoryStore
	tenant       string
	invocationID string
}

// NewMemoryEmit writes rows of tenant to st on behalf of invocationID.
func NewMemoryEmit(st MemoryStore, tenant, invocationID string) MemoryEmit {
	return MemoryEmit{st: st, tenant: tenant, invocationID: invocationID}
}

// MemoryEmitResult is MemoryEmit's result: the canonical path the row was
// stored at (which may differ from the one sent), its hash and trace.
type MemoryEmitResult struct {
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
	TraceID     string `json:"trace_id"`
}

type memoryEmitArgs struct {
	Path string  `json:"path"`
	Body *string `json:"body"` // a pointer: the empty body is a body, a missing one is not
}

func decodeMemoryEmit(args json.RawMessage) (memoryEmitArgs, error) {
	var a memoryEmitArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, err
	}
	switch {
	case a.Path == "":
		return a, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	case a.Body == nil:
		return a, &jsonrpc.ParamsError{Field: "body", Detail: "required"}
	case len(*a.Body) > MaxMemoryBody:
		return a, &jsonrpc.ParamsError{Field: "body", Detail: fmt.Sprintf("longer than %d bytes", MaxMemoryBody)}
	}
	return a, nil
}

// Spec is MemoryEmit's entry of NativeSpecs.
func (MemoryEmit) Spec() Spec { return memorySpec(memoryEmitName) }

// Prepare checks the body's size and the path, as MemoryRead's Prepare
// does; the returned args carry the canonical path.
func (MemoryEmit) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := decodeMemoryEmit(args)
	if err != nil {
		return nil, err
	}
	if a.Path, err = e.CheckMemoryPath(memoryEmitName, a.Path); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// Invoke stores the row. The trace id is the broker's (Call.TraceID), never
// one from the arguments: a skill cannot file its writes under another
// trace.
func (m MemoryEmit) Invoke(ctx context.Context, call Call) (any, error) {
	a, err := decodeMemoryEmit(call.Args)
	if err != nil {
		return nil, err
	}
	if err := preparedMemoryPath(memoryEmitName, a.Path); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(*a.Body))
	row := store.MemoryRow{Tenant: m.tenant, Path: a.Path, Body: *a.Body, ContentHash: hex.EncodeToString(sum[:]),
		TraceID: call.TraceID, InvocationID: m.invocationID}
	if err := m.st.MemoryPut(ctx, row); err != nil {
		return nil, fmt.Errorf("memory emit %s: %w", a.Path, err)
	}
	return &MemoryEmitResult{Path: row.Path, ContentHash: row.ContentHash, TraceID: row.TraceID}, nil
}
