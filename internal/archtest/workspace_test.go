package archtest

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// mutating names a method that changes shared state.
var mutating = regexp.MustCompile(`^(Set[A-Z]|Update|Add[A-Z]|Remove[A-Z]|Clear|Reset|Replace)`)

// TestFeaturesSeeAReadOnlyWorkspace: what host.Host hands every feature as
// its workspace offers no method that changes the folders, the cwd, the
// lock or the boundary's settings — through any interface it returns.
func TestFeaturesSeeAReadOnlyWorkspace(t *testing.T) {
	m, ok := reflect.TypeOf((*host.Host)(nil)).Elem().MethodByName("Workspace")
	if !ok {
		t.Fatal("host.Host has no Workspace method")
	}
	if bad := mutators(m.Type.Out(0), map[reflect.Type]bool{}); len(bad) != 0 {
		t.Errorf("host.Host.Workspace() reaches methods that change shared state: %v", bad)
	}
	// The check itself: the concrete workspace has them.
	if bad := mutators(reflect.TypeOf((*workspace.Workspace)(nil)), map[reflect.Type]bool{}); len(bad) == 0 {
		t.Error("the check finds nothing mutating on *workspace.Workspace: it cannot fail")
	}
}

// mutators lists the mutating methods reachable from t's methods and the
// interfaces and pointers they return.
func mutators(t reflect.Type, seen map[reflect.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	var bad []string
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		if mutating.MatchString(m.Name) {
			bad = append(bad, t.String()+"."+m.Name)
		}
		ft := m.Type
		for j := 0; j < ft.NumOut(); j++ {
			if o := ft.Out(j); o.Kind() == reflect.Interface || (o.Kind() == reflect.Pointer && o.Elem().Kind() == reflect.Struct) {
				bad = append(bad, mutators(o, seen)...)
			}
		}
	}
	return bad
}

// TestFeaturesDoNotReachTheConcreteWorkspace: no feature names the concrete
// workspace or its boundary (a type assertion would undo the read-only
// view); the one feature that reports folders gets its port from app.
func TestFeaturesDoNotReachTheConcreteWorkspace(t *testing.T) {
	forbidden := regexp.MustCompile(`\*?workspace\.Workspace\b|workspace\.New(Boundary)?\(|\.Boundary\(\)`)
	for _, f := range Features {
		files, err := filepath.Glob(filepath.Join("..", "..", f, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("feature %s: no Go files (%v)", f, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if forbidden.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					t.Errorf("%s:%d: a feature reaches the concrete workspace: %s", file, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}
