package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/skillrun/skillrun/enforce"
)

// Spec describes a tool to the policy and to clients.
type Spec struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	InputSchema  json.RawMessage      `json:"inputSchema"`
	Capabilities []enforce.Capability `json:"capabilities"`
}

// Call is one tool invocation as the broker hands it to a tool, after the
// enforcer has checked it.
type Call struct {
	Args json.RawMessage
	// TraceParent is the W3C traceparent the tool propagates (HttpFetch and
	// HttpPost send it as a header); TraceID is its trace id (MemoryEmit
	// stores it on the row). The broker fills both for every call.
	TraceParent string
	TraceID     string
}

// Tool is implemented by every native and MCP tool.
type Tool interface {
	Spec() Spec
	Invoke(ctx context.Context, call Call) (any, error)
}

// ErrDuplicate means two tools were registered under one name.
var ErrDuplicate = errors.New("tool registered twice")

// Registry is the one list of tools a broker serves. It is built once at
// startup from an explicit list, never by init side effects, and is
// read-only afterwards.
type Registry struct {
	byName map[string]Tool
	specs  map[string]Spec
	order  []string
}

// NewRegistry registers tools in order. Specs without an implementation
// (e.g. NativeSpecs for validate, which dispatches nothing) may be added
// with WithSpecs.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: map[string]Tool{}, specs: map[string]Spec{}}
	for _, t := range tools {
		if err := r.add(t.Spec(), t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Catalog is a registry of descriptions only: what validate and the
// policy need to know which names exist, without serving any call.
func Catalog(specs []Spec) (*Registry, error) {
	r := &Registry{byName: map[string]Tool{}, specs: map[string]Spec{}}
	for _, s := range specs {
		if err := r.add(s, nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Registry) add(s Spec, t Tool) error {
	if _, dup := r.specs[s.Name]; dup {
		return fmt.Errorf("%s: %w", s.Name, ErrDuplicate)
	}
	r.specs[s.Name] = s
	if t != nil {
		r.byName[s.Name] = t
	}
	r.order = append(r.order, s.Name)
	return nil
}

// Lookup implements enforce.Catalog.
func (r *Registry) Lookup(name string) (enforce.ToolSpec, bool) {
	s, ok := r.specs[name]
	if !ok {
		return enforce.ToolSpec{}, false
	}
	return enforce.ToolSpec{Name: s.Name, Capabilities: slices.Clone(s.Capabilities)}, true
}

// Tool returns the implementation registered under name.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Specs lists every registered tool's description in registration order.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.specs[n])
	}
	return out
}
