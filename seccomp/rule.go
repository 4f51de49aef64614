package seccomp

import (
	"maps"
	"slices"
)

// Op is how one syscall argument is compared.
type Op int

const (
	// Equal matches when the whole 64-bit argument equals Value.
	Equal Op = iota + 1
	// MaskedEqual matches when the argument ANDed with Mask equals Value.
	MaskedEqual
)

// Arg is one comparison of one syscall argument.
type Arg struct {
	Index uint   // argument number, 0 to 5
	Op    Op     // Equal or MaskedEqual
	Mask  uint64 // MaskedEqual only
	Value uint64
}

// Matches reports whether the argument value v satisfies the comparison.
func (a Arg) Matches(v uint64) bool {
	if a.Op == MaskedEqual {
		return v&a.Mask == a.Value
	}
	return v == a.Value
}

// Rule says what the filter does with one syscall that is in the table.
//
// An alternative is a single comparison on purpose: libcontainer turns two
// comparisons of the same argument into two separate rules, which OR where
// an AND was meant, so the table has no way to write that trap.
type Rule struct {
	// AnyOf lists alternatives: the syscall is allowed when at least one
	// matches. Empty means allowed whatever the arguments.
	AnyOf []Arg
	// Errno, when not zero, makes the syscall fail with this (Linux) errno
	// instead of being allowed.
	Errno uint
	// Why says why the entry is unusual; every conditional or errno entry has
	// one, and a property test holds the table to it.
	Why string
}

// Conditional reports whether the rule depends on the arguments.
func (r Rule) Conditional() bool { return len(r.AnyOf) > 0 }

// Allows reports whether a call with these arguments is allowed by the rule.
func (r Rule) Allows(args [6]uint64) bool {
	if r.Errno != 0 {
		return false
	}
	if len(r.AnyOf) == 0 {
		return true
	}
	for _, a := range r.AnyOf {
		if a.Index < uint(len(args)) && a.Matches(args[a.Index]) {
			return true
		}
	}
	return false
}

// allow is the plain entry: the syscall is allowed whatever its arguments.
var allow = Rule{}

// allowIf allows the syscall only when one of the alternatives matches.
func allowIf(why string, alternatives ...Arg) Rule {
	return Rule{AnyOf: alternatives, Why: why}
}

// fail makes the syscall return errno instead of running.
func fail(errno uint, why string) Rule {
	return Rule{Errno: errno, Why: why}
}

// low32Is matches when the low 32 bits of argument i equal v. It is the
// comparison for arguments the kernel declares as int or unsigned int: the
// syscall entry truncates them, so the high half must not be able to smuggle
// a value past an Equal comparison of all 64 bits.
func low32Is(i uint, v uint32) Arg {
	return Arg{Index: i, Op: MaskedEqual, Mask: 0xffffffff, Value: uint64(v)}
}

// noneOf matches when argument i has none of the bits in flags set.
func noneOf(i uint, flags uint64) Arg {
	return Arg{Index: i, Op: MaskedEqual, Mask: flags, Value: 0}
}

// low32Except returns alternatives that together match every value of
// argument i whose low 32 bits are none of deny, and nothing else.
//
// It exists because "allowed except these values" cannot be written as an
// ALLOW rule plus ERRNO rules: libseccomp drops a conditional rule for a
// syscall that also has an unconditional one, whatever the actions and the
// order (measured with libseccomp 2.5.4 and pinned by
// TestNaiveIoctlExceptionIsDropped; TestUnderFilter issues the ioctls under
// the loaded filter). Instead the allowed set is cut into masked-equal
// "cubes": walking the 32 bits from the top, every branch that no denied
// value follows becomes one alternative (a bit prefix), so the cubes are
// disjoint and cover exactly the complement. For one denied value that is
// 32 alternatives; two values sharing their top 28 bits take 34.
func low32Except(i uint, deny ...uint32) []Arg {
	deny = slices.Sorted(maps.Keys(setOf(deny)))
	var out []Arg
	var walk func(bit int, mask, value uint32, under []uint32)
	walk = func(bit int, mask, value uint32, under []uint32) {
		if len(under) == 0 {
			out = append(out, Arg{Index: i, Op: MaskedEqual, Mask: uint64(mask), Value: uint64(value)})
			return
		}
		if bit < 0 {
			return // the whole prefix is one denied value
		}
		b := uint32(1) << bit
		var zero, one []uint32
		for _, v := range under {
			if v&b == 0 {
				zero = append(zero, v)
			} else {
				one = append(one, v)
			}
		}
		walk(bit-1, mask|b, value, zero)
		walk(bit-1, mask|b, value|b, one)
	}
	walk(31, 0, 0, deny)
	return out
}

func setOf(vs []uint32) map[uint32]struct{} {
	m := make(map[uint32]struct{}, len(vs))
	for _, v := range vs {
		m[v] = struct{}{}
	}
	return m
}

// Rules returns the profile: every syscall the sandbox may make, by amd64
// name. Anything not in it fails with EPERM (ENOSYS above the highest
// syscall number listed, see Config). The map is a copy.
func Rules() map[string]Rule {
	out := make(map[string]Rule, len(profile))
	for name, r := range profile {
		r.AnyOf = slices.Clone(r.AnyOf)
		out[name] = r
	}
	return out
}

// Denied returns the syscalls that must stay out of the profile, each with
// the reason. It documents what was taken out of Docker's default profile
// and is what the property tests hold the table against. The map is a copy.
func Denied() map[string]string {
	return maps.Clone(denied)
}
