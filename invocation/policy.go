package invocation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/store"
)

// Approval modes of --approvals (DESIGN §8).
const (
	ApprovalsDeny = "deny" // headless default: a Bash command no rule covers is denied
	ApprovalsAsk  = "ask"  // park it until an operator answers with skillrun approvals
)

// DefaultApprovalWait is how long a parked call waits for a verdict.
const DefaultApprovalWait = 5 * time.Minute

// approvalPoll is how often a parked call looks for the operator's verdict.
const approvalPoll = 200 * time.Millisecond

// storeApprover parks Bash commands in the state store for an operator.
// Verdicts are kept per workspace (the tenant and the skill's resolved
// folder) and verbatim command: an approval or a denial is remembered; a
// wait that expires, or a call abandoned, records nothing.
type storeApprover struct {
	inv  *invocation
	wait time.Duration
}

func (a storeApprover) workspace() string {
	return a.inv.opts.Tenant + ":" + a.inv.snap.Dir()
}

func (a storeApprover) Approve(ctx context.Context, command string) (bool, error) {
	st, ws := a.inv.store, a.workspace()
	switch v, err := st.Verdict(ctx, ws, command); {
	case err != nil:
		return false, err
	case v == store.VerdictApprove:
		return true, nil
	case v == store.VerdictDeny:
		return false, nil
	}
	req, err := st.RequestApproval(ctx, ws, command, a.inv.opts.InvocationID)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256([]byte(command))
	a.inv.audit(ctx, store.KindApprovalRequested, map[string]any{
		"approval_id": req.ID, "tool_name": "Bash", "command_hash": hex.EncodeToString(sum[:]),
	})
	fmt.Fprintf(a.inv.opts.Stderr, "skillrun: a Bash command waits for approval (%s); run: skillrun approvals list\n", req.ID)
	wait, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	for {
		select {
		case <-wait.Done():
			// Nobody answered: no consent, and nothing to remember.
			_ = st.CancelApproval(context.WithoutCancel(ctx), req.ID)
			return false, nil
		case <-tick.C:
			got, err := st.Approval(wait, req.ID)
			if err != nil {
				continue
			}
			switch got.Verdict {
			case store.VerdictApprove:
				return true, nil
			case store.VerdictDeny:
				return false, nil
			}
		}
	}
}

// quarantine records a skill fault under --on-violation=quarantine: the
// skill's content hash is quarantined until an operator releases it, and
// a skill.quarantined row says why.
func (inv *invocation) quarantine(ctx context.Context, d *enforce.Denial) error {
	reason := fmt.Sprintf("%s: %s", d.Reason, d.Tool)
	inv.audit(ctx, store.KindQuarantined, map[string]any{
		"reason": string(d.Reason), "tool_name": d.Tool, "content_hash": inv.snap.Hash(),
	})
	return inv.store.Quarantine(ctx, store.QuarantineEntry{ContentHash: inv.snap.Hash(), SkillID: inv.snap.ID(),
		Reason: reason, InvocationID: inv.opts.InvocationID})
}

// approver is the broker's Approver for --approvals: nil (deny) unless ask.
func (inv *invocation) approver() broker.Approver {
	if inv.opts.Approvals != ApprovalsAsk {
		return nil
	}
	return storeApprover{inv: inv, wait: inv.opts.ApprovalWait}
}

// checkPolicyOptions refuses unknown --approvals and --on-violation values.
func checkPolicyOptions(o Options) error {
	if o.Approvals != ApprovalsDeny && o.Approvals != ApprovalsAsk {
		return fail(OutcomeInvalid, ExitSetup, "--approvals %q: want deny or ask", o.Approvals)
	}
	if o.OnViolation != string(broker.OnViolationDeny) && o.OnViolation != string(broker.OnViolationQuarantine) {
		return fail(OutcomeInvalid, ExitSetup, "--on-violation %q: want deny or quarantine", o.OnViolation)
	}
	return nil
}
