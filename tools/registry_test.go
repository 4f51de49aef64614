package tools

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/skillrun/skillrun/enforce"
)

func TestNativeCatalog(t *testing.T) {
	cat, err := Catalog(NativeSpecs())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "MemoryRead", "MemorySearch", "MemoryEmit", "HttpFetch", "HttpPost"}
	specs := cat.Specs()
	if len(specs) != len(want) {
		t.Fatalf("%d native tools, want %d", len(specs), len(want))
	}
	for i, s := range specs {
		if s.Name != want[i] {
			t.Errorf("tool %d = %s, want %s", i, s.Name, want[i])
		}
		var sch struct {
			Type     string         `json:"type"`
			Props    map[string]any `json:"properties"`
			Required []string       `json:"required"`
		}
		if err := json.Unmarshal(s.InputSchema, &sch); err != nil || sch.Type != "object" {
			t.Errorf("%s: schema is not a JSON object schema: %v", s.Name, err)
		}
		for _, r := range sch.Required {
			if _, ok := sch.Props[r]; !ok {
				t.Errorf("%s: required %q has no property", s.Name, r)
			}
		}
		if len(s.Capabilities) == 0 {
			t.Errorf("%s declares no capability", s.Name)
		}
	}
	var _ enforce.Catalog = cat
	if ts, ok := cat.Lookup("MemoryEmit"); !ok || ts.Capabilities[0] != enforce.CapMemoryWrite {
		t.Fatalf("Lookup(MemoryEmit) = %+v, %v", ts, ok)
	}
	if _, ok := cat.Lookup("Task"); ok {
		t.Fatal("Task is not a native tool")
	}
	if _, ok := cat.Tool("Read"); ok {
		t.Fatal("a catalog has no implementations")
	}
}

func TestRegistryRefusesDuplicates(t *testing.T) {
	specs := append(NativeSpecs(), NativeSpecs()[0])
	if _, err := Catalog(specs); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err = %v, want ErrDuplicate", err)
	}
}
