package phase

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMarkAndReport(t *testing.T) {
	was, wasStart := enabled.Load(), start
	t.Cleanup(func() { enabled.Store(was); start = wasStart; marks = nil })

	enabled.Store(false)
	Mark("ignored")
	var off bytes.Buffer
	Report(&off)
	if off.Len() != 0 || len(marks) != 0 {
		t.Fatalf("disabled: Report wrote %q, %d marks kept", off.String(), len(marks))
	}

	enabled.Store(true)
	start = time.Now()
	Mark("first")
	time.Sleep(2 * time.Millisecond)
	Mark("second")
	var out bytes.Buffer
	Report(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "phase first") || !strings.Contains(lines[1], "phase second") {
		t.Fatalf("Report = %q, want a line for first, then second", out.String())
	}
	var at, delta float64
	if _, err := fmtSscan(lines[1], &at, &delta); err != nil || at < 2 || delta < 2 {
		t.Errorf("second mark %q: at %.2f ms, +%.2f ms; want both ≥ 2 ms (%v)", lines[1], at, delta, err)
	}
	var again bytes.Buffer
	if Report(&again); again.Len() != 0 {
		t.Errorf("a second Report wrote %q: the marks must be forgotten", again.String())
	}
}

// fmtSscan reads the "at" and "+delta" figures of one Report line.
func fmtSscan(line string, at, delta *float64) (int, error) {
	var name string
	return fmt.Sscanf(line, "skillrun phase %s at %f ms  +%f ms", &name, at, delta)
}
