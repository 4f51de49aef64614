//go:build benchtool && linux

// Command coldstart times the cold start of `skillrun exec` of a no-op
// skill, end to end, side by side with `runc run` and `bwrap` running the
// same no-op in an equivalent sandbox, in alternation: every round runs
// each command once (the order rotated every round), so machine noise hits
// all of them alike. Context rows (no sandbox, rlimit-only, the bare Go
// binary) run in the same rounds. With -phases N it then runs N traced
// `skillrun exec` runs under strace and splits the cold start into phases.
//
//	go run -tags "seccomp benchtool" ./scripts/bench/coldstart -skillrun bin/skillrun -md out.md -env out.env
//
// It needs root, runc and bwrap (scripts/bench.sh installs them), and
// strace for -phases. It writes a Markdown section (-md) and KEY=VALUE
// lines (-env) that scripts/bench.sh turns into BENCHMARKS.md.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// variant is one command the rounds alternate.
type variant struct {
	key, label string
	peer       bool // one of the three compared; otherwise context
	argv       func(run int) []string
	files      func() ([]*os.File, error) // extra fds from 3 on, opened per run
	after      func(run int)              // cleanup after a failed run
	wall, cpu  []time.Duration
	rss        []int64 // KiB, ru_maxrss of the process tree
	ratio      []float64
}

type config struct {
	skillrun, work, mdPath, envPath string
	rounds, warmup, phases          int
	context                         bool
}

func main() {
	var c config
	flag.StringVar(&c.skillrun, "skillrun", "", "the static skillrun binary (required)")
	flag.StringVar(&c.work, "work", "", "working directory (default: a new temporary one, removed at the end)")
	flag.StringVar(&c.mdPath, "md", "", "write the Markdown section here (default: stdout)")
	flag.StringVar(&c.envPath, "env", "", "write KEY=VALUE results here")
	flag.IntVar(&c.rounds, "rounds", 30, "timed rounds")
	flag.IntVar(&c.warmup, "warmup", 3, "untimed rounds first")
	flag.IntVar(&c.phases, "phases", 5, "traced skillrun runs for the phase breakdown (0: none)")
	flag.BoolVar(&c.context, "context", true, "also time the context rows (--isolation rlimit, doctor, version, /usr/bin/true)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.skillrun == "" {
		return errors.New("-skillrun is required")
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root: every sandbox here uses namespaces and cgroups")
	}
	bin, err := filepath.Abs(c.skillrun)
	if err != nil {
		return err
	}
	if c.work == "" {
		if c.work, err = os.MkdirTemp("", "skillrun-coldstart-"); err != nil {
			return err
		}
		defer os.RemoveAll(c.work)
	}
	// The invocation's uid reads the skill and the shim: keep them reachable.
	if err := os.Chmod(c.work, 0o755); err != nil {
		return err
	}
	vs, cmds, err := setup(c, bin)
	if err != nil {
		return err
	}
	defer removeRuncCgroupParents()
	load0 := loadavg()
	for r := range c.warmup {
		if err := round(vs, r, false); err != nil {
			return err
		}
	}
	for r := range c.rounds {
		if err := round(vs, c.warmup+r, true); err != nil {
			return err
		}
	}
	load1 := loadavg()
	var ph *phaseResult
	var mk *marks
	if c.phases > 0 {
		skill := vs[0]
		if mk, err = markPhases(3*c.phases, skill.argv); err != nil {
			return fmt.Errorf("phase marks: %w", err)
		}
		if ph, err = tracePhases(c, skill.argv); err != nil {
			return fmt.Errorf("phases: %w", err)
		}
	}
	return report(c, vs, cmds, load0, load1, ph, mk)
}

// setup makes the no-op skill, the OCI bundle and the seccomp program, and
// returns the variants, the skillrun one first.
func setup(c config, bin string) ([]*variant, []string, error) {
	skill := filepath.Join(c.work, "noop")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		return nil, nil, err
	}
	trueBin, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		return nil, nil, err
	}
	md := "---\nname: noop\ndescription: does nothing, as /bin/true does\n---\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(skill, "main"), trueBin, 0o755); err != nil {
		return nil, nil, err
	}
	root := filepath.Join(c.work, "state")
	if out, err := exec.Command(bin, "--root", root, "trust", skill).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("skillrun trust: %v: %s", err, out)
	}
	bundle := filepath.Join(c.work, "bundle")
	if err := writeBundle(bundle, skill); err != nil {
		return nil, nil, fmt.Errorf("OCI bundle: %w", err)
	}
	runcRoot := filepath.Join(c.work, "runc-state")
	prog := filepath.Join(c.work, "seccomp.bpf")
	if err := writeSeccompProgram(prog); err != nil {
		return nil, nil, fmt.Errorf("seccomp program for bwrap: %w", err)
	}
	runcID := func(run int) string { return fmt.Sprintf("coldstart-%d-%d", os.Getpid(), run) }
	vs := []*variant{
		{key: "SKILLRUN", label: "skillrun exec", peer: true,
			argv: func(int) []string { return []string{bin, "--root", root, "exec", skill} }},
		{key: "RUNC", label: "runc run", peer: true,
			argv: func(run int) []string {
				return []string{"runc", "--root", runcRoot, "run", "--bundle", bundle, runcID(run)}
			},
			after: func(run int) { _ = exec.Command("runc", "--root", runcRoot, "delete", "-f", runcID(run)).Run() }},
		{key: "BWRAP", label: "bwrap", peer: true,
			argv: func(int) []string { return append([]string{"bwrap"}, bwrapArgs(skill, true)...) },
			files: func() ([]*os.File, error) {
				f, err := os.Open(prog)
				return []*os.File{f}, err
			}},
	}
	if c.context {
		vs = append(vs,
			&variant{key: "RLIMIT", label: "skillrun exec --isolation rlimit (no container)",
				argv: func(int) []string { return []string{bin, "--root", root, "exec", "--isolation", "rlimit", skill} }},
			&variant{key: "DOCTOR", label: "skillrun doctor (the same plus the host probe exec runs)",
				argv: func(int) []string { return []string{bin, "doctor"} }},
			&variant{key: "VERSION", label: "skillrun version (process start, Go runtime and init)",
				argv: func(int) []string { return []string{bin, "version"} }},
			&variant{key: "TRUE", label: "/usr/bin/true (fork and exec)",
				argv: func(int) []string { return []string{"/usr/bin/true"} }},
		)
	}
	var cmds []string
	for _, v := range vs {
		argv := v.argv(0)
		if v.key == "RUNC" {
			argv[len(argv)-1] = "ID"
		}
		line := strings.Join(argv, " ")
		if v.files != nil {
			line += " 3<" + prog
		}
		cmds = append(cmds, line)
	}
	return vs, cmds, nil
}

// round runs every variant once, starting at a different one each round.
func round(vs []*variant, r int, record bool) error {
	for i := range vs {
		v := vs[(r+i)%len(vs)]
		wall, cpu, rss, err := once(v, r)
		if err != nil {
			return err
		}
		if record {
			v.wall, v.cpu, v.rss = append(v.wall, wall), append(v.cpu, cpu), append(v.rss, rss)
		}
	}
	if record && len(vs) > 1 {
		s, p := vs[0], vs[1]
		s.ratio = append(s.ratio, float64(s.wall[len(s.wall)-1])/float64(p.wall[len(p.wall)-1]))
	}
	return nil
}

// once runs a variant and times it from just before fork to its reaping.
func once(v *variant, r int) (wall, cpu time.Duration, rss int64, err error) {
	argv := v.argv(r)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if v.files != nil {
		files, err := v.files()
		if err != nil {
			return 0, 0, 0, err
		}
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		cmd.ExtraFiles = files
	}
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start)
	if err != nil {
		if v.after != nil {
			v.after(r)
		}
		return 0, 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out.String())
	}
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return wall, cpu, rss, nil
}

// removeRuncCgroupParents removes the parent cgroup of the bundle's
// cgroupsPath, which runc leaves behind (empty) in every hierarchy.
func removeRuncCgroupParents() {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + runcCgroupParent)
	for _, d := range append(dirs, "/sys/fs/cgroup/"+runcCgroupParent) {
		_ = os.Remove(d) // only ever an empty directory
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// pct is the nearest-rank percentile p of xs.
func pct[T int64 | float64 | time.Duration](xs []T, p int) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		var zero T
		return zero
	}
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func mean(xs []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range xs {
		t += x
	}
	return t / time.Duration(max(len(xs), 1))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}

func report(c config, vs []*variant, cmds []string, load0, load1 string, ph *phaseResult, mk *marks) error {
	var md, env bytes.Buffer
	runc := vs[1]
	fmt.Fprintf(&md, "%d rounds after %d warm-up rounds, in alternation: every round runs each command once, "+
		"the order rotated every round. Each run is one process timed from fork to reaping by a Go harness "+
		"(`scripts/bench/coldstart`). CPU is the user+system time of the process and its children. "+
		"Load average (1, 5, 15 min) before: %s; after: %s.\n\n", c.rounds, c.warmup, load0, load1)
	md.WriteString("| command | median ms | p90 ms | mean ms | min ms | CPU ms (median) | max RSS MiB | median vs runc |\n")
	md.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, v := range vs {
		label := v.label
		if v.peer {
			label = "**" + label + "**"
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s | %.1f | %.2f× |\n", label,
			ms(pct(v.wall, 50)), ms(pct(v.wall, 90)), ms(mean(v.wall)), ms(slices.Min(v.wall)),
			ms(pct(v.cpu, 50)), float64(pct(v.rss, 50))/1024, float64(pct(v.wall, 50))/float64(pct(runc.wall, 50)))
		fmt.Fprintf(&env, "COLD_%s_P50_MS=%s\nCOLD_%s_P90_MS=%s\nCOLD_%s_CPU_MS=%s\n", v.key, ms(pct(v.wall, 50)),
			v.key, ms(pct(v.wall, 90)), v.key, ms(pct(v.cpu, 50)))
	}
	s := vs[0]
	r50 := float64(pct(s.wall, 50)) / float64(pct(runc.wall, 50))
	r90 := float64(pct(s.wall, 90)) / float64(pct(runc.wall, 90))
	paired := pct(s.ratio, 50)
	rcpu := float64(pct(s.cpu, 50)) / float64(pct(runc.cpu, 50))
	fmt.Fprintf(&md, "\nskillrun/runc: %.2f× at the median, %.2f× at p90; the median of the per-round ratios is %.2f×; "+
		"in CPU time (less sensitive to the machine's load) %.2f×.\n", r50, r90, paired, rcpu)
	fmt.Fprintf(&env, "COLD_ROUNDS=%d\nCOLD_RATIO_P50=%.2f\nCOLD_RATIO_P90=%.2f\nCOLD_RATIO_PAIRED=%.2f\nCOLD_RATIO_CPU=%.2f\nCOLD_LOAD_BEFORE=%q\nCOLD_LOAD_AFTER=%q\n",
		c.rounds, r50, r90, paired, rcpu, load0, load1)
	md.WriteString("\nThe commands (the skill's `main` and the peers' `/skill/main` are copies of `/usr/bin/true`; the OCI " +
		"bundle's `config.json` and bwrap's seccomp program are generated from skillrun's own seccomp table):\n\n```\n")
	for _, l := range cmds {
		md.WriteString(l + "\n")
	}
	md.WriteString("```\n")
	if mk != nil {
		mk.markdown(&md)
		version := time.Duration(0)
		for _, v := range vs {
			if v.key == "VERSION" && len(v.wall) > 0 {
				version = pct(v.wall, 50)
			}
		}
		mk.leftMarkdown(&md, pct(s.wall, 50), pct(runc.wall, 50), version)
	}
	if ph != nil {
		ph.markdown(&md, pct(s.wall, 50))
		fmt.Fprintf(&env, "PHASES_RUNS=%d\n", ph.runs)
	}
	var out io.Writer = os.Stdout
	if c.mdPath != "" {
		f, err := os.Create(c.mdPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	if _, err := out.Write(md.Bytes()); err != nil {
		return err
	}
	if c.envPath != "" {
		return os.WriteFile(c.envPath, env.Bytes(), 0o644)
	}
	return nil
}
