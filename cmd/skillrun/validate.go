package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/runtime"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/tools"
)

// validation is the result for one skill folder, as --json prints it.
type validation struct {
	Dir         string             `json:"dir"`
	Valid       bool               `json:"valid"`
	SkillID     string             `json:"skill_id,omitempty"`
	ContentHash string             `json:"content_hash,omitempty"`
	Errors      []skill.Diagnostic `json:"errors"`
	Warnings    []skill.Diagnostic `json:"warnings"`
	Plan        *enforce.Plan      `json:"plan,omitempty"`
}

func newValidate(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--json] DIR...",
		Short: "Parse each skill's SKILL.md and print its grant plan",
		Long: `validate loads each skill folder, checks its SKILL.md, derives the grant plan
(every mount, Landlock rule, limit and glob the sandbox would enforce), and
proves the plan is no wider than the declaration. It exits 0 when every
skill is valid and 1 when any is not; each problem is printed as
SKILL.md:LINE: field: reason.`,
		Example: `  skillrun validate ./examples/skills/hello
  skillrun validate --json ./skills/* | jq '.[] | select(.valid == false)'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			cat, err := tools.Catalog(tools.NativeSpecs())
			if err != nil {
				return withCode(exitSetup, err)
			}
			host := runtime.Probe(cmd.Context())
			results := make([]validation, 0, len(dirs))
			invalid := 0
			for _, dir := range dirs {
				v := validateOne(dir, cat, host)
				if !v.Valid {
					invalid++
				}
				results = append(results, v)
			}
			if asJSON {
				if err := writeJSON(g.stdout, results); err != nil {
					return err
				}
			} else {
				for _, v := range results {
					printValidation(g.stdout, g.stderr, v)
				}
			}
			if invalid > 0 {
				return &exitError{code: exitFailure, err: fmt.Errorf("%d of %d skills invalid", invalid, len(dirs)), silent: asJSON}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

// validateOne runs the whole load → declare → plan → verify chain that exec
// will run, so validate and exec can never disagree about a skill.
func validateOne(dir string, cat enforce.Catalog, host enforce.Host) validation {
	v := validation{Dir: dir, Errors: []skill.Diagnostic{}, Warnings: []skill.Diagnostic{}}
	snap, err := skill.Load(dir)
	if err != nil {
		v.Errors = diagnosticsOf(err)
		var le *skill.LoadError
		if errors.As(err, &le) {
			v.Warnings = warningsOf(le.Diagnostics)
		}
		return v
	}
	v.SkillID, v.ContentHash = snap.ID(), snap.Hash()
	v.Warnings = append(v.Warnings, snap.Warnings()...)
	decl, warns, err := enforce.Declare(snap.Manifest(), snap.File(), cat)
	v.Warnings = append(v.Warnings, warns...)
	if err != nil {
		v.Errors = diagnosticsOf(err)
		return v
	}
	plan, warns, err := enforce.MakePlan(snap, decl, host, enforce.PlanOptions{})
	v.Warnings = append(v.Warnings, warns...)
	if err != nil {
		v.Errors = diagnosticsOf(err)
		return v
	}
	v.Valid, v.Plan = true, &plan
	return v
}

// diagnosticsOf turns any load or policy error into positioned lines; an
// error without positions (I/O, a loader defect) becomes one line.
func diagnosticsOf(err error) []skill.Diagnostic {
	var le *skill.LoadError
	if errors.As(err, &le) {
		return le.Errors()
	}
	var pe *enforce.PolicyError
	if errors.As(err, &pe) {
		return pe.Diagnostics
	}
	return []skill.Diagnostic{{Message: err.Error(), Severity: skill.SeverityError}}
}

func warningsOf(diags []skill.Diagnostic) []skill.Diagnostic {
	out := []skill.Diagnostic{}
	for _, d := range diags {
		if d.Severity == skill.SeverityWarning {
			out = append(out, d)
		}
	}
	return out
}

func printValidation(stdout, stderr io.Writer, v validation) {
	for _, d := range v.Errors {
		fmt.Fprintf(stderr, "%s\n", d)
	}
	for _, d := range v.Warnings {
		fmt.Fprintf(stderr, "%s (warning)\n", d)
	}
	if !v.Valid {
		fmt.Fprintf(stdout, "%s: invalid\n", v.Dir)
		return
	}
	fmt.Fprintf(stdout, "%s: ok: skill %s, content sha256:%s\n", v.Dir, v.SkillID, v.ContentHash)
	printPlan(stdout, *v.Plan)
}

func printPlan(w io.Writer, p enforce.Plan) {
	d := p.Declaration
	line := func(k, format string, args ...any) {
		fmt.Fprintf(w, "  %-14s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	list := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	line("isolation", "%s", p.Isolation)
	line("entrypoint", "%s", p.Entrypoint)
	line("tools", "%s", list(d.Tools))
	if len(d.Disallowed) > 0 {
		line("disallowed", "%s", list(d.Disallowed))
	}
	if len(d.Foreign) > 0 {
		line("unavailable", "%s (calls get unknown_tool)", list(d.Foreign))
	}
	if len(p.BashRules) > 0 {
		line("bash rules", "%s", list(p.BashRules))
	}
	line("memory scopes", "%s", list(d.Memory))
	line("files", "%s (write: %t)", list(d.Files), d.FileWrite)
	line("domains", "%s", list(d.Domains))
	l := p.Limits
	line("limits", "memory %s, pids %d, cpu %d.%03d cores, AS %s, nproc %d, nofile %d, core %d, /tmp %s",
		skill.FormatSize(l.MemoryBytes), l.PidsMax, l.CPUMillis/1000, l.CPUMillis%1000, skill.FormatSize(l.AddressSpace), l.NProc, l.NoFile, l.CoreBytes, skill.FormatSize(l.TmpBytes))
	line("budget", "%s (SIGTERM at %s, SIGKILL at %s)", p.Budget, p.TermAfter, p.Budget)
	if d.RateLimit > 0 {
		line("rate limit", "%d tool calls per minute", d.RateLimit)
	}
	line("namespaces", "%s", list(p.Namespaces))
	line("seccomp", "%s", p.Seccomp)
	ll := p.Landlock
	line("landlock", "host ABI %d; TCP bind/connect denied: %t/%t; scoped abstract sockets and signals: %t/%t", ll.HostABI, ll.DenyTCPBind, ll.DenyTCPConnect, ll.ScopeAbstract, ll.ScopeSignal)
	for _, r := range ll.Rules {
		fmt.Fprintf(w, "    %-4s %s%s  (%s)\n", access(r), r.Path, map[bool]string{true: "/**", false: ""}[r.Dir], r.Origin)
	}
	fmt.Fprintf(w, "  mounts:\n")
	for _, m := range p.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(w, "    %-5s %s %s  (%s", m.Kind, mode, m.Target, m.Origin)
		if m.Source != "" && m.Source != m.Target {
			fmt.Fprintf(w, ", %s", m.Source)
		}
		fmt.Fprintln(w, ")")
	}
}

func access(r enforce.FSRule) string {
	s := ""
	for _, f := range []struct {
		on bool
		c  string
	}{{r.Read, "r"}, {r.Write, "w"}, {r.Exec, "x"}} {
		if f.on {
			s += f.c
		} else {
			s += "-"
		}
	}
	return s
}
