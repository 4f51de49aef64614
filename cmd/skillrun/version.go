package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the skillrun version",
		Example: "  skillrun version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			_, err := fmt.Fprintf(g.stdout, "skillrun %s\n", v)
			return err
		},
	}
}
