//go:build !unix

package workspace

import "io/fs"

// fileID is a file's identity; without unix stat data there is none, and
// deny-listing is by name only.
type fileID struct{}

func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func links(fs.FileInfo) uint64 { return 1 }
