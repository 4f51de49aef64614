package broker

import (
	"context"
	"encoding/json"
	"sort"
	"sync"

	"github.com/skillrun/skillrun/enforce"
)

// ViolationPolicy is what the broker does with a skill fault (DESIGN §9).
type ViolationPolicy string

const (
	// OnViolationDeny denies and audits the attempt; the skill goes on.
	OnViolationDeny ViolationPolicy = "deny"
	// OnViolationQuarantine also revokes every grant for the rest of the
	// invocation (further calls get quarantined; the process is not
	// killed) and quarantines the skill by content hash.
	OnViolationQuarantine ViolationPolicy = "quarantine"
)

// QuarantineFunc records that the skill is quarantined: in the state store,
// by content hash, and as a skill.quarantined audit row.
type QuarantineFunc func(ctx context.Context, d *enforce.Denial) error

// Approver decides a Bash command no rule covers (DESIGN §8). It may park
// the call until an operator answers; true lets the command run in place.
type Approver interface {
	Approve(ctx context.Context, command string) (bool, error)
}

// skillFault reports whether a denial is an attempt outside the declared
// surface. A declared tool this broker does not provide, a rate limit, a
// too-large request or an operator's refusal are not the skill's fault.
func skillFault(r enforce.Reason) bool {
	switch r {
	case enforce.ReasonToolNotAllowed, enforce.ReasonToolDisallowed, enforce.ReasonScopeViolation,
		enforce.ReasonFileViolation, enforce.ReasonDomainViolation, enforce.ReasonCommandNotAllowed:
		return true
	}
	return false
}

// revokedDenial is what every call gets once the grants are revoked.
func (b *Broker) revokedDenial(tool string) error {
	if !b.revoked.Load() {
		return nil
	}
	return &enforce.Denial{Reason: enforce.ReasonQuarantined, Tool: tool, SkillID: b.skillID,
		Detail: "this invocation's grants were revoked after a violation"}
}

// onViolation applies the violation policy to a denial, once.
func (b *Broker) onViolation(ctx context.Context, d *enforce.Denial) {
	if b.cfg.OnViolation != OnViolationQuarantine || !skillFault(d.Reason) || b.revoked.Swap(true) {
		return
	}
	b.log.Warn("broker: skill fault; grants revoked and skill quarantined", "tool", d.Tool, "reason", d.Reason)
	if b.cfg.Quarantine == nil {
		return
	}
	if err := b.cfg.Quarantine(context.WithoutCancel(ctx), d); err != nil {
		b.log.Error("broker: quarantine not recorded", "error", err)
	}
}

// approve asks the Approver about a Bash command the rules refused. It
// returns nil to let the call proceed, or the denial to return.
func (b *Broker) approve(ctx context.Context, tool string, args json.RawMessage, d *enforce.Denial) error {
	if b.cfg.Approver == nil || tool != "Bash" || d.Reason != enforce.ReasonCommandNotAllowed {
		return d
	}
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(args, &a); err != nil || a.Command == "" {
		return d
	}
	ok, err := b.cfg.Approver.Approve(ctx, a.Command)
	if err != nil {
		b.log.Warn("broker: approval failed", "error", err)
	}
	if !ok {
		return &enforce.Denial{Reason: enforce.ReasonApprovalDenied, Tool: tool, SkillID: b.skillID, Detail: "not approved"}
	}
	return nil
}

// ledger is the set of capabilities an invocation actually exercised, kind
// and scope (DESIGN §9): what a skill did, to compare with what it
// declared.
type ledger struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *ledger) add(entries ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	for _, e := range entries {
		l.seen[e] = true
	}
}

func (l *ledger) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.seen))
	for e := range l.seen {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// exercise records that a call of tool succeeded: each capability kind the
// tool declares, with the tool, in the ledger.
func (b *Broker) exercise(tool string) {
	spec, ok := b.cfg.Registry.Lookup(tool)
	if !ok || len(spec.Capabilities) == 0 {
		b.ledger.add("none:" + tool)
		return
	}
	for _, c := range spec.Capabilities {
		b.ledger.add(string(c) + ":" + tool)
	}
}
