//go:build benchtool && linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// traced are the syscalls strace stops at: enough to see every phase
// boundary below, few enough (with --seccomp-bpf, nothing else stops) to
// keep the overhead to a fraction of the run.
const traced = "execve,exit_group,openat,write,mkdirat,unshare,mount,pivot_root,prctl,landlock_restrict_self,unlinkat"

// phase ends at the first strace line, after the previous phase's end,
// that matches re; with supervisor set, only a line of the supervisor's
// own pid counts. Other pids cannot be told apart reliably: strace names a
// thread by its tid, and a Go program may exit or exec from any thread.
// Nothing else runs between the markers, so the order is enough.
type phase struct {
	name, what string
	re         *regexp.Regexp
	supervisor bool
}

var phases = []phase{
	{"start", "process start, Go runtime and package init, CLI parsing",
		regexp.MustCompile(`openat\(.*"/proc/sys/kernel/seccomp/actions_avail"`), false},
	{"probe", "host probe: namespaces, seccomp, Landlock, cgroups (exec skips the user-namespace child as root)",
		regexp.MustCompile(`write\(2, "invocation `), false},
	{"store", "open the state store (SQLite, schema check)",
		regexp.MustCompile(`openat\(.*/SKILL\.md"`), false},
	{"admit", "load and hash the skill, trust and quarantine lookups, plan, invocation row and invoked_started",
		regexp.MustCompile(`openat\(.*/uids/[0-9]+\.lock"`), false},
	{"broker", "lease a uid, compile the policy and tool registry, listen on the broker socket",
		regexp.MustCompile(`mkdirat\(AT_FDCWD, "[^"]*/run/[A-Za-z0-9_-]+", 0700\)`), false},
	{"materialize", "copy the skill tree and verify the copy",
		regexp.MustCompile(`mkdirat\(AT_FDCWD, "[^"]*/rootfs"`), false},
	{"create", "rootfs links, shim config, libcontainer config and Create, fork and re-exec of init",
		regexp.MustCompile(`execve\("/proc/self/fd/[0-9]+", \[[^\]]*"init"\]`), false},
	{"nsexec", "init: load of the skillrun binary, nsexec bootstrap (the parent makes the cgroups meanwhile)",
		regexp.MustCompile(`unshare\(CLONE_NEW`), false},
	{"init-go", "init: Go runtime start, loopback, sync with the parent",
		regexp.MustCompile(`\bmount\(`), false},
	{"mounts", "init: rootfs mounts, devices",
		regexp.MustCompile(`pivot_root\(`), false},
	{"harden", "init: pivot_root, masked and read-only paths, capabilities, no_new_privs, final sync, execve of the shim",
		regexp.MustCompile(`execve\("/run/skillrun/shim", \[[^\]]*"__shim`), false},
	{"landlock", "shim: Go runtime start, config, seccomp filter load (precompiled), Landlock ruleset, restrict_self",
		regexp.MustCompile(`landlock_restrict_self\(`), false},
	{"fork-exec", "shim: fork of the exec stage",
		regexp.MustCompile(`execve\("[^"]*", \[[^\]]*"__exec`), false},
	{"exec-stage", "exec stage: the shim binary again, uid switch, rlimits, execve of the entrypoint",
		regexp.MustCompile(`execve\(`), false},
	{"entrypoint", "the entrypoint itself (a copy of /usr/bin/true)",
		regexp.MustCompile(`exit_group\(`), false},
	{"reap", "shim reaps it and exits; the supervisor's wait returns",
		regexp.MustCompile(`unlinkat\(AT_FDCWD, "/sys/fs/cgroup/`), false},
	{"destroy", "destroy: cgroups, container state, rootfs and state dir; broker stop and socket removal",
		regexp.MustCompile(`unlinkat\(AT_FDCWD, "/tmp/cyberos-skill-broker\.`), false},
	{"finish", "flush the audit queue, invoked_completed, close the invocation row and the store",
		regexp.MustCompile(`exit_group\(`), false},
	{"exit", "process exit",
		regexp.MustCompile(`\+\+\+ exited`), true},
}

type phaseResult struct {
	runs    int
	traced  []time.Duration   // total per run
	byPhase [][]time.Duration // [phase][run]; -1 when a marker was missing
}

// tracePhases runs skillrun exec under strace n times and splits each run.
func tracePhases(c config, argv func(int) []string) (*phaseResult, error) {
	if _, err := exec.LookPath("strace"); err != nil {
		return nil, fmt.Errorf("strace: %w (apt-get install strace)", err)
	}
	res := &phaseResult{runs: c.phases, byPhase: make([][]time.Duration, len(phases))}
	for i := range c.phases {
		out := filepath.Join(c.work, fmt.Sprintf("strace-%d.txt", i))
		args := append([]string{"-f", "-q", "-ttt", "--seccomp-bpf", "-e", "trace=" + traced, "-o", out, "--"}, argv(i)...)
		cmd := exec.Command("strace", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("strace run: %v: %s", err, stderr.String())
		}
		total, ds, err := split(out)
		if err != nil {
			return nil, err
		}
		res.traced = append(res.traced, total)
		for p, d := range ds {
			res.byPhase[p] = append(res.byPhase[p], d)
		}
	}
	return res, nil
}

// straceLine is "PID SECONDS.MICROS TEXT"; strace pads the pid.
var straceLine = regexp.MustCompile(`^([0-9]+) +([0-9]+\.[0-9]+) +(.*)$`)

type event struct {
	pid  int
	t    float64
	text string
}

// split reads one strace -f -ttt log and returns the total and each
// phase's duration (-1 for a phase whose end marker is missing).
func split(path string) (time.Duration, []time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := straceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pid, err1 := strconv.Atoi(m[1])
		t, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		evs = append(evs, event{pid, t, m[3]})
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	if len(evs) == 0 {
		return 0, nil, fmt.Errorf("%s: empty trace", path)
	}
	sup := evs[0].pid
	out := make([]time.Duration, len(phases))
	at, prevT := 0, evs[0].t
	for p, ph := range phases {
		found := -1
		for i := at + 1; i < len(evs); i++ {
			e := evs[i]
			if strings.HasPrefix(e.text, "<... ") {
				continue // the end of a call whose start was logged
			}
			if (!ph.supervisor || e.pid == sup) && ph.re.MatchString(e.text) {
				found = i
				break
			}
		}
		if found < 0 {
			out[p] = -1
			continue
		}
		out[p] = time.Duration((evs[found].t - prevT) * float64(time.Second))
		at, prevT = found, evs[found].t
	}
	return time.Duration((evs[len(evs)-1].t - evs[0].t) * float64(time.Second)), out, nil
}

// markdown writes the breakdown: the median of each phase under strace,
// its share of the median traced total, and that share of the untraced
// median, an estimate of the phase's real cost.
func (r *phaseResult) markdown(md *bytes.Buffer, untraced time.Duration) {
	total := pct(r.traced, 50)
	fmt.Fprintf(md, "\n#### Where the cold start goes\n\n"+
		"%d runs of the same `skillrun exec` under `strace -f -ttt --seccomp-bpf -e trace=%s`; each phase ends at "+
		"the first syscall that marks the next step (scripts/bench/coldstart/phases.go). strace slows the "+
		"syscall-heavy phases more than the others (median traced total %s ms against %s ms untraced): "+
		"read the shares, and the last column as an estimate.\n\n", r.runs, traced, ms(total), ms(untraced))
	md.WriteString("| # | phase | what | traced ms (median) | share | est. untraced ms |\n| ---: | --- | --- | ---: | ---: | ---: |\n")
	var sum time.Duration
	for p, ph := range phases {
		var ok []time.Duration
		for _, d := range r.byPhase[p] {
			if d >= 0 {
				ok = append(ok, d)
			}
		}
		if len(ok) == 0 {
			fmt.Fprintf(md, "| %d | %s | %s | n/a | | |\n", p+1, ph.name, ph.what)
			continue
		}
		d := pct(ok, 50)
		sum += d
		share := float64(d) / float64(total)
		fmt.Fprintf(md, "| %d | %s | %s | %s | %.0f%% | %s |\n", p+1, ph.name, ph.what, ms(d), 100*share,
			ms(time.Duration(share*float64(untraced))))
	}
	fmt.Fprintf(md, "| | | sum of the medians | %s | | |\n", ms(sum))
	md.WriteString("\nBy stage (shares of the traced total):")
	for _, g := range stages {
		var d time.Duration
		for p := g.from; p <= g.to; p++ {
			var ok []time.Duration
			for _, x := range r.byPhase[p] {
				if x >= 0 {
					ok = append(ok, x)
				}
			}
			if len(ok) > 0 {
				d += pct(ok, 50)
			}
		}
		share := float64(d) / float64(total)
		span := fmt.Sprintf("phases %d–%d", g.from+1, g.to+1)
		if g.from == g.to {
			span = fmt.Sprintf("phase %d", g.from+1)
		}
		sep := ";"
		if g == stages[len(stages)-1] {
			sep = "."
		}
		fmt.Fprintf(md, " %s (%s) %.0f%%, about %s ms%s", g.name, span, 100*share,
			ms(time.Duration(share*float64(untraced))), sep)
	}
	md.WriteString("\n")
}

// stages group the phases by who does the work.
var stages = []struct {
	name     string
	from, to int
}{
	{"supervisor before the sandbox", 0, 5},
	{"libcontainer create and init", 6, 10},
	{"skillrun's shim and exec stage", 11, 13},
	{"entrypoint", 14, 14},
	{"teardown and audit", 15, 18},
}

// marks is the supervisor's own account of its steps (SKILLRUN_PHASES=1,
// internal/phase): no tracer, so the figures are the real ones, but the
// container's start is one step, libcontainer's Run.
type marks struct {
	runs  int
	order []string
	by    map[string][]time.Duration
}

var markLine = regexp.MustCompile(`^skillrun phase (\S+) +at +[0-9.]+ ms +\+ *([0-9.]+) ms$`)

// markPhases runs skillrun exec n times with SKILLRUN_PHASES=1.
func markPhases(n int, argv func(int) []string) (*marks, error) {
	m := &marks{runs: n, by: map[string][]time.Duration{}}
	for i := range n {
		args := argv(1000 + i)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "SKILLRUN_PHASES=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%v: %v: %s", args, err, stderr.String())
		}
		seen := 0
		for line := range strings.Lines(stderr.String()) {
			f := markLine.FindStringSubmatch(strings.TrimSpace(line))
			if f == nil {
				continue
			}
			d, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				continue
			}
			if _, ok := m.by[f[1]]; !ok {
				m.order = append(m.order, f[1])
			}
			m.by[f[1]] = append(m.by[f[1]], time.Duration(d*float64(time.Millisecond)))
			seen++
		}
		if seen == 0 {
			return nil, fmt.Errorf("%v printed no phase marks: %s", args, stderr.String())
		}
	}
	return m, nil
}

// markWhat says what each mark closes.
var markWhat = map[string]string{
	"main":              "package initialisation after internal/phase's",
	"cli":               "cobra: flags and arguments",
	"telemetry":         "OpenTelemetry providers from OTEL_* (none by default)",
	"probe":             "host probe",
	"store":             "open the state store (SQLite, schema check)",
	"load":              "load and hash the skill",
	"admit+plan":        "trust and quarantine lookups, isolation, grant plan and its check",
	"begin":             "invocation row and invoked_started",
	"broker":            "uid lease, policy and tool registry, broker socket",
	"materialize":       "copy and verify the skill tree",
	"container-config":  "rootfs links, shim config, libcontainer config",
	"container-create":  "libcontainer Create",
	"container-init":    "libcontainer Run: init re-exec, cgroups, nsexec, mounts, pivot_root, execve of the shim",
	"shim-ready":        "the shim: seccomp, Landlock, exec stage started; its status line read; Seccomp: 2 checked",
	"skill-exit":        "exec stage, the entrypoint, the shim's exit, wait",
	"container-destroy": "libcontainer Destroy (cgroups, container state)",
	"cleanup":           "state dir removal, broker stop, socket removal, uid lease",
	"finish":            "audit flush, invoked_completed, invocation row closed",
	"run":               "store close",
}

func (m *marks) markdown(md *bytes.Buffer) {
	fmt.Fprintf(md, "\n#### The supervisor's own marks, untraced\n\n"+
		"%d runs of the same `skillrun exec` with `SKILLRUN_PHASES=1` (internal/phase): each row is the time from "+
		"the previous mark, as the supervisor measured it, without a tracer. Times count from internal/phase's "+
		"initialisation, so the Go runtime start and the package initialisation before it (about what "+
		"`skillrun version` costs, above) come on top.\n\n", m.runs)
	md.WriteString("| mark | closes | median ms | p90 ms |\n| --- | --- | ---: | ---: |\n")
	var sum time.Duration
	for _, name := range m.order {
		ds := m.by[name]
		sum += pct(ds, 50)
		fmt.Fprintf(md, "| %s | %s | %s | %s |\n", name, markWhat[name], ms(pct(ds, 50)), ms(pct(ds, 90)))
	}
	fmt.Fprintf(md, "| | sum of the medians | %s | |\n", ms(sum))
}

// leftMarkdown says what is left of the cold start against runc and why,
// from the marks: libcontainer's own start (the code runc runs too), the
// shim and exec stage (Landlock and per-uid rlimits, which runc does not
// apply), and the supervisor's own steps (store, audit, broker, skill copy),
// which runc has no counterpart for.
func (m *marks) leftMarkdown(md *bytes.Buffer, skillrun, runc, version time.Duration) {
	med := func(names ...string) time.Duration {
		var d time.Duration
		for _, n := range names {
			if ds := m.by[n]; len(ds) > 0 {
				d += pct(ds, 50)
			}
		}
		return d
	}
	container := med("container-create", "container-init", "container-destroy")
	shim := med("shim-ready", "skill-exit")
	var own time.Duration
	for _, n := range m.order {
		if n != "container-create" && n != "container-init" && n != "container-destroy" && n != "shim-ready" && n != "skill-exit" {
			own += med(n)
		}
	}
	fmt.Fprintf(md, "\n#### What is left, and why\n\n"+
		"skillrun exec took %s ms at the median against %s ms for runc run. By the marks above: libcontainer's create, "+
		"start and destroy of the container took %s ms, the same library code runc runs for the whole of its %s ms, with "+
		"the skillrun binary (larger than runc's) as the container's init; the shim and its exec stage, which confine "+
		"the skill with Landlock and run it as its own uid under its rlimits (runc does neither), %s ms; the "+
		"supervisor's own steps, which runc has no counterpart for (the SQLite store and audit rows, the skill's hash "+
		"and copy, the grant plan, the broker), %s ms; and the supervisor's own Go start, of which `skillrun version` "+
		"(%s ms, which overlaps the first mark) gives the measure. Cut so far: a shim binary of its own (3.5 MB instead of the 38 MB skillrun, "+
		"started twice per run), the seccomp program compiled ahead of time instead of by libseccomp in every "+
		"container's init, and no user-namespace probe child as root. Left: the supervisor's steps and the Go "+
		"start of two large binaries are work runc does not do; matching runc would take a container start "+
		"cheaper than runc's own.\n",
		ms(skillrun), ms(runc), ms(container), ms(runc), ms(shim), ms(own), ms(version))
}
