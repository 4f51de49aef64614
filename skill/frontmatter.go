package skill

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFrontmatterBytes bounds the YAML block: a declaration is a few lines,
// and a bound keeps a hostile file from costing the loader anything.
const MaxFrontmatterBytes = 64 << 10

// document is SKILL.md split into its parts, with line numbers.
type document struct {
	yaml      []byte
	yamlLine  int // file line of the first YAML line
	body      string
	bodyLine  int
	closeLine int
}

// splitFrontmatter finds the leading '---' block. It accepts a UTF-8 BOM,
// CRLF line ends and '...' as the closing marker, as YAML does.
func splitFrontmatter(data []byte) (document, *Diagnostic) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) == 0 || !isMarker(lines[0], "---") {
		return document{}, &Diagnostic{Line: 1, Field: "frontmatter", Message: "SKILL.md must start with a '---' line opening the YAML frontmatter"}
	}
	var y bytes.Buffer
	for i := 1; i < len(lines); i++ {
		if isMarker(lines[i], "---") || isMarker(lines[i], "...") {
			rest := bytes.Join(lines[i+1:], nil)
			return document{yaml: y.Bytes(), yamlLine: 2, body: string(rest), bodyLine: i + 2, closeLine: i + 1}, nil
		}
		if y.Len()+len(lines[i]) > MaxFrontmatterBytes {
			return document{}, &Diagnostic{Line: i + 1, Field: "frontmatter", Message: "frontmatter is larger than 64 KiB"}
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(lines[i], []byte("\n")), []byte("\r"))
		if bytes.IndexByte(line, '\r') >= 0 {
			// YAML reads a lone CR as a line break and would number
			// lines differently from the file: refuse it where it is.
			return document{}, &Diagnostic{Line: i + 1, Field: "frontmatter", Message: "a carriage return inside a line"}
		}
		y.Write(line)
		y.WriteByte('\n')
	}
	return document{}, &Diagnostic{Line: 1, Field: "frontmatter", Message: "the '---' frontmatter block is never closed"}
}

func isMarker(line []byte, marker string) bool {
	return string(bytes.TrimRight(line, " \t\r\n")) == marker
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlDiagnostic turns a go-yaml error into a positioned diagnostic. The
// library reports syntax errors only as text, so the line is read from it.
func yamlDiagnostic(err error, offset int) Diagnostic {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Diagnostic{Line: n + offset - 1, Field: "frontmatter", Message: "invalid YAML: " + m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return Diagnostic{Line: offset, Field: "frontmatter", Message: "invalid YAML: " + msg}
}

// decodeYAML parses the frontmatter into its top-level mapping node.
func decodeYAML(doc document) (*yaml.Node, *Diagnostic) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc.yaml, &root); err != nil {
		d := yamlDiagnostic(err, doc.yamlLine)
		return nil, &d
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &Diagnostic{Line: top.Line + doc.yamlLine - 1, Field: "frontmatter", Message: "frontmatter must be a mapping of keys to values"}
	}
	return top, nil
}

// encodeNode renders a node back to compact YAML, for kept unknown keys.
func encodeNode(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
