package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// toolArgs is a ToolRequest's arguments split into members, once.
type toolArgs struct {
	once   sync.Once
	fields map[string]json.RawMessage
	err    error
}

func (a *toolArgs) get(raw json.RawMessage, validated bool) (map[string]json.RawMessage, error) {
	a.once.Do(func() {
		split := splitObject
		if validated {
			split = splitValidObject
		}
		members, err := split(raw)
		if err != nil {
			a.err = fmt.Errorf("invalid arguments: %w", err)
			return
		}
		a.fields = make(map[string]json.RawMessage, len(members))
		for _, m := range members {
			a.fields[m.key] = m.val
		}
	})
	return a.fields, a.err
}

// Arg returns the raw JSON value of the argument name, or nil when the
// arguments do not have it. Unlike decoding Arguments with encoding/json,
// which reads the whole object (twice) for every call, the arguments are
// split once per request with a scan that only looks for the ends of
// strings, so a tool whose arguments carry a whole file reads them once.
// Names match exactly; of a repeated name the last value counts.
func (r *ToolRequest) Arg(name string) (json.RawMessage, error) {
	fields, err := r.args.get(r.Arguments, r.validated)
	if err != nil {
		return nil, err
	}
	return fields[name], nil
}

// StringArg decodes the string argument name. ok is false when it is
// absent or null; a value of another type is an error that names it.
func (r *ToolRequest) StringArg(name string) (s string, ok bool, err error) {
	raw, err := r.Arg(name)
	if err != nil {
		return "", false, err
	}
	switch firstByte(raw) {
	case 0, 'n':
		return "", false, nil
	case '"':
		return unquote(raw), true, nil
	}
	return "", false, fmt.Errorf("invalid arguments: %s must be a string", name)
}

// DecodeArgs decodes tool arguments; a mismatch is an error the model can
// act on ("invalid arguments: line must be a number").
func DecodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("invalid arguments: %s must be %s", te.Field, JSONKind(te.Type.Kind().String()))
		}
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// JSONKind names a Go kind the way a JSON schema would, with an article.
func JSONKind(k string) string {
	switch k {
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int", "int64", "float64":
		return "a number"
	}
	return "a " + k
}
