// Package integration holds the end-to-end tests that need root and Linux:
// real skills in real sandboxes, and the escape corpus. They build with the
// "integration" tag (make test-integration) and skip, saying why, when not
// run as root.
package integration
