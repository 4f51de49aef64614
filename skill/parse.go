package skill

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// parser accumulates one SKILL.md's manifest and diagnostics.
type parser struct {
	file   string
	offset int // file line of YAML line 1
	m      Manifest
	diags  []Diagnostic
	seen   map[string]string // canonical key -> spelling first seen
}

func (p *parser) line(n *yaml.Node) int { return n.Line + p.offset - 1 }

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: p.file, Line: p.line(n), Field: field, Message: fmt.Sprintf(format, args...), Severity: SeverityError})
}

func (p *parser) warnf(line int, field, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: p.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...), Severity: SeverityWarning})
}

// fieldSpec says how to read one known key. Both the v1 snake_case names and
// Claude Code's kebab-case spellings map onto the same canonical key.
type fieldSpec struct {
	canonical string
	read      func(p *parser, key string, v *yaml.Node)
}

var fields = map[string]fieldSpec{
	"name":                  {"name", func(p *parser, k string, v *yaml.Node) { p.m.Name = p.text(k, v, true) }},
	"description":           {"description", func(p *parser, k string, v *yaml.Node) { p.m.Description = p.text(k, v, true) }},
	"version":               {"version", func(p *parser, k string, v *yaml.Node) { p.m.Version = p.text(k, v, false) }},
	"license":               {"license", func(p *parser, k string, v *yaml.Node) { p.m.License = p.text(k, v, false) }},
	"metadata":              {"metadata", (*parser).metadata},
	"allowed_tools":         {"allowed_tools", func(p *parser, k string, v *yaml.Node) { p.m.AllowedTools = p.toolRules(k, v) }},
	"allowed-tools":         {"allowed_tools", func(p *parser, k string, v *yaml.Node) { p.m.AllowedTools = p.toolRules(k, v) }},
	"disallowed_tools":      {"disallowed_tools", func(p *parser, k string, v *yaml.Node) { p.m.DisallowedTools = p.toolRules(k, v) }},
	"disallowed-tools":      {"disallowed_tools", func(p *parser, k string, v *yaml.Node) { p.m.DisallowedTools = p.toolRules(k, v) }},
	"allowed_memory_scopes": {"allowed_memory_scopes", func(p *parser, k string, v *yaml.Node) { p.m.AllowedMemoryScopes = p.memoryScopes(k, v) }},
	"effort_minutes": {"effort_minutes", func(p *parser, k string, v *yaml.Node) {
		p.m.EffortMinutes = int(p.integer(k, v, 1, MaxEffortMinutes))
	}},
	"x-allowed-files":   {"x-allowed-files", func(p *parser, k string, v *yaml.Node) { p.m.AllowedFiles = p.fileGlobs(k, v) }},
	"x-allowed-domains": {"x-allowed-domains", func(p *parser, k string, v *yaml.Node) { p.m.AllowedDomains = p.domainGlobs(k, v) }},
	"x-entrypoint":      {"x-entrypoint", (*parser).entrypoint},
	"x-max-memory":      {"x-max-memory", func(p *parser, k string, v *yaml.Node) { p.m.MaxMemory = p.size(k, v, 4<<20) }},
	"x-max-address-space": {"x-max-address-space", func(p *parser, k string, v *yaml.Node) {
		p.m.MaxAddressSpace = p.size(k, v, 16<<20)
	}},
	"x-max-pids":   {"x-max-pids", func(p *parser, k string, v *yaml.Node) { p.m.MaxPids = p.integer(k, v, 1, 1<<16) }},
	"x-rate-limit": {"x-rate-limit", func(p *parser, k string, v *yaml.Node) { p.m.RateLimit = int(p.integer(k, v, 1, 1<<20)) }},
}

// foreignKeys are keys other agent hosts define. They are kept and reported
// with what they mean here, so a public skill validates without surprises.
var foreignKeys = map[string]string{
	"argument-hint":                "used by Claude Code's slash commands; ignored here",
	"disable-model-invocation":     "used by Claude Code; ignored here",
	"user-invocable":               "used by Claude Code; ignored here",
	"model":                        "used by Claude Code; ignored here",
	"effort":                       "not a skillrun field; the budget is effort_minutes (default 10)",
	"type":                         "not a skillrun field; ignored",
	"color":                        "used by Claude Code agents; ignored here",
	"tools":                        "a Claude Code agent field: it grants nothing here; declare allowed-tools",
	"hide-from-slash-command-tool": "used by Claude Code; ignored here",
	"when_to_use":                  "used by Claude Code; ignored here",
	"context":                      "used by Claude Code; ignored here",
	"agent":                        "used by Claude Code; ignored here",
	"hooks":                        "used by Claude Code; skillrun never runs skill hooks",
	"compatibility":                "part of the Agent Skills format; not checked here",
}

// Parse reads SKILL.md bytes. file names the file in diagnostics. The
// manifest is meaningful only when no diagnostic is an error.
func Parse(file string, data []byte) (Manifest, []Diagnostic) {
	p := &parser{file: file, seen: map[string]string{}}
	p.m.EffortMinutes = DefaultEffortMinutes
	p.m.Entrypoint = DefaultEntrypoint
	p.m.Lines = map[string]int{}
	doc, d := splitFrontmatter(data)
	if d != nil {
		d.File, d.Severity = file, SeverityError
		return p.m, []Diagnostic{*d}
	}
	p.offset = doc.yamlLine
	top, d := decodeYAML(doc)
	if d != nil {
		d.File, d.Severity = file, SeverityError
		return p.m, []Diagnostic{*d}
	}
	p.m.Body, p.m.BodyLine = doc.body, doc.bodyLine
	for i := 0; i+1 < len(top.Content); i += 2 {
		p.field(top.Content[i], deref(top.Content[i+1]))
	}
	p.required(doc)
	p.m.Substitutions = findSubstitutions(doc.body, doc.bodyLine)
	for _, s := range p.m.Substitutions {
		p.warnf(s.Line, "body", "!`%s` is a shell substitution other hosts run at load time; skillrun never runs it", s.Command)
	}
	return p.m, p.diags
}

// deref follows a YAML alias so that anchors work like plain values.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func (p *parser) field(k, v *yaml.Node) {
	if k.Kind != yaml.ScalarNode || k.Value == "" {
		p.errorf(k, "frontmatter", "keys must be non-empty plain strings")
		return
	}
	key := k.Value
	if prev, dup := p.seen[canonicalKey(key)]; dup {
		if prev == key {
			p.errorf(k, key, "given twice")
		} else {
			p.errorf(k, key, "given twice, also as %s", prev)
		}
		return
	}
	p.seen[canonicalKey(key)] = key
	p.m.Lines[key] = p.line(k)
	if spec, ok := fields[key]; ok {
		spec.read(p, key, v)
		return
	}
	p.m.Extra = append(p.m.Extra, Field{Key: key, Line: p.line(k), Value: encodeNode(v)})
	switch {
	case foreignKeys[key] != "":
		p.warnf(p.line(k), key, "%s", foreignKeys[key])
	case strings.HasPrefix(key, "x-"):
		p.warnf(p.line(k), key, "unknown extension; kept but not enforced")
	default:
		p.warnf(p.line(k), key, "unknown key; kept but ignored")
	}
}

func canonicalKey(key string) string {
	if spec, ok := fields[key]; ok {
		return spec.canonical
	}
	return key
}

func (p *parser) required(doc document) {
	for _, k := range []string{"name", "description"} {
		if _, ok := p.seen[k]; !ok {
			p.diags = append(p.diags, Diagnostic{File: p.file, Line: doc.closeLine, Field: k, Message: "required", Severity: SeverityError})
		}
	}
	if p.m.Name != "" && !nameRE.MatchString(p.m.Name) {
		p.warnf(p.m.Lines["name"], "name", "%q is not lowercase letters, digits and hyphens as the Agent Skills format asks", p.m.Name)
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// text reads a scalar string. Names become identifiers in audit rows and
// environment variables, so control characters are refused outright.
func (p *parser) text(key string, v *yaml.Node, required bool) string {
	if v.Kind != yaml.ScalarNode {
		p.errorf(v, key, "must be a string, not a %s", kindName(v))
		return ""
	}
	s := v.Value
	if v.Tag == "!!null" {
		s = ""
	}
	if required && strings.TrimSpace(s) == "" {
		p.errorf(v, key, "must not be empty")
		return ""
	}
	if key == "name" {
		s = strings.TrimSpace(s)
		if len(s) > 128 || strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '/' }) >= 0 {
			p.errorf(v, key, "must be at most 128 characters without '/' or control characters")
			return ""
		}
	}
	return s
}

func kindName(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	switch v.Tag {
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	case "!!null":
		return "null"
	}
	return "string"
}

func (p *parser) metadata(key string, v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, key, "must be a mapping of keys to strings")
		return
	}
	p.m.Metadata = map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		mk, mv := v.Content[i], deref(v.Content[i+1])
		if mv.Kind != yaml.ScalarNode {
			p.warnf(p.line(mv), key+"."+mk.Value, "not a string; kept as YAML text")
		}
		p.m.Metadata[mk.Value] = encodeNode(mv)
	}
}

// integer reads a whole number in [lo, hi]. A quoted number is accepted
// with a warning: public skills quote numbers, and refusing them helps no one.
func (p *parser) integer(key string, v *yaml.Node, lo, hi int64) int64 {
	if v.Kind != yaml.ScalarNode {
		p.errorf(v, key, "must be a whole number, not a %s", kindName(v))
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
	if err != nil || (v.Tag != "!!int" && v.Tag != "!!str") {
		p.errorf(v, key, "must be a whole number, got %q", v.Value)
		return 0
	}
	if v.Tag == "!!str" {
		p.warnf(p.line(v), key, "a number written as a string; read as %d", n)
	}
	if n < lo || n > hi {
		p.errorf(v, key, "must be between %d and %d, got %d", lo, hi, n)
		return 0
	}
	return n
}

// size reads a byte count such as 256MiB, 1GiB, 512M or 1048576.
func (p *parser) size(key string, v *yaml.Node, min int64) int64 {
	if v.Kind != yaml.ScalarNode {
		p.errorf(v, key, "must be a size such as 256MiB, not a %s", kindName(v))
		return 0
	}
	n, err := ParseSize(v.Value)
	if err != nil {
		p.errorf(v, key, "%v", err)
		return 0
	}
	if n < min {
		p.errorf(v, key, "%s is below the minimum of %s", v.Value, FormatSize(min))
		return 0
	}
	return n
}

// strings reads a string or a list of strings.
func (p *parser) stringList(key string, v *yaml.Node) ([]string, []int) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, nil
	case v.Kind == yaml.ScalarNode:
		return []string{v.Value}, []int{p.line(v)}
	case v.Kind == yaml.SequenceNode:
		out, lines := make([]string, 0, len(v.Content)), make([]int, 0, len(v.Content))
		for _, it := range v.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
				p.errorf(it, key, "list items must be strings, not a %s", kindName(it))
				continue
			}
			out, lines = append(out, it.Value), append(lines, p.line(it))
		}
		return out, lines
	}
	p.errorf(v, key, "must be a string or a list of strings, not a %s", kindName(v))
	return nil, nil
}

func (p *parser) memoryScopes(key string, v *yaml.Node) []string {
	items, lines := p.stringList(key, v)
	var out []string
	for i, s := range items {
		if err := checkMemoryGlob(s); err != nil {
			p.diags = append(p.diags, Diagnostic{File: p.file, Line: lines[i], Field: key, Message: err.Error(), Severity: SeverityError})
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) fileGlobs(key string, v *yaml.Node) []string {
	items, lines := p.stringList(key, v)
	var out []string
	for i, s := range items {
		if err := checkFileGlob(s); err != nil {
			p.diags = append(p.diags, Diagnostic{File: p.file, Line: lines[i], Field: key, Message: err.Error(), Severity: SeverityError})
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) domainGlobs(key string, v *yaml.Node) []string {
	items, lines := p.stringList(key, v)
	var out []string
	for i, s := range items {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "/ \t\r\n\x00@") {
			p.diags = append(p.diags, Diagnostic{File: p.file, Line: lines[i], Field: key, Message: fmt.Sprintf("%q is not a host glob such as api.example.com or *.example.com", s), Severity: SeverityError})
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) entrypoint(key string, v *yaml.Node) {
	s := p.text(key, v, true)
	if s == "" {
		return
	}
	clean := path.Clean(s)
	if path.IsAbs(s) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(s, 0) || clean == "." {
		p.errorf(v, key, "%q must be a relative path inside the skill folder", s)
		return
	}
	p.m.Entrypoint = clean
}
