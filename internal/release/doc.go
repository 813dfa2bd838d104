// Package release tests the scripts that build and ship the host:
// scripts/release-build (the prebuilt binaries, their SHA256SUMS and its
// signature) and the Makefile's view of what the host is built from. It has
// no code of its own: the scripts are what is under test.
package release
