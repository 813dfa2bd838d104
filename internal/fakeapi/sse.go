package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// answer is one complete assistant message, ready to be sent as a stream of
// server-sent events or as one JSON object.
type answer struct {
	id           string
	model        string
	blocks       []Block
	stopReason   string
	inputTokens  int
	outputTokens int
	delay        time.Duration // pause after each streamed event
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type message struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        usage             `json:"usage"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type messageStart struct {
	Type    string  `json:"type"`
	Message message `json:"message"`
}

type ping struct {
	Type string `json:"type"`
}

type blockStart struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
}

type textDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type jsonDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// event is one server-sent event: its type and its data, which marshals to
// a JSON object whose "type" is the same.
type event struct {
	typ  string
	data any
}

// pieces is how many deltas a text or a tool input is cut into at most.
const pieces = 3

// mustJSON marshals values built from this package's own types, which
// cannot fail.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("fakeapi: marshal: " + err.Error())
	}
	return raw
}

// events returns the stream the real API sends for the answer: message_start
// (empty content), ping, then per block content_block_start, its deltas and
// content_block_stop, then message_delta (stop_reason, usage) and
// message_stop.
func (a answer) events() []event {
	start := message{
		ID: a.id, Type: "message", Role: "assistant", Model: a.model,
		Content: []json.RawMessage{},
		Usage:   usage{InputTokens: a.inputTokens, OutputTokens: 1},
	}
	evs := []event{
		{"message_start", messageStart{Type: "message_start", Message: start}},
		{"ping", ping{Type: "ping"}},
	}
	for i, b := range a.blocks {
		switch b.Type {
		case "tool_use":
			cb := toolUseBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage("{}")}
			evs = append(evs, event{"content_block_start", blockStart{Type: "content_block_start", Index: i, ContentBlock: mustJSON(cb)}})
			for _, p := range split(string(b.input()), pieces) {
				evs = append(evs, event{"content_block_delta", blockDelta{Type: "content_block_delta", Index: i, Delta: jsonDelta{Type: "input_json_delta", PartialJSON: p}}})
			}
		default:
			cb := textBlock{Type: "text", Text: ""}
			evs = append(evs, event{"content_block_start", blockStart{Type: "content_block_start", Index: i, ContentBlock: mustJSON(cb)}})
			for _, p := range split(b.Text, pieces) {
				evs = append(evs, event{"content_block_delta", blockDelta{Type: "content_block_delta", Index: i, Delta: textDelta{Type: "text_delta", Text: p}}})
			}
		}
		evs = append(evs, event{"content_block_stop", blockStop{Type: "content_block_stop", Index: i}})
	}
	md := messageDelta{Type: "message_delta"}
	md.Delta.StopReason = a.stopReason
	md.Usage.OutputTokens = a.outputTokens
	evs = append(evs, event{"message_delta", md}, event{"message_stop", ping{Type: "message_stop"}})
	return evs
}

// writeEvent writes one event as "event: <type>\ndata: <json>\n\n".
func writeEvent(w io.Writer, e event) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.typ, mustJSON(e.data))
	return err
}

// message returns the answer as the JSON object of a non-streaming response.
func (a answer) message() message {
	m := message{
		ID: a.id, Type: "message", Role: "assistant", Model: a.model,
		Content:    []json.RawMessage{},
		StopReason: &a.stopReason,
		Usage:      usage{InputTokens: a.inputTokens, OutputTokens: a.outputTokens},
	}
	for _, b := range a.blocks {
		if b.Type == "tool_use" {
			m.Content = append(m.Content, mustJSON(toolUseBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: b.input()}))
		} else {
			m.Content = append(m.Content, mustJSON(textBlock{Type: "text", Text: b.Text}))
		}
	}
	return m
}

// input returns the block's tool input, "{}" when it has none.
func (b Block) input() json.RawMessage {
	if len(b.Input) == 0 {
		return json.RawMessage("{}")
	}
	return b.Input
}

// split cuts s into at most n pieces of about equal length, at rune
// boundaries. An empty s gives no pieces.
func split(s string, n int) []string {
	var out []string
	for n > 0 && s != "" {
		size := (len(s) + n - 1) / n
		for size > 0 && size < len(s) && !utf8.RuneStart(s[size]) {
			size-- // back to the start of the rune
		}
		if size == 0 {
			_, size = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:size])
		s = s[size:]
		n--
	}
	return out
}

// estimateTokens is a plausible token count for n bytes of text.
func estimateTokens(n int) int {
	return n/4 + 1
}
