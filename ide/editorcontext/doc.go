// Package editorcontext is the editor-context feature: open editors,
// documents (openFile, saveDocument, checkDocumentDirty, reformat_file …),
// the workspace methods (readFile, writeFile, listFiles, getWorkspaceInfo
// …), the workspace folders Lua reports, and the diagnostics cache behind
// getDiagnostics and diagnostics_changed.
//
// Every path a client names goes through CheckPath (workspace's one rule
// and boundary). It must never know another feature, the IDE server's
// lifecycle or go-client.
package editorcontext
