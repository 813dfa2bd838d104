package sessions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plan the CLI wrote is read through the workspace's confined reader:
// a regular *.md file in a plans directory, cut at the plan cap; a symlink
// in its place, a file elsewhere or of another kind is no plan.
func TestDigestReadsThePlanFile(t *testing.T) {
	dir := t.TempDir()
	plans := filepath.Join(dir, "plans")
	if err := os.Mkdir(plans, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.md")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, "not a plan")
	write(filepath.Join(plans, "good.md"), "# Plan\n1. do it\n")
	write(filepath.Join(plans, "big.md"), strings.Repeat("x", MaxPlan+100))
	write(filepath.Join(plans, "notes.txt"), "text")
	write(filepath.Join(dir, "other.md"), "elsewhere")
	if err := os.Symlink(secret, filepath.Join(plans, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(plans, "dir.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, plan string
		cut              bool
	}{
		{"a plan file", filepath.Join(plans, "good.md"), "# Plan\n1. do it\n", false},
		{"a large plan is cut", filepath.Join(plans, "big.md"), strings.Repeat("x", MaxPlan), true},
		{"a symlink to a file outside", filepath.Join(plans, "link.md"), "", false},
		{"a directory", filepath.Join(plans, "dir.md"), "", false},
		{"not markdown", filepath.Join(plans, "notes.txt"), "", false},
		{"not in a plans directory", filepath.Join(dir, "other.md"), "", false},
		{"dot-dot out of plans", filepath.Join(plans, "..", "secret.md"), "", false},
		{"relative", "plans/good.md", "", false},
		{"missing", filepath.Join(plans, "gone.md"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(map[string]any{
				"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Write",
				"tool_input": map[string]any{"file_path": tc.path, "content": "whatever"},
			})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := Digest("PostToolUse", "s1", body)
			if c.Plan != tc.plan || (c.PlanCut != "") != tc.cut {
				t.Errorf("plan %.40q (cut %q), want %.40q (cut %v)", c.Plan, c.PlanCut, tc.plan, tc.cut)
			}
		})
	}
}
