package store

import (
	"errors"
	"testing"
)

func TestApprovals(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	const ws, cmd = "/work/repo", "rm -rf ./build && make"
	if v, err := s.Verdict(ctx, ws, cmd); err != nil || v != VerdictNone {
		t.Fatalf("Verdict before any = %q, %v", v, err)
	}
	first, err := s.RequestApproval(ctx, ws, cmd, "i1")
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.RequestApproval(ctx, ws, "make test", "i1")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingApprovals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0] != first || pending[1] != second {
		t.Fatalf("PendingApprovals = %+v, want [%+v %+v]", pending, first, second)
	}
	// Pending is not a verdict.
	if v, err := s.Verdict(ctx, ws, cmd); err != nil || v != VerdictNone {
		t.Errorf("Verdict while pending = %q, %v", v, err)
	}

	if err := s.Decide(ctx, first.ID, VerdictDeny); err != nil {
		t.Fatal(err)
	}
	got, err := s.Approval(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != VerdictDeny || got.DecidedAt.IsZero() {
		t.Errorf("Approval after deny = %+v", got)
	}
	// Denials are remembered, per workspace and verbatim command.
	verdicts := []struct {
		ws, cmd string
		want    Verdict
	}{
		{ws, cmd, VerdictDeny},
		{"/other", cmd, VerdictNone},
		{ws, cmd + " ", VerdictNone},
	}
	for _, v := range verdicts {
		if got, err := s.Verdict(ctx, v.ws, v.cmd); err != nil || got != v.want {
			t.Errorf("Verdict(%q, %q) = %q, %v; want %q", v.ws, v.cmd, got, err, v.want)
		}
	}

	// A later decision on the same command is the one remembered.
	third, err := s.RequestApproval(ctx, ws, cmd, "i2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, third.ID, VerdictApprove); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Verdict(ctx, ws, cmd); err != nil || v != VerdictApprove {
		t.Errorf("Verdict after approve = %q, %v", v, err)
	}

	// A cancelled (dismissed, expired) request records nothing.
	if err := s.CancelApproval(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.PendingApprovals(ctx); err != nil || len(pending) != 0 {
		t.Errorf("PendingApprovals after all decided = %+v, %v", pending, err)
	}

	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"decide unknown", func() error { return s.Decide(ctx, "nope", VerdictApprove) }, ErrNotFound},
		{"decide twice", func() error { return s.Decide(ctx, first.ID, VerdictApprove) }, ErrDecided},
		{"decide bad verdict", func() error { return s.Decide(ctx, second.ID, "maybe") }, ErrInvalid},
		{"decide none", func() error { return s.Decide(ctx, second.ID, VerdictNone) }, ErrInvalid},
		{"decide cancelled", func() error { return s.Decide(ctx, second.ID, VerdictApprove) }, ErrNotFound},
		{"cancel decided", func() error { return s.CancelApproval(ctx, first.ID) }, ErrDecided},
		{"cancel unknown", func() error { return s.CancelApproval(ctx, "nope") }, ErrNotFound},
		{"get unknown", func() error { _, err := s.Approval(ctx, "nope"); return err }, ErrNotFound},
		{"request empty", func() error { _, err := s.RequestApproval(ctx, ws, "", ""); return err }, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// The first verdict stands.
	if got, _ := s.Approval(ctx, first.ID); got.Verdict != VerdictDeny {
		t.Errorf("verdict flipped: %+v", got)
	}
}
