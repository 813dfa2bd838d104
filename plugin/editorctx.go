package plugin

// contextEditor is what diagnostics, the editor tools (openFile,
// getOpenEditors …) and the workspace methods need from Neovim.
type contextEditor interface{}

// editorContext is the component for diagnostics, the editor tools and the
// workspace methods.
type editorContext struct {
	app *App
}

func newContext(a *App) *editorContext { return &editorContext{app: a} }

func (c *editorContext) name() string { return "context" }
