package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/invocation"
)

func newGC(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove what dead supervisors left: processes, containers, cgroups, sockets",
		Long: `gc finds invocations still recorded as active whose skillrun supervisor is no
longer running (it was killed, or the machine lost power) and removes what
they left: the sandbox's processes, the container state, the cgroup, the
broker socket and the state directory. It records each as outcome
supervisor_lost. Invocations whose supervisor is alive are left alone.`,
		Example: "  skillrun gc",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			got, err := invocation.GC(cmd.Context(), g.root, g.log)
			if err != nil {
				return withCode(exitSetup, err)
			}
			var failed int
			for _, c := range got {
				fmt.Fprintf(g.stdout, "gc: invocation %s: removed %s\n", c.InvocationID, strings.Join(c.Removed, ", "))
				if c.Err != nil {
					failed++
					fmt.Fprintf(g.stderr, "gc: invocation %s: %v\n", c.InvocationID, c.Err)
				}
			}
			if len(got) == 0 {
				fmt.Fprintln(g.stdout, "gc: nothing to collect")
			}
			if failed > 0 {
				return &exitError{code: exitFailure, err: fmt.Errorf("%d invocations not fully collected", failed)}
			}
			return nil
		},
	}
}
