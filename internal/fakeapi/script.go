package fakeapi

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"
)

// Block is one content block of a scripted assistant answer: a text block
// or a tool_use block. Build blocks with [Text] and [ToolUse].
type Block struct {
	// Type is "text" or "tool_use".
	Type string
	// Text is the text of a text block.
	Text string
	// ID is the tool_use id ("toolu_…") of a tool_use block. The CLI sends
	// it back as tool_use_id in the matching tool_result.
	ID string
	// Name is the tool name of a tool_use block, e.g. "Write".
	Name string
	// Input is the JSON object a tool_use block passes to the tool.
	Input json.RawMessage
}

// Turn is one scripted assistant answer to a main request.
type Turn struct {
	// Blocks are the content blocks of the answer, in order.
	Blocks []Block
	// Delay, when set, is the pause after each streamed event: a slow
	// stream, e.g. for a test that interrupts a turn while it streams.
	// The pause ends early when the client goes away.
	Delay time.Duration
}

// Slow returns t streamed with a pause of d after each event.
func (t Turn) Slow(d time.Duration) Turn {
	t.Delay = d
	return t
}

// Text returns a text block.
func Text(s string) Block {
	return Block{Type: "text", Text: s}
}

// ToolUse returns a tool_use block that calls the tool name with input,
// which must marshal to a JSON object (a struct or a map). The block gets a
// fresh id like "toolu_01…". ToolUse panics if input does not marshal to an
// object: that is a mistake in the test's script.
func ToolUse(name string, input any) Block {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("fakeapi.ToolUse(%q): input does not marshal: %v", name, err))
	}
	if len(raw) == 0 || raw[0] != '{' {
		panic(fmt.Sprintf("fakeapi.ToolUse(%q): input must be a JSON object, got %s", name, raw))
	}
	return Block{Type: "tool_use", ID: newID("toolu_01"), Name: name, Input: raw}
}

// Reply returns a Turn made of blocks.
func Reply(blocks ...Block) Turn {
	return Turn{Blocks: blocks}
}

// StopReason is the stop_reason of the turn's answer: "tool_use" when the
// turn has a tool_use block, else "end_turn".
func (t Turn) StopReason() string {
	for _, b := range t.Blocks {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// idAlphabet is the base58 alphabet the real API's ids appear to use.
const idAlphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// newID returns prefix followed by 22 random base58 characters.
func newID(prefix string) string {
	var raw [22]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("fakeapi: crypto/rand failed: " + err.Error())
	}
	out := []byte(prefix)
	for _, b := range raw {
		out = append(out, idAlphabet[int(b)%len(idAlphabet)])
	}
	return string(out)
}
