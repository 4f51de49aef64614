package skill

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// corpusPath is where the shared corpus of public frontmatters sits beside
// a checkout (it is not committed; see DESIGN §2).
func corpusPath() string {
	if p := os.Getenv("SKILLRUN_CORPUS"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "shared", "corpora", "skills_frontmatter.jsonl")
}

// TestPublicCorpus loads every frontmatter of the public corpus: each skill
// row must load (warnings allowed); agent and command rows must not panic
// and must position any error at a line.
func TestPublicCorpus(t *testing.T) {
	f, err := os.Open(corpusPath())
	if err != nil {
		t.Skipf("public corpus not present beside this checkout (%v); set SKILLRUN_CORPUS to its path", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	skills := 0
	for sc.Scan() {
		var row struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
			Raw  string `json:"raw_frontmatter"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("corpus row: %v", err)
		}
		_, diags := Parse(row.Path, []byte("---\n"+row.Raw+"\n---\nbody\n"))
		for _, d := range diags {
			if d.Severity != SeverityError {
				continue
			}
			if row.Kind == "skill" {
				t.Errorf("%s: skill must load: %s", row.Path, d)
			}
			if d.Line < 1 {
				t.Errorf("%s: error without a line: %s", row.Path, d)
			}
		}
		if row.Kind == "skill" {
			skills++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if skills < 100 {
		t.Fatalf("corpus has %d skill rows, expected the 108 of the shared corpus", skills)
	}
}
