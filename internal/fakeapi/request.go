package fakeapi

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Request is one HTTP request the server received, recorded in arrival order.
type Request struct {
	// Method is the HTTP method, e.g. "POST".
	Method string
	// Path is the URL path without the query, e.g. "/v1/messages".
	Path string
	// Query is the raw query string, e.g. "beta=true".
	Query string
	// Header is the request's header.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Main reports whether the server answered this request as a main turn
	// request (see the package documentation): only main requests consume
	// scripted turns.
	Main bool
	// Turn is the index (0-based, over all Script calls) of the scripted
	// turn that answered this request, or -1 if none did.
	Turn int
}

// Message is one entry of a request's "messages" array.
type Message struct {
	// Role is "user" or "assistant"; CLI 2.1.330 also sends "system"
	// messages in the conversation (e.g. its environment block).
	Role string
	// Content holds the message's blocks; a plain string content is
	// returned as a single text block.
	Content []Content
}

// Content is one content block of a message.
type Content struct {
	// Type is the block type: "text", "tool_use", "tool_result", "image", …
	Type string `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// ID and Name identify a tool_use block.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Input is the input of a tool_use block.
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID is the tool_use id that a tool_result block answers.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Content is the raw content of a tool_result block: a string or an
	// array of blocks. [Content.ResultText] flattens it.
	Content json.RawMessage `json:"content,omitempty"`
	// IsError is set on a tool_result block that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Source is the raw source of an image block, e.g.
	// {"type":"base64","media_type":"image/png","data":"…"}.
	Source json.RawMessage `json:"source,omitempty"`
}

// ResultText returns the text of a tool_result block's content, whether the
// content is a string or an array of text blocks (joined by newlines).
func (c Content) ResultText() string {
	return flattenContent(c.Content)
}

// body is the part of a Messages API request body that the server reads.
type body struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
	OutputConfig struct {
		Format *outputFormat `json:"format"`
	} `json:"output_config"`
	OutputFormat *outputFormat `json:"output_format"`
}

// outputFormat asks for structured output: {"type":"json_schema","schema":…}.
type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

func (r Request) decode() body {
	var b body
	_ = json.Unmarshal(r.Body, &b) // a body that does not parse has no messages
	return b
}

// Model returns the "model" field of the request body.
func (r Request) Model() string {
	return r.decode().Model
}

// Tools returns the names in the request's "tools" array, in order.
func (r Request) Tools() []string {
	var names []string
	for _, t := range r.decode().Tools {
		names = append(names, t.Name)
	}
	return names
}

// Messages returns the request's messages. Entries that do not parse are
// skipped.
func (r Request) Messages() []Message {
	var out []Message
	for _, raw := range r.decode().Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		out = append(out, Message{Role: m.Role, Content: parseBlocks(m.Content)})
	}
	return out
}

// ToolResult returns the first tool_result block that answers the tool_use
// block with the given id.
func (r Request) ToolResult(toolUseID string) (Content, bool) {
	for _, m := range r.Messages() {
		for _, c := range m.Content {
			if c.Type == "tool_result" && c.ToolUseID == toolUseID {
				return c, true
			}
		}
	}
	return Content{}, false
}

// Text flattens the system prompt, the text of every message and the content
// of every tool_result into one string (parts separated by newlines), for
// tests that search what the CLI told the model.
func (r Request) Text() string {
	b := r.decode()
	var parts []string
	if s := flattenContent(b.System); s != "" {
		parts = append(parts, s)
	}
	for _, m := range r.Messages() {
		for _, c := range m.Content {
			switch c.Type {
			case "text":
				parts = append(parts, c.Text)
			case "tool_result":
				parts = append(parts, c.ResultText())
			}
		}
	}
	return strings.Join(parts, "\n")
}

// parseBlocks reads a message content: a string or an array of blocks.
func parseBlocks(raw json.RawMessage) []Content {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Content{{Type: "text", Text: s}}
	}
	var blocks []Content
	_ = json.Unmarshal(raw, &blocks) // anything else has no blocks
	return blocks
}

// flattenContent returns the text of a string or of an array of blocks
// (text blocks, and tool_result blocks nested in them), joined by newlines.
func flattenContent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var parts []string
	for _, c := range parseBlocks(raw) {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "tool_result":
			parts = append(parts, c.ResultText())
		}
	}
	return strings.Join(parts, "\n")
}
