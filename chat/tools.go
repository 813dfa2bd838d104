package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// toolInput is the union of the tool input fields the helpers read.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	ReplaceAll   bool   `json:"replace_all"`
	Content      string `json:"content"`
	Edits        []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
	Command     string `json:"command"`
	Description string `json:"description"`
	Pattern     string `json:"pattern"`
	URL         string `json:"url"`
	Query       string `json:"query"`
	Prompt      string `json:"prompt"`
	Todos       []Todo `json:"todos"`
}

// Todo is one entry of TodoWrite's list.
type Todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

func parseInput(input json.RawMessage) toolInput {
	var in toolInput
	_ = json.Unmarshal(input, &in) // missing fields stay empty
	return in
}

// Todos returns a TodoWrite input's list.
func Todos(input json.RawMessage) []Todo {
	return parseInput(input).Todos
}

// IsEditTool reports whether tool changes files (Edit, Write, MultiEdit,
// NotebookEdit).
func IsEditTool(tool string) bool {
	switch tool {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// EditPath is the file an edit tool's input changes ("" for other tools).
func EditPath(tool string, input json.RawMessage) string {
	if !IsEditTool(tool) {
		return ""
	}
	in := parseInput(input)
	if in.FilePath != "" {
		return in.FilePath
	}
	return in.NotebookPath
}

// ToolSummary is a one-line description of a tool call, e.g.
// "Edit lua/x.lua" or "Bash: make test". A command of several lines names
// its first and last lines and how many it has: its first line alone
// would hide the rest. The text is the model's: make it displayable before
// showing it.
func ToolSummary(tool string, input json.RawMessage) string {
	return toolSummary(tool, input)
}

// CommandSummary is a command on one line: itself (cut) when it has one
// line, else its first and last non-blank lines and its number of lines.
func CommandSummary(cmd string) string {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(cmd, "\r\n", "\n"), "\n"), "\n")
	if len(lines) <= 1 {
		return cut(cmd, 120)
	}
	first, last := "", ""
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			if first == "" {
				first = l
			}
			last = l
		}
	}
	return cut(strings.TrimSpace(first), 60) + " … " + cut(strings.TrimSpace(last), 60) +
		" (" + strconv.Itoa(len(lines)) + " lines)"
}

// cut is s cut to max runes, "…" marking the cut.
func cut(s string, max int) string {
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func toolSummary(tool string, input json.RawMessage) string {
	in := parseInput(input)
	short := func(s string) string { return firstLine(s, 80) }
	switch tool {
	case "Edit", "Write", "MultiEdit", "Read":
		return tool + " " + in.FilePath
	case "NotebookEdit":
		return tool + " " + in.NotebookPath
	case "Bash":
		return "Bash: " + CommandSummary(in.Command)
	case "Grep", "Glob":
		if in.Path != "" {
			return fmt.Sprintf("%s %q in %s", tool, short(in.Pattern), in.Path)
		}
		return fmt.Sprintf("%s %q", tool, short(in.Pattern))
	case "WebFetch":
		return "WebFetch " + in.URL
	case "WebSearch":
		return "WebSearch: " + short(in.Query)
	case "Task", "Agent":
		return tool + ": " + short(in.Description)
	case "TodoWrite":
		return fmt.Sprintf("TodoWrite (%d items)", len(in.Todos))
	}
	return tool
}

// RelSummary is ToolSummary with file paths made relative to cwd when
// they are inside it.
func RelSummary(tool string, input json.RawMessage, cwd string) string {
	s := ToolSummary(tool, input)
	if cwd == "" {
		return s
	}
	prefix := strings.TrimSuffix(cwd, string(filepath.Separator)) + string(filepath.Separator)
	return strings.Replace(s, prefix, "", 1)
}

// ErrNoMatch is returned by [ProposedText] when an edit does not apply.
var ErrNoMatch = errors.New("the edit does not apply to the current file")

// ProposedText is the text the file will hold if the Edit, Write or
// MultiEdit input is applied to current (the file's text now; "" for a new
// file). It fails with ErrNoMatch (wrapped) when an old_string is missing or
// not unique, as the CLI would.
func ProposedText(tool string, input json.RawMessage, current string) (string, error) {
	in := parseInput(input)
	switch tool {
	case "Write":
		return in.Content, nil
	case "Edit":
		return applyEdit(current, in.OldString, in.NewString, in.ReplaceAll)
	case "MultiEdit":
		if len(in.Edits) == 0 {
			return "", fmt.Errorf("MultiEdit without edits: %w", ErrNoMatch)
		}
		text := current
		for i, e := range in.Edits {
			var err error
			if text, err = applyEdit(text, e.OldString, e.NewString, e.ReplaceAll); err != nil {
				return "", fmt.Errorf("edit %d: %w", i+1, err)
			}
		}
		return text, nil
	}
	return "", fmt.Errorf("%s is not a text edit: %w", tool, ErrNoMatch)
}

func applyEdit(text, old, new string, all bool) (string, error) {
	if old == "" {
		if text == "" {
			return new, nil // creates the file
		}
		return "", fmt.Errorf("empty old_string on a non-empty file: %w", ErrNoMatch)
	}
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_string not found: %w", ErrNoMatch)
	case n > 1 && !all:
		return "", fmt.Errorf("old_string found %d times: %w", n, ErrNoMatch)
	case all:
		return strings.ReplaceAll(text, old, new), nil
	}
	return strings.Replace(text, old, new, 1), nil
}

// EditedInput is the input that makes the tool write accepted instead of
// its own proposal: Write gets content; Edit and MultiEdit become one edit
// of the whole current text into accepted.
func EditedInput(tool string, input json.RawMessage, current, accepted string) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s input is not an object: %v", tool, err)
	}
	switch tool {
	case "Write":
		m["content"] = accepted
	case "Edit":
		m["old_string"], m["new_string"], m["replace_all"] = current, accepted, false
	case "MultiEdit":
		m["edits"] = []map[string]any{{"old_string": current, "new_string": accepted, "replace_all": false}}
	default:
		return nil, fmt.Errorf("%s is not a text edit", tool)
	}
	return json.Marshal(m)
}

// ScopeDestination maps an "allow always" scope to the PermissionUpdate
// destination: session, project (localSettings) or user (userSettings).
func ScopeDestination(scope string) (string, error) {
	switch scope {
	case "session":
		return "session", nil
	case "project":
		return "localSettings", nil
	case "user":
		return "userSettings", nil
	}
	return "", fmt.Errorf("unknown scope %q (want once, session, project or user)", scope)
}

// AlwaysAllow returns the updatedPermissions that allow this tool from now
// on at scope. Edit tools get a rule for the tool. Other tools take every
// rule of the CLI's first addRules suggestion that names the tool (a
// compound Bash command has several); Bash without a suggestion gets a
// rule for exactly its command (never a bare "Bash" rule: that would allow
// every command); any other tool a rule for the tool.
func AlwaysAllow(tool string, input, suggestions json.RawMessage, scope string) ([]PermissionUpdate, error) {
	dest, err := ScopeDestination(scope)
	if err != nil {
		return nil, err
	}
	rules := []PermissionRule{{ToolName: tool}}
	if !IsEditTool(tool) {
		var sugg []PermissionUpdate
		_ = json.Unmarshal(suggestions, &sugg)
		found := false
		for _, s := range sugg {
			if s.Type != "addRules" || (s.Behavior != "" && s.Behavior != "allow") || !namesTool(s.Rules, tool) {
				continue
			}
			rules = append([]PermissionRule(nil), s.Rules...)
			found = true
			break
		}
		if !found && tool == "Bash" {
			var in struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(input, &in)
			if strings.TrimSpace(in.Command) == "" {
				return nil, errors.New("allow always: this Bash call has no command to allow")
			}
			rules = []PermissionRule{{ToolName: "Bash", RuleContent: in.Command}}
		}
	}
	return []PermissionUpdate{{Type: "addRules", Rules: rules, Behavior: "allow", Destination: dest}}, nil
}

func namesTool(rules []PermissionRule, tool string) bool {
	for _, r := range rules {
		if r.ToolName == tool {
			return true
		}
	}
	return false
}
