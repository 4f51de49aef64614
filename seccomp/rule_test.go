package seccomp

import (
	"math/bits"
	"slices"
	"testing"
)

// TestLow32Except proves the cover is exact for each deny set: its cubes
// are disjoint, none contains a denied value, and their sizes add up to
// every other 32-bit value. Disjoint plus the right total leaves no value
// out, so no exhaustive walk over 2^32 values is needed.
func TestLow32Except(t *testing.T) {
	tests := []struct {
		name     string
		deny     []uint32
		wantAlts int
	}{
		{"nothing", nil, 1},
		{"TIOCSTI", []uint32{tiocsti}, 32},
		{"TIOCSTI and TIOCLINUX", []uint32{tiocsti, tioclinux}, 34},
		{"duplicates count once", []uint32{tiocsti, tiocsti}, 32},
		{"zero", []uint32{0}, 32},
		{"all ones", []uint32{0xffffffff}, 32},
		{"three neighbours", []uint32{1, 2, 3}, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alts := low32Except(1, tt.deny...)
			if len(alts) != tt.wantAlts {
				t.Errorf("%d alternatives, want %d", len(alts), tt.wantAlts)
			}
			var covered uint64
			for i, a := range alts {
				if a.Index != 1 || a.Op != MaskedEqual || a.Mask>>32 != 0 || a.Value&^a.Mask != 0 {
					t.Fatalf("alternative %d = %+v: want a masked comparison of argument 1's low half", i, a)
				}
				covered += 1 << (32 - bits.OnesCount64(a.Mask))
				for _, b := range alts[i+1:] {
					if (a.Value^b.Value)&a.Mask&b.Mask == 0 {
						t.Errorf("alternatives %+v and %+v overlap", a, b)
					}
				}
				for _, d := range tt.deny {
					if a.Matches(uint64(d)) {
						t.Errorf("alternative %+v matches denied %#x", a, d)
					}
				}
			}
			slices.Sort(tt.deny)
			if want := uint64(1)<<32 - uint64(len(slices.Compact(tt.deny))); covered != want {
				t.Errorf("alternatives cover %d values, want %d", covered, want)
			}
		})
	}
}

func TestRuleAllows(t *testing.T) {
	args := func(a0, a1 uint64) [6]uint64 { return [6]uint64{a0, a1} }
	tests := []struct {
		name string
		rule Rule
		args [6]uint64
		want bool
	}{
		{"plain", allow, args(7, 7), true},
		{"errno", fail(enosys, "why"), args(0, 0), false},
		{"equal", allowIf("why", Arg{Index: 0, Op: Equal, Value: 5}), args(5, 0), true},
		{"equal compares 64 bits", allowIf("why", Arg{Index: 0, Op: Equal, Value: 5}), args(1<<32|5, 0), false},
		{"low32 ignores the high half", allowIf("why", low32Is(0, 5)), args(1<<32|5, 0), true},
		{"second alternative", allowIf("why", low32Is(0, 5), low32Is(0, 6)), args(6, 0), true},
		{"no alternative", allowIf("why", low32Is(0, 5), low32Is(0, 6)), args(7, 0), false},
		{"noneOf clear", allowIf("why", noneOf(1, 0xf0)), args(0, 0x0f), true},
		{"noneOf set", allowIf("why", noneOf(1, 0xf0)), args(0, 0x10), false},
		{"index out of range", allowIf("why", Arg{Index: 6, Op: Equal}), args(0, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Allows(tt.args); got != tt.want {
				t.Errorf("Allows(%#x) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

// FuzzIoctlRequest holds the ioctl rule to its specification for any
// request: allowed unless the kernel, which reads the low 32 bits, would
// see TIOCSTI or TIOCLINUX.
func FuzzIoctlRequest(f *testing.F) {
	for _, seed := range []uint64{0, tiocsti, tioclinux, 1<<32 | tiocsti, tiocsti + 1, 0x5401, 0xffffffffffffffff} {
		f.Add(seed)
	}
	rule := profile["ioctl"]
	f.Fuzz(func(t *testing.T, req uint64) {
		want := uint32(req) != tiocsti && uint32(req) != tioclinux
		if got := rule.Allows([6]uint64{0, req}); got != want {
			t.Errorf("ioctl request %#x: allowed = %v, want %v", req, got, want)
		}
	})
}
