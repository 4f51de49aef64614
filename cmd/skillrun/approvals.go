package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/store"
)

func newApprovals(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List parked Bash commands and approve or deny them",
		Long: `Under exec --approvals=ask, a Bash command no rule covers is parked instead of
denied: the call waits while an operator decides. The command is shown
verbatim. Verdicts are remembered per workspace and verbatim command; a
denial is remembered too, so it is not asked again.`,
		Example: `  skillrun approvals list
  skillrun approvals approve 6f1c…
  skillrun approvals deny 6f1c…`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var asJSON bool
	list := &cobra.Command{
		Use:     "list [--json]",
		Short:   "List the commands waiting for a verdict",
		Example: "  skillrun approvals list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openState(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer st.Close()
			pending, err := st.PendingApprovals(cmd.Context())
			if err != nil {
				return withCode(exitSetup, err)
			}
			if asJSON {
				type entry struct {
					ID           string `json:"id"`
					Workspace    string `json:"workspace"`
					Command      string `json:"command"`
					InvocationID string `json:"invocation_id"`
					RequestedAt  string `json:"requested_at"`
				}
				out := []entry{}
				for _, a := range pending {
					out = append(out, entry{a.ID, a.Workspace, a.Command, a.InvocationID, a.RequestedAt.UTC().Format(time.RFC3339)})
				}
				return writeJSON(g.stdout, out)
			}
			if len(pending) == 0 {
				fmt.Fprintln(g.stdout, "no commands waiting")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tINVOCATION\tWAITING\tCOMMAND")
			for _, a := range pending {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%q\n", a.ID, a.InvocationID, time.Since(a.RequestedAt).Round(time.Second), a.Command)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	decide := func(use, short string, v store.Verdict) *cobra.Command {
		return &cobra.Command{
			Use:     use + " ID",
			Short:   short,
			Example: "  skillrun approvals " + use + " 6f1c…",
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				st, err := openState(cmd.Context(), g)
				if err != nil {
					return err
				}
				defer st.Close()
				err = st.Decide(cmd.Context(), args[0], v)
				switch {
				case errors.Is(err, store.ErrNotFound):
					return withCode(exitFailure, fmt.Errorf("no approval %s", args[0]))
				case errors.Is(err, store.ErrDecided):
					return withCode(exitFailure, fmt.Errorf("approval %s was already decided", args[0]))
				case err != nil:
					return withCode(exitSetup, err)
				}
				fmt.Fprintf(g.stdout, "%s %s\n", v, args[0])
				return nil
			},
		}
	}
	cmd.AddCommand(list, decide("approve", "Let the parked command run", store.VerdictApprove),
		decide("deny", "Refuse the parked command (remembered)", store.VerdictDeny))
	return cmd
}
