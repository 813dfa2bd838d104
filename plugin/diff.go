package plugin

// diffEditor is what diff review: openDiff, close_tab, closeAllDiffTabs need from Neovim.
type diffEditor interface{}

// diffs is the component for diff review: openDiff, close_tab, closeAllDiffTabs.
type diffs struct {
	app *App
}

func newDiffs(a *App) *diffs { return &diffs{app: a} }

func (c *diffs) name() string { return "diff" }
