package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/skillrun/skillrun/skill"
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

// sizeFlag is a byte count flag that reads 256MiB, 1GiB or a plain number.
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string {
	if f.v == nil {
		return ""
	}
	return skill.FormatSize(*f.v)
}

func (f sizeFlag) Set(s string) error {
	n, err := skill.ParseSize(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return fmt.Errorf("%q must be positive", s)
	}
	*f.v = n
	return nil
}

func (sizeFlag) Type() string { return "size" }
