package seccomp

import (
	"strings"
	"testing"
)

// TestProgramIsCurrent needs neither cgo nor libseccomp: the embedded
// program must have been generated from the profile as it is now.
func TestProgramIsCurrent(t *testing.T) {
	if got, want := strings.TrimSpace(programSum), profileSum(); got != want {
		t.Fatalf("seccomp/program.bpf was generated from another profile (program.sum %s, profile %s): run make seccomp-golden", got, want)
	}
	p := Program()
	if len(p) == 0 || len(p)%8 != 0 {
		t.Fatalf("Program() is %d bytes, want whole 8-byte instructions", len(p))
	}
	p[0] ^= 0xff
	if Program()[0] == p[0] {
		t.Fatalf("Program() returns the embedded slice itself: a caller could change the filter")
	}
}
