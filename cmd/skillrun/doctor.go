package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/runtime"
)

func newDoctor(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Report what this host can enforce",
		Long: `doctor probes the host: namespaces, user namespaces, seccomp, the Landlock
ABI, the cgroup version and controllers, whether skillrun runs as root, and
the isolation level exec will use, and the shim binary its sandboxes run. Each missing feature is named with the
file or syscall that said no.`,
		Example: `  skillrun doctor
  skillrun doctor --json | jq .landlock_abi`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h := runtime.Probe(cmd.Context())
			shim := "unknown"
			if exe, err := os.Executable(); err != nil {
				h.Problems = append(h.Problems, fmt.Sprintf("shim: locate the skillrun binary: %v", err))
			} else if path, dedicated, err := runtime.LocateShim(exe); err != nil {
				h.Problems = append(h.Problems, fmt.Sprintf("%v (exec refuses to start)", err))
			} else if dedicated {
				shim = path
			} else {
				shim = path + " itself (install " + runtime.ShimName + " beside it: every sandbox starts faster)"
			}
			if asJSON {
				return writeJSON(g.stdout, h)
			}
			yes := map[bool]string{true: "yes", false: "no"}
			row := func(k, v string) { fmt.Fprintf(g.stdout, "%-18s %s\n", k, v) }
			row("os", h.OS+" "+h.Kernel)
			row("root", yes[h.Root])
			row("namespaces", strings.Join(h.Namespaces, " "))
			row("user namespaces", yes[h.UserNamespaces])
			row("seccomp", yes[h.Seccomp])
			row("landlock abi", fmt.Sprint(h.LandlockABI))
			row("cgroups", fmt.Sprintf("v%d: %s", h.CgroupVersion, strings.Join(h.CgroupControllers, " ")))
			row("isolation", string(h.Isolation))
			row("shim", shim)
			for _, p := range h.Problems {
				fmt.Fprintf(g.stdout, "problem: %s\n", p)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the probe as JSON")
	return cmd
}
