// Package kernel is the executeCode feature: one Jupyter kernel per
// buffer (started on first use through an embedded Python helper, stopped
// with its buffer, on :ClaudeKernel stop and at exit) and the user's
// consent before code runs.
//
// It must never know another feature, the IDE server's lifecycle or
// go-client.
package kernel
