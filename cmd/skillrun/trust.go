package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/store"
)

func newTrust(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust DIR...",
		Short: "Pin a skill's (or a pack's) content hash so exec will run it",
		Long: `trust loads each skill, validates it and pins its content hash. Editing any
file of the skill changes the hash and the pin no longer applies: exec then
refuses the skill until it is trusted again. A pack (a folder whose
sub-folders are skills) is trusted skill by skill, and only if every skill
in it loads: an invalid pack contributes no runnable skill.`,
		Example: `  skillrun trust ./skills/report
  skillrun trust ./packs/reporting   # every skill of the pack`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			st, err := store.Open(cmd.Context(), g.root)
			if err != nil {
				return withCode(exitSetup, err)
			}
			defer st.Close()
			for _, dir := range dirs {
				snaps, err := loadSkillOrPack(dir)
				if err != nil {
					return err
				}
				for _, s := range snaps {
					if err := st.Trust(cmd.Context(), s.Hash(), s.ID(), s.Dir()); err != nil {
						return withCode(exitSetup, err)
					}
					fmt.Fprintf(g.stdout, "trusted %s sha256:%s %s\n", s.ID(), s.Hash(), s.Dir())
				}
			}
			return nil
		},
	}
	return cmd
}

// loadSkillOrPack loads dir as a skill, or, when it has no SKILL.md, each
// sub-folder that has one. Any invalid skill of a pack fails the pack.
func loadSkillOrPack(dir string) ([]*skill.Snapshot, error) {
	s, err := skill.Load(dir)
	if err == nil {
		return []*skill.Snapshot{s}, nil
	}
	if !errors.Is(err, skill.ErrNotSkill) {
		return nil, err
	}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		return nil, err
	}
	var out []*skill.Snapshot
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if _, serr := os.Stat(filepath.Join(sub, skill.FileName)); serr != nil {
			continue
		}
		s, err := skill.Load(sub)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", dir, err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, err
	}
	return out, nil
}
