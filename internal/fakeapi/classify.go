package fakeapi

import (
	"encoding/json"
	"slices"
	"strings"
)

// forkMarkers are phrases that open the instructions of the CLI's forked
// side requests (2.1.330): conversation compaction, prompt suggestions and
// /btw side questions. A fork re-sends the main conversation with the full
// tool set and appends its instructions to the last user message.
func forkMarkers() []string {
	return []string{
		"CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",
		"[SUGGESTION MODE:",
		"This is a side question from the user.",
	}
}

// isMain reports whether a POST /v1/messages request is a main turn
// request: its tools include Edit or Write and it is not a fork.
func isMain(b body) bool {
	var tools []string
	for _, t := range b.Tools {
		tools = append(tools, t.Name)
	}
	if !slices.Contains(tools, "Edit") && !slices.Contains(tools, "Write") {
		return false
	}
	return !isFork(b)
}

// isFork reports whether a request that carries the main tool set is one of
// the CLI's forked side requests. Two signs, either suffices:
//
//   - the last message holds a known fork instruction (see forkMarkers);
//   - prompt-cache markers: a main request puts a cache_control marker on
//     its last message, while a fork (which the CLI sends with
//     skipCacheWrite) leaves the marker on the shared prefix and none on
//     its own appended message.
func isFork(b body) bool {
	if len(b.Messages) == 0 {
		return false
	}
	last := b.Messages[len(b.Messages)-1]
	text := lastText(last)
	for _, m := range forkMarkers() {
		if strings.Contains(text, m) {
			return true
		}
	}
	if hasCacheMarker(last) {
		return false
	}
	for _, m := range b.Messages[:len(b.Messages)-1] {
		if hasCacheMarker(m) {
			return true
		}
	}
	return false
}

// lastText returns the text blocks of one raw message, joined by newlines.
func lastText(raw json.RawMessage) string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var parts []string
	for _, c := range parseBlocks(m.Content) {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// hasCacheMarker reports whether one raw message, or one of its content
// blocks, carries a cache_control marker.
func hasCacheMarker(raw json.RawMessage) bool {
	var m struct {
		CacheControl json.RawMessage `json:"cache_control"`
		Content      json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	if marked(m.CacheControl) {
		return true
	}
	var blocks []struct {
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(m.Content, &blocks) != nil {
		return false
	}
	for _, bl := range blocks {
		if marked(bl.CacheControl) {
			return true
		}
	}
	return false
}

// sideAnswer returns the text that answers a side request: a JSON value
// that fits the schema when the request asks for structured output (the
// session title does), an <analysis>/<summary> pair when it asks for a
// summary in those tags (compaction does), else [SideText].
func sideAnswer(b body) string {
	format := b.OutputConfig.Format
	if format == nil {
		format = b.OutputFormat
	}
	if format != nil && format.Type == "json_schema" {
		var schema map[string]any
		_ = json.Unmarshal(format.Schema, &schema) // no schema: any value fits
		return string(mustJSON(instance(schema)))
	}
	if len(b.Messages) > 0 && strings.Contains(lastText(b.Messages[len(b.Messages)-1]), "<summary>") {
		return "<analysis>\n" + SideText + "\n</analysis>\n\n<summary>\n" + SideText + "\n</summary>"
	}
	return SideText
}

// instance returns a small value that satisfies a JSON schema: objects get
// their required properties (all of them when none are listed), strings
// are [SideText], an enum gives its first value.
func instance(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	typ, _ := schema["type"].(string)
	if list, ok := schema["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		var names []string
		if req, ok := schema["required"].([]any); ok {
			for _, n := range req {
				if s, ok := n.(string); ok {
					names = append(names, s)
				}
			}
		} else {
			for n := range props {
				names = append(names, n)
			}
		}
		out := map[string]any{}
		for _, n := range names {
			sub, _ := props[n].(map[string]any)
			out[n] = instance(sub)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	default:
		return SideText
	}
}

// marked reports whether a raw cache_control value is set.
func marked(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
