package plugin

// selectionEditor is what the selection tracker (selection_changed), mentions (at_mentioned) and the selection tools need from Neovim.
type selectionEditor interface{}

// selection is the component for the selection tracker (selection_changed), mentions (at_mentioned) and the selection tools.
type selection struct {
	app *App
}

func newSelection(a *App) *selection { return &selection{app: a} }

func (c *selection) name() string { return "selection" }
