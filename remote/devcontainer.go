package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DevcontainerConfig is what a project's .devcontainer/devcontainer.json says
// about where the workspace is inside the container.
type DevcontainerConfig struct {
	// File is the configuration file read.
	File string
	// Folder is the container's workspace folder (workspaceFolder, by
	// default /workspaces/<the local folder's name>): where the CLI runs.
	Folder string
	// Remote and Local are the mount's two ends (workspaceMount's target
	// and source, by default Folder and the local folder): the mapping.
	Remote, Local string
}

// ErrNoDevcontainer is wrapped when a folder has no devcontainer.json.
var ErrNoDevcontainer = errors.New("no devcontainer.json")

// ReadDevcontainer reads the devcontainer configuration of the local
// folder dir (.devcontainer/devcontainer.json, else .devcontainer.json),
// a JSON with comments and trailing commas as the devcontainer CLI takes.
func ReadDevcontainer(dir string) (DevcontainerConfig, error) {
	var b []byte
	var file string
	var err error
	for _, name := range []string{filepath.Join(".devcontainer", "devcontainer.json"), ".devcontainer.json"} {
		file = filepath.Join(dir, name)
		b, err = os.ReadFile(file)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return DevcontainerConfig{}, fmt.Errorf("%w in %s (.devcontainer/devcontainer.json)", ErrNoDevcontainer, dir)
	}
	if err != nil {
		return DevcontainerConfig{}, fmt.Errorf("devcontainer: %w", err)
	}
	var cfg struct {
		WorkspaceFolder string `json:"workspaceFolder"`
		WorkspaceMount  string `json:"workspaceMount"`
	}
	if err := json.Unmarshal(stripJSONC(b), &cfg); err != nil {
		return DevcontainerConfig{}, fmt.Errorf("devcontainer: %s: %w", file, err)
	}
	base := filepath.Base(dir)
	subst := strings.NewReplacer("${localWorkspaceFolder}", dir, "${localWorkspaceFolderBasename}", base)
	d := DevcontainerConfig{File: file, Folder: subst.Replace(cfg.WorkspaceFolder), Local: dir}
	if d.Folder == "" {
		d.Folder = "/workspaces/" + base
	}
	d.Remote = d.Folder
	if cfg.WorkspaceMount != "" {
		src, dst := mountEnds(subst.Replace(cfg.WorkspaceMount))
		if dst == "" || src == "" {
			return DevcontainerConfig{}, fmt.Errorf("devcontainer: %s: workspaceMount %q names no source and target", file, cfg.WorkspaceMount)
		}
		d.Remote, d.Local = path.Clean(dst), src
		if !filepath.IsAbs(d.Local) {
			return DevcontainerConfig{}, fmt.Errorf("devcontainer: %s: workspaceMount's source %q is not a local folder (a volume cannot be mapped)", file, src)
		}
	}
	return d, nil
}

// mountEnds reads a --mount style "source=…,target=…,type=bind".
func mountEnds(s string) (src, dst string) {
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "source", "src":
			src = v
		case "target", "dst", "destination":
			dst = v
		}
	}
	return src, dst
}

// stripJSONC removes // and /* */ comments outside strings and commas
// before a closing bracket, leaving plain JSON.
func stripJSONC(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
			out = append(out, ' ')
		case c == '}' || c == ']':
			// a trailing comma before it goes
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\n' || out[j] == '\t' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
