package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/skillrun/skillrun/store"
)

// writeJSON prints v as indented JSON: every --json output goes through it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// openState opens the state store under --root; failing to is a setup
// error (exit 125).
func openState(ctx context.Context, g *globals) (*store.Store, error) {
	st, err := store.Open(ctx, g.root)
	if err != nil {
		return nil, withCode(exitSetup, err)
	}
	return st, nil
}
