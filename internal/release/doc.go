// Package release tests scripts/release-build, which builds the prebuilt
// host binaries and the SHA256SUMS a release ships (issue 17). It has no
// code of its own: the script is what is under test.
package release
