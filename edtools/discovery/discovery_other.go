//go:build !unix

package discovery

import (
	"errors"
	"net"
)

var errNoUnix = errors.New("editor tools: needs unix sockets (not available on this system)")

// PrivateDir is the directory of the editor-tools sockets; unix only.
func PrivateDir() (string, error) { return "", errNoUnix }

// Listen listens on a unix socket; unix only.
func Listen(int, Discovery) (net.Listener, string, string, error) {
	return nil, "", "", errNoUnix
}

// Find finds the editor-tools socket for cwd; unix only.
func Find(string) (string, string, error) { return "", "", errNoUnix }

// Token reads a socket's token; unix only.
func Token(string) (string, error) { return "", errNoUnix }

// WritePrivateJSON writes a private file; unix only.
func WritePrivateJSON(string, any) error { return errNoUnix }
