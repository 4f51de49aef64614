// Package invocation runs one skill invocation end to end (DESIGN §3):
// load, admit, plan, broker, sandbox, supervise, finish. It is the only
// place these steps meet; the CLI calls Run and maps the Result to an exit
// code, and every exit path cleans up what was set up.
package invocation
