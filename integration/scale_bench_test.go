//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scaleCalls is how many broker calls each invocation of BenchmarkScale
// makes.
const scaleCalls = 100

// BenchmarkScale runs 1, 8, 32 and 64 invocations at once of a Python
// skill that makes 100 Read calls through its broker, each a whole
// `skillrun exec` sharing one state store: every one must succeed.
//
// Metrics per wave: wall-ms (all of them, start to last exit), inv-p50-ms
// and inv-max-ms (one invocation), calls/s (all calls over the wave's
// wall time), failed (must be 0), and memory per invocation, each the
// largest over the wave: sup-MiB is the supervisor's peak RSS (VmHWM; the
// broker lives in it), shim-MiB that of the sandbox's pid 1 (skillrun's
// shim, alive for the whole invocation), tree-MiB the largest ru_maxrss of
// a supervisor and its waited-for descendants (the skill's Python
// included). VmHWM counts the pages of the 20-odd MiB skillrun binary that
// every invocation shares through the page cache; sup-anon-MiB and
// shim-anon-MiB (RssAnon) are what each invocation adds on its own.
// Target (BENCHMARKS.md): sup-MiB ≤ 30 MiB.
func BenchmarkScale(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: the sandbox uses namespaces, cgroups and per-invocation uids")
	}
	root := b.TempDir()
	data := b.TempDir()
	small := filepath.Join(data, "small.txt")
	os.WriteFile(small, []byte("a small file of a few bytes\n"), 0o644)
	dir := filepath.Join(b.TempDir(), "scaler")
	os.MkdirAll(dir, 0o755)
	md := fmt.Sprintf("---\nname: scaler\ndescription: makes %d broker calls\nallowed-tools: Read\nx-allowed-files: [%q]\n---\n", scaleCalls, data+"/**")
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644)
	main := pyClient + fmt.Sprintf(`
connect()
for i in range(%d):
    r = call("tool.call", {"tool": "Read", "args": {"path": %q}})
    if "result" not in r:
        print("call %%d failed: %%s" %% (i, r))
        sys.exit(3)
print("ok")
`, scaleCalls, small)
	os.WriteFile(filepath.Join(dir, "main"), []byte(main), 0o755)
	if out, err := exec.Command(skillrunBin, "--root", root, "trust", dir).CombinedOutput(); err != nil {
		b.Fatalf("trust: %v: %s", err, out)
	}
	for _, n := range []int{1, 8, 32, 64} {
		b.Run("conc="+strconv.Itoa(n), func(b *testing.B) {
			var waves []wave
			for b.Loop() {
				waves = append(waves, runWave(b, root, dir, n))
			}
			reportWaves(b, waves, n)
		})
	}
}

// invocationRun is one skillrun exec of a wave.
type invocationRun struct {
	elapsed           time.Duration
	ok                bool
	supHWM, shimHWM   int64 // KiB, peak RSS
	supAnon, shimAnon int64 // KiB, largest RssAnon seen: memory not shared with other invocations
	treeMaxRSS        int64 // KiB
	stdout, stderr    string
	err               error
	exitCode, supPID  int
}

type wave struct {
	wall time.Duration
	runs []invocationRun
}

func runWave(b *testing.B, root, dir string, n int) wave {
	b.Helper()
	runs := make([]invocationRun, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range runs {
		wg.Go(func() { runs[i] = runWatched(root, dir) })
	}
	wg.Wait()
	w := wave{wall: time.Since(start), runs: runs}
	for _, r := range runs {
		if !r.ok {
			b.Logf("invocation failed: exit %d, err %v, stdout %q, stderr %q", r.exitCode, r.err, r.stdout, r.stderr)
			break
		}
	}
	return w
}

// runWatched runs one invocation and samples the peak RSS of the
// supervisor and of its shim while it runs. VmHWM is a per-process peak,
// so sampling every few milliseconds loses nothing but the last moments.
func runWatched(root, dir string) invocationRun {
	cmd := exec.Command(skillrunBin, "--root", root, "exec", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	var r invocationRun
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	r.supPID = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r.elapsed = time.Since(start)
			r.err = err
			r.stdout, r.stderr = stdout.String(), stderr.String()
			r.exitCode = cmd.ProcessState.ExitCode()
			r.ok = err == nil && strings.TrimSpace(r.stdout) == "ok"
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				r.treeMaxRSS = ru.Maxrss
			}
			return r
		case <-tick.C:
			r.supHWM = max(r.supHWM, statusKiB(r.supPID, "VmHWM"))
			r.supAnon = max(r.supAnon, statusKiB(r.supPID, "RssAnon"))
			for _, c := range children(r.supPID) {
				if comm(c) == "shim" {
					r.shimHWM = max(r.shimHWM, statusKiB(c, "VmHWM"))
					r.shimAnon = max(r.shimAnon, statusKiB(c, "RssAnon"))
				}
			}
		}
	}
}

// statusKiB reads one "Name: N kB" field of /proc/PID/status; 0 if gone.
func statusKiB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// children lists the child pids of every thread of pid.
func children(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// reportWaves reports the median wave's timing and the worst memory seen.
func reportWaves(b *testing.B, waves []wave, n int) {
	slices.SortFunc(waves, func(x, y wave) int { return int(x.wall - y.wall) })
	w := waves[len(waves)/2]
	var failed int
	var sup, shim, supAnon, shimAnon, tree int64
	var lat []time.Duration
	for _, wv := range waves {
		for _, r := range wv.runs {
			if !r.ok {
				failed++
			}
			sup, shim, tree = max(sup, r.supHWM), max(shim, r.shimHWM), max(tree, r.treeMaxRSS)
			supAnon, shimAnon = max(supAnon, r.supAnon), max(shimAnon, r.shimAnon)
		}
	}
	for _, r := range w.runs {
		lat = append(lat, r.elapsed)
	}
	slices.Sort(lat)
	const mib = 1024.0
	b.ReportMetric(float64(w.wall.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(w.wall.Microseconds())/1000, "wall-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "inv-p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "inv-max-ms")
	b.ReportMetric(float64(n*scaleCalls)/w.wall.Seconds(), "calls/s")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(float64(sup)/mib, "sup-MiB")
	b.ReportMetric(float64(shim)/mib, "shim-MiB")
	b.ReportMetric(float64(tree)/mib, "tree-MiB")
	b.ReportMetric(float64(supAnon)/mib, "sup-anon-MiB")
	b.ReportMetric(float64(shimAnon)/mib, "shim-anon-MiB")
}
