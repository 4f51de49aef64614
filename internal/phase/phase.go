// Package phase times the steps of one skillrun process for `make bench`
// and for whoever chases a slow start: with SKILLRUN_PHASES=1 in the
// environment, Mark records the time since the process started each step,
// and Report writes them to stderr, one line each. Unset, Mark costs one
// atomic load and records nothing.
//
// Times count from this package's initialisation, which is after the Go
// runtime has started and most of the binary's packages have initialised
// (`skillrun version` times those): /proc's process start time has only a
// 10 ms resolution.
package phase

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Env is the variable that turns the marks on.
const Env = "SKILLRUN_PHASES"

var (
	enabled atomic.Bool
	mu      sync.Mutex
	start   time.Time
	marks   []mark
)

type mark struct {
	name string
	at   time.Duration
}

func init() {
	if os.Getenv(Env) != "1" {
		return
	}
	start = time.Now()
	enabled.Store(true)
}

// Mark records that the step named name has ended.
func Mark(name string) {
	if !enabled.Load() {
		return
	}
	at := time.Since(start)
	mu.Lock()
	marks = append(marks, mark{name, at})
	mu.Unlock()
}

// Report writes the marks to w, each with the time since the previous one,
// and forgets them.
func Report(w io.Writer) {
	if !enabled.Load() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	var prev time.Duration
	for _, m := range marks {
		fmt.Fprintf(w, "skillrun phase %-22s at %7.2f ms  +%6.2f ms\n", m.name, ms(m.at), ms(m.at-prev))
		prev = m.at
	}
	marks = nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
