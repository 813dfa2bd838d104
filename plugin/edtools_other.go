//go:build !unix

package plugin

import (
	"errors"
	"net"
)

var errNoUnix = errors.New("editor tools: needs unix sockets (not available on this system)")

// PrivateDir is the directory of the editor-tools sockets; unix only.
func PrivateDir() (string, error) { return "", errNoUnix }

func listenEditorTools(int, discovery) (net.Listener, string, string, error) {
	return nil, "", "", errNoUnix
}

// FindEditorSocket finds the editor-tools socket for cwd; unix only.
func FindEditorSocket(string) (string, string, error) { return "", "", errNoUnix }

// EditorSocketToken reads a socket's token; unix only.
func EditorSocketToken(string) (string, error) { return "", errNoUnix }
