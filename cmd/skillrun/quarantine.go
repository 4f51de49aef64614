package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/store"
)

func newQuarantine(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List quarantined skills, or release one",
		Long: `A skill is quarantined, by content hash, when it attempted something outside
its declaration under exec --on-violation=quarantine (DESIGN §9). exec refuses
a quarantined skill until an operator releases it.`,
		Example: `  skillrun quarantine list
  skillrun quarantine release report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var asJSON bool
	list := &cobra.Command{
		Use:     "list [--json]",
		Short:   "List quarantined skills",
		Example: "  skillrun quarantine list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openState(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer st.Close()
			entries, err := st.QuarantineList(cmd.Context())
			if err != nil {
				return withCode(exitSetup, err)
			}
			if asJSON {
				type entry struct {
					SkillID      string `json:"skill_id"`
					ContentHash  string `json:"content_hash"`
					Reason       string `json:"reason"`
					InvocationID string `json:"invocation_id"`
					At           string `json:"at"`
				}
				out := []entry{}
				for _, q := range entries {
					out = append(out, entry{q.SkillID, q.ContentHash, q.Reason, q.InvocationID, q.At.UTC().Format(time.RFC3339)})
				}
				return writeJSON(g.stdout, out)
			}
			if len(entries) == 0 {
				fmt.Fprintln(g.stdout, "no quarantined skills")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SKILL\tCONTENT\tSINCE\tINVOCATION\tREASON")
			for _, q := range entries {
				fmt.Fprintf(tw, "%s\tsha256:%.12s\t%s\t%s\t%s\n", q.SkillID, q.ContentHash, q.At.UTC().Format(time.RFC3339), q.InvocationID, q.Reason)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	release := &cobra.Command{
		Use:     "release SKILL",
		Short:   "Release a skill (by id or content hash) from quarantine",
		Example: "  skillrun quarantine release report",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openState(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.Release(cmd.Context(), args[0])
			if errors.Is(err, store.ErrNotFound) {
				return withCode(exitFailure, fmt.Errorf("%s is not quarantined", args[0]))
			}
			if err != nil {
				return withCode(exitSetup, err)
			}
			fmt.Fprintf(g.stdout, "released %s (%d content hashes)\n", args[0], n)
			return nil
		},
	}
	cmd.AddCommand(list, release)
	return cmd
}
