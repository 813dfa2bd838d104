// Package toolargs generates tool arguments from the input schemas a
// server lists in tools/list: valid arguments, and hostile ones (missing,
// wrong-typed, extra, absurd values). The reliability tests and the soak
// use it so that they cover whatever tools exist, not a list that goes
// stale.
package toolargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name        string `json:"name"`
	InputSchema Schema `json:"inputSchema"`
}

// Schema is the part of a JSON Schema object that tools use.
type Schema struct {
	Type                 string              `json:"type"`
	Properties           map[string]Property `json:"properties"`
	Required             []string            `json:"required"`
	AdditionalProperties *bool               `json:"additionalProperties"`
}

// Property is one property of a Schema.
type Property struct {
	Type  string    `json:"type"`
	Items *Property `json:"items"`
}

// Fixture names the real things that valid arguments point at.
type Fixture struct {
	// File is the absolute path of an existing file in the workspace.
	File string
	// Outside is the absolute path of an existing file outside the
	// workspace: hostile path arguments aim at it, and the tests check it
	// is never written.
	Outside string
	// Workspace is the workspace root.
	Workspace string
	// Marker is a path that must never come to exist: injection payloads
	// (backticks, "|", $(…), Lua and Vimscript quotes) try to create it.
	Marker string
}

// Kind says what a Case attacks and so what answer it must get.
type Kind int

const (
	// Missing leaves out a required property: the answer must be an
	// error naming it.
	Missing Kind = iota
	// WrongType gives a property a value of another JSON type: the
	// answer must be an error naming it.
	WrongType
	// Null gives an optional property null, which JSON decoders read as
	// absent: any answer but an internal error.
	Null
	// Extra adds an unknown property to valid arguments: the answer must
	// be what the valid arguments get, or, where the schema forbids
	// additional properties, an error naming it.
	Extra
	// Hostile gives a property a value of the right type that is absurd
	// (empty, huge, NUL bytes, traversal, another scheme …): any answer
	// but an internal error, in bounded time, touching nothing outside
	// the workspace.
	Hostile
)

func (k Kind) String() string {
	return [...]string{"missing", "wrong type", "null", "extra", "hostile"}[k]
}

// Case is one set of arguments for a tool.
type Case struct {
	Name string
	Kind Kind
	Prop string // the property the case is about
	Args json.RawMessage
}

// loneSurrogate stands for the JSON string "\ud800", which json.Marshal
// cannot produce; Cases swaps it in after encoding.
const loneSurrogate = "LONE-SURROGATE"

// ExtraProp is the name of the property Extra cases add.
const ExtraProp = "zz_unknown_argument"

// Names returns the properties of s in a stable order.
func (s Schema) Names() []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s Schema) required(name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// Valid returns arguments that satisfy t's schema and point at fx.File.
// Optional properties are left out unless they are paths (a path-taking
// tool without one does little worth testing).
func Valid(t Tool, fx Fixture) map[string]any {
	args := map[string]any{}
	for _, name := range t.InputSchema.Names() {
		p := t.InputSchema.Properties[name]
		if !t.InputSchema.required(name) && !isPathName(name) {
			continue
		}
		args[name] = validValue(t.Name, name, p, fx)
	}
	return args
}

// isProgram reports whether a property is code to run (executeCode's
// code): running what it is given is the tool's purpose, so injection
// payloads prove nothing there.
func isProgram(name string) bool { return strings.EqualFold(name, "code") }

func isPathName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "path") || l == "uri"
}

func validValue(tool, name string, p Property, fx Fixture) any {
	l := strings.ToLower(name)
	switch p.Type {
	case "boolean":
		return false
	case "number", "integer":
		return 0
	case "object":
		return map[string]any{}
	case "array":
		if p.Items != nil && p.Items.Type == "string" && isPathName(name) {
			return []string{fx.File}
		}
		return []any{}
	}
	switch {
	case l == "uri":
		return "file://" + fx.File
	case strings.Contains(l, "path"):
		return fx.File
	case strings.Contains(l, "tab"):
		return "✻ [Claude Code] " + tool + " (reliability) ⧉"
	case strings.Contains(l, "contents") || strings.Contains(l, "content"):
		return "proposed\ncontents\n"
	case strings.Contains(l, "text"):
		return "alpha"
	}
	return "x"
}

// wrongValues are values of every JSON type but want's.
func wrongValues(want string) map[string]any {
	all := map[string]any{
		"string":  "1",
		"number":  42,
		"boolean": true,
		"object":  map[string]any{"a": 1},
		"array":   []any{"x"},
	}
	if want == "integer" {
		want = "number"
	}
	delete(all, want)
	if want == "boolean" {
		all["string"] = "true" // the spelling a careless client sends
	}
	return all
}

// hostileStrings are absurd values of the right type for a string
// property, by the kind of property.
func hostileStrings(name string, fx Fixture) map[string]string {
	l := strings.ToLower(name)
	v := map[string]string{
		"empty":           "",
		"NUL":             "a\x00b",
		"1 MiB":           strings.Repeat("a", 1<<20),
		"control bytes":   "\x1b[31m\r\n\t\x7f",
		"lone surrogate":  loneSurrogate,
		"format verbs":    "%s%n%x%!",
		"lua pattern":     "%(.-)[^%w]*$",
		"newline in name": "a\nb.txt",
		// Injection: each would create fx.Marker if a tool passed the value
		// to an Ex command, a shell or a Lua chunk unescaped.
		"backtick expansion":  "`touch " + fx.Marker + "`",
		"bar command":         "x | call writefile([], '" + fx.Marker + "')",
		"shell substitution":  "$(touch " + fx.Marker + ")",
		"lua injection":       "'); vim.fn.writefile({}, '" + fx.Marker + "') --",
		"vimscript injection": "\" | call writefile([], '" + fx.Marker + "') | \"",
		"keycodes":            "<CR>:call writefile([], '" + fx.Marker + "')<CR>",
	}
	if isPathName(name) || strings.Contains(l, "file") {
		rel := "../" + strings.Repeat("../", strings.Count(fx.Workspace, "/")) + strings.TrimPrefix(fx.Outside, "/")
		v["traversal to outside"] = rel
		v["outside, absolute"] = fx.Outside
		v["outside, file URI"] = "file://" + fx.Outside
		v["other scheme"] = "untitled:Untitled-1"
		v["remote file URI"] = "file://evil.example/etc/passwd"
		v["directory"] = fx.Workspace
		v["missing file"] = fx.Workspace + "/no/such/file.txt"
		v["home tilde"] = "~/.bashrc"
		v["environment variable"] = "$HOME/.bashrc"
		v["4 KiB name"] = fx.Workspace + "/" + strings.Repeat("n", 4096)
	}
	return v
}

// Cases returns the hostile argument sets for t.
func Cases(t Tool, fx Fixture) []Case {
	var out []Case
	add := func(name string, kind Kind, prop string, args map[string]any) {
		b, err := json.Marshal(args)
		if err != nil {
			panic(fmt.Sprintf("toolargs: %v", err)) // only JSON-able values are built here
		}
		b = bytes.ReplaceAll(b, []byte(`"`+loneSurrogate+`"`), []byte(`"\ud800"`))
		out = append(out, Case{Name: name, Kind: kind, Prop: prop, Args: b})
	}
	valid := Valid(t, fx)
	with := func(name string, v any) map[string]any {
		args := map[string]any{}
		for k, x := range valid {
			args[k] = x
		}
		args[name] = v
		return args
	}
	s := t.InputSchema
	for _, name := range s.Names() {
		p := s.Properties[name]
		if s.required(name) {
			args := with(name, nil)
			delete(args, name)
			add("missing "+name, Missing, name, args)
		} else {
			add(name+" null", Null, name, with(name, nil))
		}
		wrong := wrongValues(p.Type)
		if p.Type == "" {
			wrong = nil // an untyped property takes anything
		}
		kinds := make([]string, 0, len(wrong))
		for k := range wrong {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			add(fmt.Sprintf("%s as %s", name, k), WrongType, name, with(name, wrong[k]))
		}
		if p.Type == "array" && p.Items != nil && p.Items.Type != "" {
			for _, k := range []string{"number", "object", "array"} {
				if v, ok := wrongValues(p.Items.Type)[k]; ok {
					add(fmt.Sprintf("%s item as %s", name, k), WrongType, name, with(name, []any{v}))
				}
			}
		}
		if (p.Type == "string" || p.Type == "") && !isProgram(name) {
			hs := hostileStrings(name, fx)
			keys := make([]string, 0, len(hs))
			for k := range hs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				add(fmt.Sprintf("%s %s", name, k), Hostile, name, with(name, hs[k]))
			}
		}
		if p.Type == "array" && isPathName(name) {
			add(name+" of 10k entries", Hostile, name, with(name, repeatString(fx.File, 10_000)))
			add(name+" outside", Hostile, name, with(name, []string{fx.Outside}))
		}
	}
	add("extra property", Extra, ExtraProp, with(ExtraProp, map[string]any{"nested": []any{1, "two", nil}}))
	return out
}

func repeatString(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
