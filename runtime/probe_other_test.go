//go:build !linux

package runtime

import (
	goruntime "runtime"
	"testing"

	"github.com/skillrun/skillrun/enforce"
)

func TestProbeOther(t *testing.T) {
	h := Probe(t.Context())
	if h.OS != goruntime.GOOS || h.Isolation != enforce.IsolationRlimitOnly || len(h.Problems) != 1 {
		t.Fatalf("Probe() = %+v; want OS %s, rlimit-only and one problem", h, goruntime.GOOS)
	}
	if h.Seccomp || h.LandlockABI != 0 || h.UserNamespaces || len(h.Namespaces) != 0 || h.CgroupVersion != 0 {
		t.Errorf("Probe() = %+v; want no Linux feature", h)
	}
}
