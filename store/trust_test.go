package store

import (
	"errors"
	"testing"
)

func TestTrust(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if ok, err := s.Trusted(ctx, "h1"); err != nil || ok {
		t.Fatalf("Trusted before pin = %v, %v", ok, err)
	}
	if err := s.Trust(ctx, "h1", "report", "/skills/report"); err != nil {
		t.Fatal(err)
	}
	// Re-pinning refreshes, it is not an error.
	if err := s.Trust(ctx, "h1", "report", "/moved/report"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustPack(ctx, "h2", "pack", "/skills"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h2"} {
		if ok, err := s.Trusted(ctx, h); err != nil || !ok {
			t.Errorf("Trusted(%s) = %v, %v", h, ok, err)
		}
	}
	pins, err := s.TrustList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != 2 || pins[0].SkillID != "pack" || !pins[0].Pack ||
		pins[1].Path != "/moved/report" || pins[1].Pack || pins[1].PinnedAt.IsZero() {
		t.Errorf("TrustList = %+v", pins)
	}
	if err := s.Untrust(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Trusted(ctx, "h1"); err != nil || ok {
		t.Errorf("Trusted after untrust = %v, %v", ok, err)
	}

	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"untrust unknown", func() error { return s.Untrust(ctx, "h1") }, ErrNotFound},
		{"trust empty hash", func() error { return s.Trust(ctx, "", "x", "/x") }, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	entries := []QuarantineEntry{
		{ContentHash: "h1", SkillID: "report", Reason: "file_violation", InvocationID: "i1"},
		{ContentHash: "h2", SkillID: "report", Reason: "domain_violation", InvocationID: "i2"},
		{ContentHash: "h3", SkillID: "other", Reason: "scope_violation", InvocationID: "i3"},
		// A second violation of h1 keeps the first reason.
		{ContentHash: "h1", SkillID: "report", Reason: "later", InvocationID: "i4"},
	}
	for _, q := range entries {
		if err := s.Quarantine(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if ok, reason, err := s.Quarantined(ctx, "h1"); err != nil || !ok || reason != "file_violation" {
		t.Errorf("Quarantined(h1) = %v, %q, %v", ok, reason, err)
	}
	if ok, _, err := s.Quarantined(ctx, "clean"); err != nil || ok {
		t.Errorf("Quarantined(clean) = %v, %v", ok, err)
	}
	list, err := s.QuarantineList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].InvocationID != "i1" || list[0].At.IsZero() {
		t.Errorf("QuarantineList = %+v", list)
	}

	tests := []struct {
		name    string
		release string
		wantN   int
		wantErr error
	}{
		{"by skill id releases every hash", "report", 2, nil},
		{"by hash", "h3", 1, nil},
		{"nothing left", "report", 0, ErrNotFound},
		{"unknown", "nope", 0, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := s.Release(ctx, tt.release)
			if n != tt.wantN || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Release(%s) = %d, %v; want %d, %v", tt.release, n, err, tt.wantN, tt.wantErr)
			}
		})
	}
	if err := s.Quarantine(ctx, QuarantineEntry{SkillID: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Quarantine without hash = %v, want ErrInvalid", err)
	}
}
