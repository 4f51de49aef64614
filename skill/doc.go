// Package skill loads a skill folder: it parses SKILL.md (YAML frontmatter
// with line positions, then a Markdown body), validates the declaration,
// hashes the resolved tree and freezes the result in a Snapshot that every
// later stage reads and none can change.
package skill
