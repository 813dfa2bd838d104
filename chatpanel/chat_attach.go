package chatpanel

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/chat"
)

// attachment is one chat_send attachment.
type attachment struct {
	Type      string `json:"type"` // file, image, text
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Clipboard bool   `json:"clipboard"`
	Text      string `json:"text"`
}

// Limits on what an attachment may add to a message.
const (
	maxFileAttachment  = 256 << 10
	maxImageAttachment = 20 << 20
)

// imageType reports whether the API takes images of this media type.
func imageType(mt string) bool {
	return mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp"
}

// block turns the attachment into a content block and a short label.
// tell (nil: none) spells the file's path as the CLI knows it — the far
// path when it runs on an SSH host or in a container — or refuses a file
// it cannot name.
func (a attachment) block(ctx context.Context, cwd string, tell func(string) (string, error)) (chat.ContentBlock, string, error) {
	path := a.Path
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	label := path
	if r, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(r, "..") {
		label = r
	}
	switch a.Type {
	case "text":
		if a.Text == "" {
			return chat.ContentBlock{}, "", errors.New("empty text attachment")
		}
		return chat.ContentBlock{Type: "text", Text: a.Text}, firstLineOf(a.Text), nil
	case "file":
		if path == "" {
			return chat.ContentBlock{}, "", errors.New("file attachment without a path")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return chat.ContentBlock{}, "", fmt.Errorf("attach %s: %w", path, err)
		}
		text := string(b)
		attr := ""
		if a.StartLine > 0 {
			end := a.EndLine
			if end < a.StartLine {
				end = a.StartLine
			}
			lines := strings.SplitAfter(text, "\n")
			if a.StartLine > len(lines) {
				return chat.ContentBlock{}, "", fmt.Errorf("attach %s: line %d is past the end (%d lines)", path, a.StartLine, len(lines))
			}
			if end > len(lines) {
				end = len(lines)
			}
			text = strings.Join(lines[a.StartLine-1:end], "")
			attr = fmt.Sprintf(" lines=\"%d-%d\"", a.StartLine, end)
			label = fmt.Sprintf("%s:%d-%d", label, a.StartLine, end)
		}
		note := ""
		if len(text) > maxFileAttachment {
			text = text[:maxFileAttachment]
			note = fmt.Sprintf("\n(cut at %d KiB; read the file for the rest)", maxFileAttachment>>10)
		}
		named := path
		if tell != nil {
			if named, err = tell(path); err != nil {
				return chat.ContentBlock{}, "", fmt.Errorf("attach %s: %w", path, err)
			}
		}
		return chat.ContentBlock{Type: "text", Text: fmt.Sprintf("<file path=%q%s>\n%s%s\n</file>", named, attr, text, note)}, label, nil
	case "image":
		var data []byte
		var err error
		if a.Clipboard {
			data, err = clipboardImage(ctx)
			label = "clipboard image"
		} else if path != "" {
			data, err = os.ReadFile(path)
		} else {
			err = errors.New("image attachment without a path or clipboard")
		}
		if err != nil {
			return chat.ContentBlock{}, "", fmt.Errorf("attach image: %w", err)
		}
		if len(data) > maxImageAttachment {
			return chat.ContentBlock{}, "", fmt.Errorf("attach image: %d bytes is too large (max %d MiB)", len(data), maxImageAttachment>>20)
		}
		mt := http.DetectContentType(data)
		if !imageType(mt) {
			return chat.ContentBlock{}, "", fmt.Errorf("attach image %s: %s is not png, jpeg, gif or webp", label, mt)
		}
		return chat.ContentBlock{Type: "image", Source: &chat.ImageSource{Type: "base64", MediaType: mt,
			Data: base64.StdEncoding.EncodeToString(data)}}, label, nil
	}
	return chat.ContentBlock{}, "", fmt.Errorf("unknown attachment type %q", a.Type)
}

// clipboardImage reads a PNG from the clipboard with wl-paste (Wayland)
// or xclip (X11).
func clipboardImage(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var tried []string
	for _, c := range [][]string{
		{"wl-paste", "--no-newline", "--type", "image/png"},
		{"xclip", "-selection", "clipboard", "-t", "image/png", "-o"},
	} {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		tried = append(tried, c[0])
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Stdout = &out
		if err := cmd.Run(); err == nil && out.Len() > 0 {
			return out.Bytes(), nil
		}
	}
	if len(tried) == 0 {
		return nil, errors.New("no clipboard tool: install wl-clipboard (wl-paste) or xclip")
	}
	return nil, fmt.Errorf("the clipboard holds no image (tried %s)", strings.Join(tried, ", "))
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
